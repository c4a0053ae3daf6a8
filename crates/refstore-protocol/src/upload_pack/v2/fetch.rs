//! The v2 `fetch` command: wants and haves in one request; the answer is
//! either the acknowledgments (the client sends more haves next time) or,
//! once ready, told `done` or given no haves at all, the pack in
//! side-band-64k packets. With `wait-for-done` the server is never ready.

use super::super::filter::{Filter, FilterPolicy};
use super::super::graph::Graph;
use super::super::negotiation::Negotiation;
use super::super::pack_key::PackInputs;
use super::super::refs::RefSnapshot;
use super::super::request::{parse_id, ClientOptions};
use super::super::shallow::{self, ShallowRequest};
use super::super::sparse_oid;
use super::super::wants::{Protocol, WantPolicy};
use super::super::{cached_pack, v0, wants, Session, UploadPackError};
use super::command::unexpected;
use crate::pkt_line::sideband::SidebandMode;
use refstore_refs::{ObjectFormat, ObjectId};

/// The arguments of a `fetch` request.
pub(crate) struct FetchArguments {
    pub wanted: Vec<ObjectId>,
    pub haves: Vec<ObjectId>,
    /// Whether the request had `have` lines (even of objects the server
    /// lacks): without any, the pack follows at once.
    pub seen_haves: bool,
    pub done: bool,
    /// `wait-for-done`: acknowledge, never "ready"; the pack waits for
    /// `done`.
    pub wait_for_done: bool,
    pub client: ClientOptions,
    pub shallow: ShallowRequest,
    /// `filter <spec>` (partial clone).
    pub filter: Option<Filter>,
}

/// Parses the arguments of a `fetch` request; a request that asks for
/// what this server does not offer, or waits for `done` without wanting
/// anything, is an error; a filter is judged by `filters`.
pub(crate) fn parse_arguments(
    arguments: &[Vec<u8>],
    format: ObjectFormat,
    filters: &FilterPolicy,
) -> Result<FetchArguments, UploadPackError> {
    let mut filter = None;
    let mut wanted = Vec::new();
    let mut haves = Vec::new();
    let mut done = false;
    let mut seen_haves = false;
    let mut wait_for_done = false;
    let mut client = ClientOptions::default();
    let mut shallow = ShallowRequest::default();
    for argument in arguments {
        let argument = argument.as_slice();
        if let Some(rest) = argument.strip_prefix(b"want ") {
            wanted.push(parse_id(argument, rest, format)?.0);
        } else if let Some(rest) = argument.strip_prefix(b"have ") {
            haves.push(parse_id(argument, rest, format)?.0);
            seen_haves = true;
        } else if argument == b"done" {
            done = true;
        } else if argument == b"wait-for-done" {
            wait_for_done = true;
        } else if matches!(
            argument,
            b"thin-pack" | b"ofs-delta" | b"no-progress" | b"include-tag"
        ) {
            client.apply_common(argument, format)?;
        } else if let (true, Some(spec)) = (filters.allow_filter, argument.strip_prefix(b"filter "))
        {
            if filter.is_some() {
                return Err(UploadPackError::request(
                    "multiple filter-specs cannot be combined",
                ));
            }
            filter = Some(filters.accept(spec)?);
        } else if shallow.parse_line(argument, format)? {
            continue;
        } else {
            return Err(unexpected("a fetch argument", argument));
        }
    }
    if wanted.is_empty() && wait_for_done {
        return Err(UploadPackError::request(
            "upload-pack: a fetch request must name at least one object in a want line",
        ));
    }
    Ok(FetchArguments {
        wanted,
        haves,
        seen_haves,
        done,
        wait_for_done,
        client,
        shallow,
        filter,
    })
}

