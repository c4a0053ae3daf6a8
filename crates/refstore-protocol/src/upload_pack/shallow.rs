//! Shallow clones and fetches: the client's `shallow <id>` lines (the
//! commits whose parents it lacks) and what it asks for (`deepen <n>`,
//! `deepen-since <time>`, `deepen-not <ref>`, `deepen-relative`), turned
//! into the new boundary of its history.
//!
//! The answer is a [`ShallowPlan`]: the commits that become shallow on the
//! client (`shallow` lines), the client's shallow commits that gain their
//! parents (`unshallow` lines), and how the pack walk must change. The walk
//! sees every commit at the boundary, old or new, as having no parents
//! ([`Graph::graft_shallow`]), so it neither sends history past the new
//! boundary nor believes the client has the parents of its shallow
//! commits. A commit that gains its parents is still a commit the client
//! has; its parents become wanted, as git does.
//!
//! Depths follow git 2.39: `deepen <n>` makes the commits `n` generations
//! down from the wants (the wants being the first) the boundary; with
//! `deepen-relative`, `n` generations below the client's shallow commits.
//! `deepen 2147483647` (`--unshallow`) gives every shallow commit its
//! history. `deepen-since` and `deepen-not` keep the commits a
//! `rev-list --max-age=<time> --not <refs> <wants>` would list, and the
//! boundary is those of them with a parent outside.

use super::graph::Graph;
use super::refs::{Head, RefSnapshot};
use super::request::parse_id;
use super::UploadPackError;
use crate::pkt_line::PacketWriter;
use refstore_refs::{ObjectFormat, ObjectId};
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::io::Write;

/// The depth `git fetch --unshallow` asks for: all of the history.
const INFINITE_DEPTH: u32 = 0x7fff_ffff;

/// The shallow part of a fetch request.
#[derive(Debug, Clone, Default)]
pub(crate) struct ShallowRequest {
    /// The client's shallow commits, as it named them.
    pub client_shallows: Vec<ObjectId>,
    /// `deepen <n>`.
    pub depth: Option<u32>,
    /// `deepen-since <time>`.
    pub since: Option<i64>,
    /// `deepen-not <ref>`: the names, resolved against the refs later.
    pub not: Vec<Vec<u8>>,
    /// `deepen-relative`.
    pub relative: bool,
}

impl ShallowRequest {
    /// Takes `line` if it is a shallow request line; false if it is not.
    pub fn parse_line(
        &mut self,
        line: &[u8],
        format: ObjectFormat,
    ) -> Result<bool, UploadPackError> {
        let invalid = |what: &str| {
            UploadPackError::request(format!(
                "upload-pack: invalid {what}: '{}'",
                String::from_utf8_lossy(line)
            ))
        };
        if let Some(rest) = line.strip_prefix(b"shallow ") {
            let (id, tail) = parse_id(line, rest, format)?;
            if !tail.is_empty() {
                return Err(invalid("shallow line"));
            }
            self.client_shallows.push(id);
        } else if let Some(rest) = line.strip_prefix(b"deepen ") {
            let depth = std::str::from_utf8(rest)
                .ok()
                .and_then(|s| s.parse::<u32>().ok())
                .filter(|&d| d > 0 && d <= INFINITE_DEPTH)
                .ok_or_else(|| invalid("deepen"))?;
            self.depth = Some(depth);
        } else if let Some(rest) = line.strip_prefix(b"deepen-since ") {
            let since = std::str::from_utf8(rest)
                .ok()
                .and_then(|s| s.parse::<i64>().ok())
                .filter(|&t| t >= 0)
                .ok_or_else(|| invalid("deepen-since"))?;
            self.since = Some(since);
        } else if let Some(rest) = line.strip_prefix(b"deepen-not ") {
            if rest.is_empty() {
                return Err(invalid("deepen-not"));
            }
            self.not.push(rest.to_vec());
        } else if line == b"deepen-relative" {
            self.relative = true;
        } else {
            return Ok(false);
        }
        Ok(true)
    }

    /// True if the request holds a `deepen-since` or `deepen-not`.
    fn by_rev_list(&self) -> bool {
        self.since.is_some() || !self.not.is_empty()
    }

    /// True if the request moves the boundary (`deepen`, `deepen-since`
    /// or `deepen-not`).
    pub fn deepens(&self) -> bool {
        self.depth.is_some() || self.by_rev_list()
    }
}

