//! The deliberate differences between git's answers and refstore's: the
//! one list of them, each with its reason, and the normalisation that
//! removes exactly that difference and nothing else before the
//! comparison.

use super::server::Invocation;
use super::stream::Item;
use std::collections::{HashMap, HashSet};

/// A difference refstore makes on purpose.
pub struct Difference {
    pub name: &'static str,
    pub why: &'static str,
}

/// Every deliberate difference. Nothing else is normalised.
pub const DIFFERENCES: &[Difference] = &[
    Difference {
        name: "agent",
        why: "each server names itself in `agent=` (git/2.39.5, refstore/<version>): the \
              value is replaced by `*` in both answers, in the v0/v1 capability lists and in \
              the v2 `agent=` line",
    },
    Difference {
        name: "object-info",
        why: "git 2.39 to 2.45 advertise the v2 `object-info` command; refstore does not \
              implement it (git >= 2.46 no longer advertises it by default): the `object-info` \
              line is dropped from git's v2 capability advertisement",
    },
    Difference {
        name: "empty-advertisement",
        why: "for a repository without refs, git before 2.41 advertises nothing in v0/v1 \
              upload-pack (a flush-pkt alone); refstore sends the `capabilities^{}` line that \
              git >= 2.41 sends, which tells a client cloning an empty repository the object \
              format: the line is dropped from refstore's answer when git is older than 2.41",
    },
    Difference {
        name: "v2-acks-once",
        why: "in a v2 `acknowledgments` section git before 2.52 acknowledges every have it \
              has, in the client's order, repeated ones too and parents of commits named \
              before (2.45 to 2.51 repeat only haves that are no commits); refstore \
              acknowledges each common object once and not one the client was known to \
              have, as git >= 2.52 does: the client learns nothing from the others (it \
              marks an acknowledged commit's ancestors common itself), and a request \
              repeating a have cannot grow the answer. When git is older than 2.52, git's \
              acknowledgments are reduced by that rule, using the commits' parents",
    },
    Difference {
        name: "shallow-order",
        why: "git sends the `shallow <id>` lines of a new boundary in the order its walk \
              met the commits, which no client relies on (they are a set); refstore sends \
              them sorted: runs of `shallow` lines are sorted in both answers",
    },
    Difference {
        name: "err-where-git-dies",
        why: "where git's upload-pack refuses a request by dying with a message on its \
              standard error only (a filter line without the `filter` capability, a \
              shallow request that selects no commits, ...), the client sees the connection \
              end; refstore tells it why in an `ERR` packet first: when git failed and its \
              answer is a prefix of refstore's followed by one `ERR` line, that line is \
              dropped",
    },
    Difference {
        name: "deepen-relative-since-2.54 (version-dependent)",
        why: "git 2.54 changed what `deepen-relative` deepens to: the depth is added to the \
              depth of the client's current shallow commits as measured from the wants, \
              and nothing is deepened when none of them is reachable (2.55 keeps it); git \
              before 2.54, like refstore, deepens from the client's shallow commits that \
              the refs reach. refstore answers as the git this machine runs (2.39). Only \
              when comparing with git >= 2.54, and only for requests with \
              `deepen-relative`: a request is exempt if its answers first differ at a \
              `shallow` or `unshallow` line; the test counts and prints such requests",
    },
    Difference {
        name: "v2-session-grafts",
        why: "in a stateful v2 session (SSH, git://; never HTTP, where each command is a \
              process of its own), git's upload-pack keeps the shallow boundary of a fetch \
              command that sent a pack (the client's `shallow` commits, or the boundary a \
              deepen request drew) as grafts for the rest of the session, so a later fetch \
              command of the same session sees those commits without parents: its \
              negotiation may not find the client's haves (no `ready`), its deepen walk \
              stops early. refstore answers each command from the request alone, as git \
              answers the same command in a session of its own; git's clients send the \
              same `shallow` lines in every command of a session, so they do not meet this. \
              A request is exempt only if a fetch command with `shallow` or deepen lines \
              came before another and the answers first differ after that command's pack; \
              the test counts and prints such requests",
    },
];

/// What a normalisation may need to know about the request.
pub struct Context {
    pub how: Invocation,
    /// The version of the git compared with (major, minor).
    pub git_version: (u32, u32),
    /// Whether git's server exited successfully.
    pub git_succeeded: bool,
    /// In a v2 session, the index among its fetch commands of the first
    /// with `shallow` or deepen lines, if another fetch follows it.
    pub shallow_fetch_before_others: Option<usize>,
    /// Whether the request has `deepen-relative`.
    pub deepen_relative: bool,
    /// The parents of the served repository's commits, by id.
    pub parents: HashMap<String, Vec<String>>,
    /// Requests that had one of the known (not fixed) differences.
    pub known_pack_differences: std::cell::Cell<usize>,
}