/// Answers one `fetch` request.
pub(super) fn serve(
    session: &mut Session<'_>,
    arguments: &[Vec<u8>],
) -> Result<(), UploadPackError> {
    let repo = session.repo;
    let format = repo.object_format();
    let FetchArguments {
        mut wanted,
        haves,
        seen_haves,
        done,
        wait_for_done,
        client,
        shallow,
        filter,
    } = parse_arguments(arguments, format, &FilterPolicy::read(&repo.config)?)?;
    if wanted.is_empty() {
        // Git's answer to a request that wants nothing: none.
        return Ok(());
    }
    if crate::objects_wanted::bring_in(repo, &wanted) {
        session.forget_packs();
    }

    let packs = session.packs()?;
    // In v2 any object the repository has may be wanted, so the refs
    // only pick the annotated tags to send along, unless a `deepen-not`
    // or a `sparse:oid=` filter names refs: the client learns nothing of
    // the refs from the tags, and they are read as of a recent moment
    // (see `Backend::recent`). What names refs reads them as of now.
    let recent = match (&filter, shallow.not.is_empty()) {
        (None, true) => repo.refs.recent(),
        _ => None,
    };
    let refs = recent.as_deref().unwrap_or(repo.refs.as_ref());
    let snapshot = RefSnapshot::read(refs, &repo.objects, Some(&packs))?;
    let mut graph = Graph::open(repo.vfs.clone(), &repo.objects, packs)?;
    let policy = WantPolicy::read(&repo.config)?;
    wants::check(&mut graph, &snapshot, &wanted, policy, Protocol::V2)?;
    // The blobs of `sparse:oid=` filters are read before any answer, so
    // that a bad one is refused in an `ERR` packet the client shows.
    let filter = filter
        .map(|filter| sparse_oid::resolve_filter(&filter, &mut graph, &snapshot, &repo.config))
        .transpose()?;
    // As git does in v2, the haves are weighed against the whole history,
    // and the new boundary is worked out only when the pack is sent (its
    // grafts then hold for the walk).
    let mut negotiation = Negotiation::new(&mut graph, &wanted)?;
    for have in haves {
        negotiation.have(&mut graph, have)?;
    }
    if !done && seen_haves && !acknowledge(session, &mut graph, &mut negotiation, wait_for_done)? {
        return Ok(());
    }
    let shallow = match shallow::plan(&mut graph, &snapshot, &wanted, &shallow) {
        Ok(plan) => plan,
        Err(err) => {
            // Git has begun the section when its walk for the new
            // boundary fails.
            if shallow.deepens() {
                session.out().write_text("shallow-info")?;
            }
            return Err(err);
        }
    };

    let mut common = negotiation.common().to_vec();
    if let Some(plan) = &shallow {
        let out = session.out();
        out.write_text("shallow-info")?;
        plan.write_lines(out)?;
        out.write_delim()?;
        wanted.extend_from_slice(&plan.extra_wants);
        common.extend_from_slice(&plan.extra_haves);
    }
    // What negotiating read of the packs is not read again.
    graph.packs().release_all_pages();
    session.out().write_text("packfile")?;
    let tags = if client.include_tag {
        v0::annotated_tags(&snapshot, &mut graph)
    } else {
        Vec::new()
    };
    // The refs are not looked at again: a repository's thousands of tags
    // need not stay in memory while the pack is made.
    drop(snapshot);
    let inputs = PackInputs::new(
        &wanted,
        &common,
        shallow.as_ref(),
        &tags,
        filter.as_ref(),
        &client,
    );
    let (progress, mode) = (!client.no_progress, Some(SidebandMode::SideBand64k));
    cached_pack::send(session, &mut graph, inputs, progress, mode)?;
    Ok(())
}

/// Writes the acknowledgments section; true if the pack follows (the
/// server is ready), false if the response ends here. Each common object
/// is acknowledged once, in the client's order, and not if the client was
/// known to have it already (named before, or a parent of a commit named
/// before), as git does since 2.52: the client learns nothing from the
/// others, and a request repeating one have cannot grow the answer.
fn acknowledge(
    session: &mut Session<'_>,
    graph: &mut Graph,
    negotiation: &mut Negotiation,
    wait_for_done: bool,
) -> Result<bool, UploadPackError> {
    let ready = !wait_for_done && negotiation.has_common() && negotiation.ready(graph)?;
    let out = session.out();
    out.write_text("acknowledgments")?;
    if !negotiation.has_common() {
        out.write_text("NAK")?;
    }
    for id in negotiation.common() {
        writeln!(out, "ACK {id}")?;
    }
    if ready {
        out.write_text("ready")?;
        out.write_delim()?;
    } else {
        out.write_flush()?;
    }
    Ok(ready)
}