/// What a shallow request changes.
#[derive(Debug, Default)]
pub(crate) struct ShallowPlan {
    /// Whether the client asked to change the boundary (it then reads
    /// `shallow`/`unshallow` lines, in v0 ended by a flush-pkt).
    pub deepens: bool,
    /// New shallow commits of the client, for `shallow` lines.
    pub shallow: Vec<ObjectId>,
    /// Client shallow commits that gain their parents (`unshallow` lines).
    pub unshallow: Vec<ObjectId>,
    /// Wanted besides the client's wants: the parents of `unshallow`.
    pub extra_wants: Vec<ObjectId>,
    /// Commits the client has besides the common ones: `unshallow`.
    pub extra_haves: Vec<ObjectId>,
    /// Commits the pack walk sees without parents.
    pub grafts: Vec<ObjectId>,
}

impl ShallowPlan {
    /// Writes the `shallow` and `unshallow` lines. They end without a
    /// newline, as git's do: a client may compare the packet's whole
    /// payload (libgit2 does, and refuses `shallow <id>` and LF).
    pub fn write_lines<W: Write>(&self, out: &mut PacketWriter<W>) -> Result<(), UploadPackError> {
        for id in &self.shallow {
            write!(out, "shallow {id}")?;
        }
        for id in &self.unshallow {
            write!(out, "unshallow {id}")?;
        }
        Ok(())
    }
}

/// Works out the new boundary for `request` when the client wants
/// `wants`; `None` when the request has nothing shallow in it. The
/// commits of the boundary are grafted in `graph` (it must not have read
/// commits with grafts before: the depths follow the real parents).
pub(crate) fn plan(
    graph: &mut Graph,
    snapshot: &RefSnapshot,
    wants: &[ObjectId],
    request: &ShallowRequest,
) -> Result<Option<ShallowPlan>, UploadPackError> {
    // Shallow commits the server does not have are no boundary of its
    // history: they are ignored, as git does.
    let mut client_shallows = Vec::new();
    let mut seen = HashSet::new();
    for id in &request.client_shallows {
        match graph.kind(id)? {
            None => {}
            Some(gix_object::Kind::Commit) if seen.insert(*id) => client_shallows.push(*id),
            Some(gix_object::Kind::Commit) => {}
            Some(_) => {
                return Err(UploadPackError::request(format!(
                    "upload-pack: invalid shallow object {id}: not a commit"
                )))
            }
        }
    }
    if request.depth.is_none() && !request.by_rev_list() && client_shallows.is_empty() {
        return Ok(None);
    }
    if request.depth.is_some() && request.by_rev_list() {
        return Err(UploadPackError::request(
            "upload-pack: deepen and deepen-since (or deepen-not) cannot be used together",
        ));
    }

    let mut plan = ShallowPlan::default();
    // At depth 1 every wanted commit is a boundary commit, and git names
    // it once for each distinct want that peels to it (a tag and its
    // commit, two tags of one commit): so does refstore.
    let mut boundary_per_want = None;
    // The new boundary and the commits above it.
    let (boundary, not_shallow): (HashSet<ObjectId>, HashSet<ObjectId>) = match request.depth {
        Some(INFINITE_DEPTH) => (HashSet::new(), client_shallows.iter().copied().collect()),
        Some(depth) if request.relative => by_depth(graph, &client_shallows, depth + 1)?,
        Some(depth) => {
            let mut distinct = HashSet::new();
            let wants: Vec<ObjectId> = wants
                .iter()
                .filter(|w| distinct.insert(**w))
                .copied()
                .collect();
            let heads = peeled_commits(graph, &wants)?;
            if depth == 1 {
                boundary_per_want = Some(heads.clone());
            }
            by_depth(graph, &heads, depth)?
        }
        None if request.by_rev_list() => {
            let not = resolve_not(graph, snapshot, &request.not)?;
            let heads = peeled_commits(graph, wants)?;
            by_rev_list(graph, &heads, request.since, &not)?
        }
        None => (HashSet::new(), HashSet::new()),
    };
    plan.deepens = request.depth.is_some() || request.by_rev_list();

    let mut shallow: Vec<ObjectId> = boundary_per_want
        .unwrap_or_else(|| boundary.into_iter().collect())
        .into_iter()
        .filter(|id| !seen.contains(id))
        .collect();
    shallow.sort();
    for id in &client_shallows {
        if not_shallow.contains(id) {
            let commit = graph
                .commit(id)?
                .ok_or_else(|| UploadPackError::Objects(format!("missing commit {id}")))?;
            plan.extra_wants.extend(commit.parents.iter().copied());
            plan.extra_haves.push(*id);
            plan.unshallow.push(*id);
        }
    }
    // A commit that gains its parents is still walked without them: they
    // are wanted, so the client's haves cannot hide them.
    plan.grafts = shallow.iter().chain(&client_shallows).copied().collect();
    plan.shallow = shallow;
    graph.graft_shallow(plan.grafts.iter().copied());
    Ok(Some(plan))
}