/// Removes the deliberate differences from both answers.
pub fn normalise(context: &Context, theirs: &mut Vec<Item>, ours: &mut Vec<Item>) {
    for items in [&mut *theirs, &mut *ours] {
        for item in items.iter_mut() {
            if let Item::Line(line) = item {
                *line = hide_agent(line);
            }
        }
        sort_shallow_runs(items);
    }
    let upload_pack = context.how.service == "upload-pack";
    if upload_pack && context.how.version == 2 {
        theirs.retain(|item| *item != Item::Line(b"object-info\n".to_vec()));
        if context.git_version < (2, 52) {
            acknowledge_once(theirs, &context.parents);
        }
    }
    if upload_pack && context.how.version < 2 && context.git_version < (2, 41) {
        let empty = |line: &[u8]| line.get(40..57) == Some(&b" capabilities^{}\0"[..]);
        let theirs_has = theirs
            .iter()
            .any(|i| matches!(i, Item::Line(l) if empty(l)));
        if !theirs_has {
            ours.retain(|i| !matches!(i, Item::Line(l) if empty(l)));
        }
    }
    if upload_pack
        && !context.git_succeeded
        && ours.len() == theirs.len() + 1
        && ours[..theirs.len()]
            .iter()
            .zip(theirs.iter())
            // Side-band sections are compared later, packs by objects.
            .all(|(a, b)| a == b || matches!((a, b), (Item::Sideband(_), Item::Sideband(_))))
        && matches!(ours.last(), Some(Item::Line(l)) if l.starts_with(b"ERR "))
    {
        ours.pop();
    }
}

/// The version-dependent difference `deepen-relative-since-2.54`: where
/// the answers are cut for it (the same place in both), if git is 2.54 or
/// newer, the request has `deepen-relative`, and the answers first differ
/// (packs aside, which are compared by their objects before the cut) at a
/// `shallow` or `unshallow` line.
pub fn deepen_relative_since_2_54_cut(
    context: &Context,
    theirs: &[Item],
    ours: &[Item],
) -> Option<usize> {
    if !context.deepen_relative || context.git_version < (2, 54) {
        return None;
    }
    let is_pack = |item: &Item| matches!(item, Item::Sideband(_) | Item::RawPack(_));
    let first = theirs
        .iter()
        .zip(ours)
        .position(|(a, b)| a != b && !(is_pack(a) && is_pack(b)))?;
    let boundary = |item: Option<&Item>| matches!(item, Some(Item::Line(l)) if l.starts_with(b"shallow ") || l.starts_with(b"unshallow "));
    (boundary(theirs.get(first)) || boundary(ours.get(first))).then_some(first)
}

/// `v2-acks-once`: drops from each `acknowledgments` section the `ACK`
/// of an object the client was known to have already (acknowledged
/// before in the section, or a parent of a commit acknowledged before).
fn acknowledge_once(items: &mut Vec<Item>, parents: &HashMap<String, Vec<String>>) {
    let mut in_section = false;
    let mut they_have: HashSet<String> = HashSet::new();
    items.retain(|item| match item {
        Item::Line(line) if line == b"acknowledgments\n" => {
            in_section = true;
            they_have.clear();
            true
        }
        Item::Line(line) if in_section => {
            let Some(id) = line
                .strip_prefix(b"ACK ")
                .and_then(|rest| rest.strip_suffix(b"\n"))
            else {
                return true;
            };
            let id = String::from_utf8_lossy(id).into_owned();
            they_have.extend(parents.get(&id).into_iter().flatten().cloned());
            they_have.insert(id)
        }
        Item::Line(_) => true,
        _ => {
            in_section = false;
            true
        }
    });
}

/// The known difference `v2-session-grafts`: where the answers are cut
/// for it, each just after the pack of the session's first fetch command
/// with `shallow` or deepen lines; `None` if the request is not such a
/// session or an answer has no such pack. What comes before the cut must
/// still agree.
pub fn v2_session_grafts_cut(
    context: &Context,
    theirs: &[Item],
    ours: &[Item],
) -> Option<(usize, usize)> {
    let shallow_fetch = context.shallow_fetch_before_others?;
    if context.how.version != 2 || context.how.stateless_rpc {
        return None;
    }
    let cut = |items: &[Item]| {
        let packfile = items
            .iter()
            .enumerate()
            .filter(|(_, i)| matches!(i, Item::Line(l) if l == b"packfile\n"))
            .nth(shallow_fetch)?
            .0;
        Some((packfile + 2).min(items.len()))
    };
    Some((cut(theirs)?, cut(ours)?))
}

/// `agent=<value>` with the value replaced by `*`, wherever it is a
/// capability (after a NUL, a space or at the start of the line).
fn hide_agent(line: &[u8]) -> Vec<u8> {
    let Some(at) = find(line, b"agent=") else {
        return line.to_vec();
    };
    if at > 0 && !matches!(line[at - 1], b' ' | 0) {
        return line.to_vec();
    }
    let value_end = line[at..]
        .iter()
        .position(|&b| b == b' ' || b == b'\n')
        .map_or(line.len(), |p| at + p);
    [&line[..at], b"agent=*", &line[value_end..]].concat()
}

fn sort_shallow_runs(items: &mut [Item]) {
    let is_shallow = |item: &Item| matches!(item, Item::Line(l) if l.starts_with(b"shallow "));
    let mut start = 0;
    while start < items.len() {
        if !is_shallow(&items[start]) {
            start += 1;
            continue;
        }
        let end = start + items[start..].iter().take_while(|i| is_shallow(i)).count();
        items[start..end].sort_by(|a, b| match (a, b) {
            (Item::Line(a), Item::Line(b)) => a.cmp(b),
            _ => std::cmp::Ordering::Equal,
        });
        start = end;
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The list, for the test's summary.
pub fn describe() -> String {
    DIFFERENCES
        .iter()
        .map(|d| format!("  - {}: {}\n", d.name, d.why))
        .collect()
}