/// The commits `ids` peel to (the others are no heads of history).
fn peeled_commits(graph: &mut Graph, ids: &[ObjectId]) -> Result<Vec<ObjectId>, UploadPackError> {
    let mut commits = Vec::new();
    for id in ids {
        if let Some((peeled, gix_object::Kind::Commit)) = graph.peel(id, |_| {})? {
            commits.push(peeled);
        }
    }
    Ok(commits)
}

/// The commits exactly `depth` generations down from `heads` (a head is
/// the first), counted along the shortest path, and the commits above
/// them.
fn by_depth(
    graph: &mut Graph,
    heads: &[ObjectId],
    depth: u32,
) -> Result<(HashSet<ObjectId>, HashSet<ObjectId>), UploadPackError> {
    let mut depths: HashMap<ObjectId, u32> = HashMap::new();
    let mut queue = VecDeque::new();
    for head in heads {
        if depths.insert(*head, 1).is_none() {
            queue.push_back(*head);
        }
    }
    let mut boundary = HashSet::new();
    let mut above = HashSet::new();
    // Breadth first: a commit is first met at its smallest depth.
    while let Some(id) = queue.pop_front() {
        let d = depths[&id];
        if d >= depth {
            boundary.insert(id);
            continue;
        }
        above.insert(id);
        let commit = graph
            .commit(&id)?
            .ok_or_else(|| UploadPackError::Objects(format!("missing commit {id}")))?;
        for parent in &commit.parents {
            if !depths.contains_key(parent) {
                depths.insert(*parent, d + 1);
                queue.push_back(*parent);
            }
        }
    }
    Ok((boundary, above))
}

/// The commits named by `deepen-not` lines, peeled; a name must match
/// exactly one ref the way `git rev-parse` expands short names.
fn resolve_not(
    graph: &mut Graph,
    snapshot: &RefSnapshot,
    names: &[Vec<u8>],
) -> Result<Vec<ObjectId>, UploadPackError> {
    let mut commits = Vec::new();
    for name in names {
        let candidates: Vec<Vec<u8>> = [
            &b""[..],
            b"refs/",
            b"refs/tags/",
            b"refs/heads/",
            b"refs/remotes/",
        ]
        .iter()
        .map(|prefix| [*prefix, name.as_slice()].concat())
        .chain(std::iter::once(
            [b"refs/remotes/", name.as_slice(), b"/HEAD"].concat(),
        ))
        .collect();
        let mut found = Vec::new();
        for candidate in &candidates {
            let id = if candidate == b"HEAD" {
                match &snapshot.head {
                    Head::Present(head) => Some(head.id),
                    _ => None,
                }
            } else {
                snapshot
                    .refs
                    .binary_search_by(|r| r.name.as_bytes().cmp(candidate))
                    .ok()
                    .map(|at| snapshot.refs[at].id)
            };
            if let Some(id) = id {
                found.push(id);
            }
        }
        let shown = String::from_utf8_lossy(name);
        let id = match found.as_slice() {
            [id] => *id,
            [] => {
                return Err(UploadPackError::request(format!(
                    "upload-pack: deepen-not is not a ref: {shown}"
                )))
            }
            _ => {
                return Err(UploadPackError::request(format!(
                    "upload-pack: ambiguous deepen-not: {shown}"
                )))
            }
        };
        commits.extend(peeled_commits(graph, &[id])?);
    }
    Ok(commits)
}

/// The boundary and the commits above it for `deepen-since`/`deepen-not`:
/// the commits reachable from `heads`, newer than `since`, not reachable
/// from `not`. Without `not`, an older commit ends the walk down its
/// path; with it, an older commit hides its ancestors as the commits of
/// `not` do (git's `rev-list` differs the same way with and without
/// negative revisions).
fn by_rev_list(
    graph: &mut Graph,
    heads: &[ObjectId],
    since: Option<i64>,
    not: &[ObjectId],
) -> Result<(HashSet<ObjectId>, HashSet<ObjectId>), UploadPackError> {
    let limited = !not.is_empty();
    let too_old = |time: i64| since.is_some_and(|since| time < since);
    let mut hidden: HashSet<ObjectId> = HashSet::new();
    let mut queued: HashSet<ObjectId> = HashSet::new();
    let mut queue = BinaryHeap::new();
    for id in not {
        hidden.insert(*id);
    }
    for id in not.iter().chain(heads) {
        if queued.insert(*id) {
            queue.push((commit_time(graph, id)?, *id));
        }
    }
    let mut listed = Vec::new();
    // Every commit is popped once. A commit can be popped before a newer
    // (or equally old) commit hides it, so the hiding is completed below.
    while let Some((time, id)) = queue.pop() {
        let mut is_hidden = hidden.contains(&id);
        if !is_hidden && too_old(time) {
            if !limited {
                continue;
            }
            hidden.insert(id);
            is_hidden = true;
        }
        if !is_hidden {
            listed.push(id);
        }
        let commit = graph
            .commit(&id)?
            .ok_or_else(|| UploadPackError::Objects(format!("missing commit {id}")))?;
        for parent in &commit.parents {
            if is_hidden {
                hidden.insert(*parent);
            }
            if queued.insert(*parent) {
                queue.push((commit_time(graph, parent)?, *parent));
            }
        }
    }
    let hidden = with_ancestors(graph, hidden)?;
    let listed: HashSet<ObjectId> = listed
        .into_iter()
        .filter(|id| !hidden.contains(id))
        .collect();
    if listed.is_empty() {
        return Err(UploadPackError::request(
            "upload-pack: no commits selected for shallow requests",
        ));
    }
    let mut boundary = HashSet::new();
    for id in &listed {
        let commit = graph.commit(id)?.expect("listed commits were read");
        if commit.parents.iter().any(|p| !listed.contains(p)) {
            boundary.insert(*id);
        }
    }
    let above = listed.difference(&boundary).copied().collect();
    Ok((boundary, above))
}

/// `commits` and all of their history: what git's `rev-list` marks
/// uninteresting below its uninteresting commits, whatever the order in
/// which their dates had it meet them.
fn with_ancestors(
    graph: &mut Graph,
    commits: HashSet<ObjectId>,
) -> Result<HashSet<ObjectId>, UploadPackError> {
    let mut stack: Vec<ObjectId> = commits.iter().copied().collect();
    let mut closed = commits;
    while let Some(id) = stack.pop() {
        let commit = graph
            .commit(&id)?
            .ok_or_else(|| UploadPackError::Objects(format!("missing commit {id}")))?;
        for parent in &commit.parents {
            if closed.insert(*parent) {
                stack.push(*parent);
            }
        }
    }
    Ok(closed)
}

fn commit_time(graph: &mut Graph, id: &ObjectId) -> Result<i64, UploadPackError> {
    graph
        .commit(id)?
        .map(|commit| commit.time)
        .ok_or_else(|| UploadPackError::Objects(format!("missing commit {id}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn request_lines_are_parsed_and_checked() {
        let mut request = ShallowRequest::default();
        let format = ObjectFormat::Sha1;
        for line in [
            format!("shallow {HEX}"),
            "deepen 3".to_owned(),
            "deepen-since 1700000000".to_owned(),
            "deepen-not main".to_owned(),
            "deepen-relative".to_owned(),
        ] {
            assert!(
                request.parse_line(line.as_bytes(), format).unwrap(),
                "{line}"
            );
        }
        assert_eq!(request.client_shallows.len(), 1);
        assert_eq!(request.depth, Some(3));
        assert_eq!(request.since, Some(1_700_000_000));
        assert_eq!(request.not, vec![b"main".to_vec()]);
        assert!(request.relative);
        assert!(!request.parse_line(b"want x", format).unwrap());
        for bad in [
            "deepen 0",
            "deepen -1",
            "deepen x",
            "deepen-since soon",
            "deepen-not ",
            "shallow 0123",
        ] {
            assert!(request.parse_line(bad.as_bytes(), format).is_err(), "{bad}");
        }
    }
}
