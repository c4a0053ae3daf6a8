//! Protocol v0 and v1: advertisement, wants, the `have` negotiation with
//! its three acknowledgement modes, and the pack.
//!
//! Over HTTP (`stateless_rpc`) every round is its own request: the client
//! repeats its wants and the haves found common so far, and the server
//! answers one batch, then returns; the last request ends with `done`.

use super::filter::{Filter, FilterPolicy};
use super::filtered_walk;
use super::graph::Graph;
use super::negotiation::{Have, Negotiation};
use super::pack_output::{self, PackRequest};
use super::refs::{Offering, RefSnapshot};
use super::request::{parse_id, ClientOptions, MultiAck};
use super::shallow::{self, ShallowRequest};
use super::wants::{Protocol, WantPolicy};
use super::{advertisement, sparse_oid, walk, wants, Session, UploadPackError};
use crate::pkt_line::{Packet, PacketReader};
use crate::ProtocolVersion;
use refstore_refs::{ObjectFormat, ObjectId};
use std::io::{Read, Write};

/// Serves a v0/v1 connection (or one stateless request).
pub(super) fn serve(session: &mut Session<'_>) -> Result<(), UploadPackError> {
    let repo = session.repo;
    let format = repo.object_format();
    let version_line = session.options.version == ProtocolVersion::V1;
    let want_policy = WantPolicy::read(&repo.config)?;
    let filters = FilterPolicy::read(&repo.config)?;
    let offered = advertisement::Offered {
        tip: want_policy.tip,
        reachable: want_policy.reachable,
        filter: filters.allow_filter,
        no_done: session.options.advertise_refs,
    };
    if session.options.advertise_refs {
        // Only the advertisement: stream it, keeping no refs.
        let packs = session.packs().ok();
        let mut offering = Offering::new(repo.refs.as_ref(), &repo.objects, packs.as_deref());
        return advertisement::write_streaming(
            session.out(),
            &mut offering,
            format,
            version_line,
            offered,
        );
    }
    let packs = session.packs().ok();
    let snapshot = RefSnapshot::read(repo.refs.as_ref(), &repo.objects, packs.as_deref())?;
    if !session.options.stateless_rpc {
        advertisement::write(session.out(), &snapshot, format, version_line, offered)?;
    }
    let mut wants_read = Vec::new();
    let read = read_wants_into(&mut session.input, format, &filters, &mut wants_read);
    if let Err(UploadPackError::Request(_)) = read {
        // git looks each want up as it reads it: a missing one named
        // before the line in error is what it refuses.
        if crate::objects_wanted::bring_in(repo, &wants_read) {
            session.forget_packs();
        }
        let mut graph = Graph::open(repo.vfs.clone(), &repo.objects, session.packs()?)?;
        wants::check_present(&mut graph, &wants_read)?;
    }
    let Some((mut wants, client, shallow_request, filter)) = read? else {
        // `git ls-remote` reads the advertisement and leaves.
        return Ok(());
    };
    if crate::objects_wanted::bring_in(repo, &wants) {
        session.forget_packs();
    }
    let packs = session.packs()?;
    let mut graph = Graph::open(repo.vfs.clone(), &repo.objects, packs)?;
    let stateless = session.options.stateless_rpc;
    wants::check(
        &mut graph,
        &snapshot,
        &wants,
        want_policy,
        Protocol::V0 { stateless },
    )?;
    // The blobs of `sparse:oid=` filters are read before the negotiation,
    // so that a bad one is refused in an `ERR` packet the client shows.
    let filter = filter
        .map(|filter| sparse_oid::resolve_filter(&filter, &mut graph, &snapshot, &repo.config))
        .transpose()?;
    // The new boundary comes before the negotiation, which then sees the
    // client's history as it is: without the parents of shallow commits.
    let shallow = shallow::plan(&mut graph, &snapshot, &wants, &shallow_request)?;
    if let Some(plan) = shallow.as_ref().filter(|plan| plan.deepens) {
        plan.write_lines(session.out())?;
        session.out().write_flush()?;
        session.out().flush_buffered()?;
    }
    // The parents of the commits that gain them are wanted too, and as in
    // git they must reach a common commit before the server is ready.
    let unshallowed_parents = shallow
        .as_ref()
        .map_or(&[][..], |plan| &plan.extra_wants[..]);
    let negotiated: Vec<ObjectId> = wants.iter().chain(unshallowed_parents).copied().collect();
    let mut negotiation = Negotiation::new(&mut graph, &negotiated)?;
    if !negotiate(session, &mut graph, &mut negotiation, &client)? {
        return Ok(());
    }
    // What negotiating read of the packs is not read again.
    graph.packs().release_all_pages();
    let tags = if client.include_tag {
        annotated_tags(&snapshot, &mut graph)
    } else {
        Vec::new()
    };
    // The refs are not looked at again: a repository's thousands of tags
    // need not stay in memory while the pack is made.
    drop(snapshot);
    let mut common = negotiation.common().to_vec();
    if let Some(plan) = &shallow {
        wants.extend_from_slice(&plan.extra_wants);
        common.extend_from_slice(&plan.extra_haves);
    }
    let edges = walk::ShallowEdges {
        unshallowed: shallow
            .as_ref()
            .map_or(&[][..], |plan| &plan.extra_haves[..]),
        aggressive: client.thin_pack
            && shallow.as_ref().is_some_and(|plan| !plan.grafts.is_empty()),
    };
    let contents = match &filter {
        Some(filter) => {
            filtered_walk::pack_contents(&mut graph, &wants, &common, &tags, filter, edges)?
        }
        None => walk::pack_contents(&mut graph, &wants, &common, &tags, edges)?,
    };
    let request = PackRequest {
        progress: !client.no_progress,
        // The client may lack the bases a thin pack would use.
        thin: client.thin_pack && filter.is_none(),
    };
    session.pack_started = true;
    match client.sideband {
        Some(mode) => {
            pack_output::send_pack(&graph, contents, request, mode, session.out())?;
        }
        None => {
            let packets = session.output.take().expect("the output is still there");
            let mut out = packets.into_inner()?;
            pack_output::send_raw_pack(&graph, contents, request, &mut out)?;
            out.flush().map_err(|e| UploadPackError::Packet(e.into()))?;
        }
    }
    Ok(())
}

/// The ids of the annotated tags among the refs, for `include-tag`; what
/// they peel to is told to `graph`.
pub(super) fn annotated_tags(snapshot: &RefSnapshot, graph: &mut Graph) -> Vec<ObjectId> {
    let mut tags = Vec::new();
    for r in &snapshot.refs {
        if let (Some(peeled), true) = (&r.peeled, r.name.as_bytes().starts_with(b"refs/tags/")) {
            let tag = r.id;
            graph.know_peeled(tag, *peeled);
            tags.push(tag);
        }
    }
    tags
}

/// The wants, the capabilities chosen, the shallow and deepen lines and
/// the filter of a v0 request.
pub(crate) type Wants = (Vec<ObjectId>, ClientOptions, ShallowRequest, Option<Filter>);

/// Reads the `want` lines, the `shallow` and `deepen` lines after them, and
/// a `filter` line (which `filters` judges), up to their flush-pkt; `None`
/// when the client wants nothing (it hung up or sent a flush-pkt at once).
pub(crate) fn read_wants<R: Read>(
    input: &mut PacketReader<R>,
    format: ObjectFormat,
    filters: &FilterPolicy,
) -> Result<Option<Wants>, UploadPackError> {
    read_wants_into(input, format, filters, &mut Vec::new())
}

/// [`read_wants`], gathering the wants in `wants`, where they stay when a
/// later line is in error.
fn read_wants_into<R: Read>(
    input: &mut PacketReader<R>,
    format: ObjectFormat,
    filters: &FilterPolicy,
    wants: &mut Vec<ObjectId>,
) -> Result<Option<Wants>, UploadPackError> {
    let mut client = ClientOptions::default();
    let mut shallow = ShallowRequest::default();
    let mut filter = None;
    loop {
        let line = match input.read_text()? {
            None if wants.is_empty() => return Ok(None),
            None => {
                return Err(UploadPackError::request(
                    "upload-pack: the client hung up before ending its wants with a flush-pkt",
                ))
            }
            Some(Packet::Data(line)) => line,
            Some(_) => break,
        };
        if let Some(rest) = line.strip_prefix(b"want ") {
            let (id, capabilities) = parse_id(line, rest, format)?;
            for word in capabilities.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
                if word == b"deepen-relative" {
                    shallow.relative = true;
                }
                client.apply_v0(word, format)?;
            }
            wants.push(id);
        } else if let Some(spec) = line.strip_prefix(b"filter ") {
            if !(filters.allow_filter && client.filter) {
                return Err(UploadPackError::request(
                    "git upload-pack: filtering capability not negotiated",
                ));
            }
            if filter.is_some() {
                return Err(UploadPackError::request(
                    "multiple filter-specs cannot be combined",
                ));
            }
            filter = Some(filters.accept(spec)?);
        } else if !shallow.parse_line(line, format)? {
            return Err(UploadPackError::request(format!(
                "upload-pack: protocol error, expected to get object ID, not '{}'",
                String::from_utf8_lossy(line)
            )));
        }
    }
    Ok((!wants.is_empty()).then(|| (std::mem::take(wants), client, shallow, filter)))
}

/// Answers `have` batches until `done` (true: send the pack) or, stateless,
/// until the end of this request's batch (false).
fn negotiate(
    session: &mut Session<'_>,
    graph: &mut Graph,
    negotiation: &mut Negotiation,
    client: &ClientOptions,
) -> Result<bool, UploadPackError> {
    let format = session.repo.object_format();
    let multi_ack = client.multi_ack;
    let mut got_common = false;
    let mut got_other = false;
    let mut sent_ready = false;
    let mut last_common: Option<ObjectId> = None;
    let mut read_any = false;
    loop {
        let packet = session.input.read_text()?;
        let first = !read_any;
        read_any = true;
        let line = match packet {
            // Over HTTP, the first request of a shallow fetch ends after
            // the wants: the client reads the shallow lines, then sends
            // its haves in the next request.
            None if first && session.options.stateless_rpc => return Ok(false),
            None => {
                return Err(UploadPackError::request(
                    "upload-pack: the client hung up during the negotiation",
                ))
            }
            Some(Packet::Flush) => {
                if let (MultiAck::Detailed, true, false, Some(last)) =
                    (multi_ack, got_common, got_other, last_common)
                {
                    if negotiation.ready(graph)? {
                        writeln!(session.out(), "ACK {last} ready")?;
                        sent_ready = true;
                    }
                }
                if !negotiation.has_common() || multi_ack != MultiAck::None {
                    session.out().write_text("NAK")?;
                }
                if let (true, true, Some(last)) = (client.no_done, sent_ready, last_common) {
                    // `no-done`: the client sends no `done` after a ready.
                    writeln!(session.out(), "ACK {last}")?;
                    session.out().flush_buffered()?;
                    return Ok(true);
                }
                session.out().flush_buffered()?;
                if session.options.stateless_rpc {
                    return Ok(false);
                }
                got_common = false;
                got_other = false;
                continue;
            }
            Some(Packet::Data(line)) => line.to_vec(),
            Some(_) => {
                return Err(UploadPackError::request(
                    "upload-pack: protocol error, unexpected special packet",
                ))
            }
        };
        match parse_negotiation_line(&line, format)? {
            NegotiationLine::Have(id) => match negotiation.have(graph, id)? {
                Have::Unknown => {
                    got_other = true;
                    if multi_ack != MultiAck::None && negotiation.ready(graph)? {
                        let word = match multi_ack {
                            MultiAck::Detailed => "ready",
                            _ => "continue",
                        };
                        sent_ready |= multi_ack == MultiAck::Detailed;
                        writeln!(session.out(), "ACK {id} {word}")?;
                    }
                }
                Have::Common => {
                    got_common = true;
                    last_common = Some(id);
                    match multi_ack {
                        MultiAck::Detailed => writeln!(session.out(), "ACK {id} common")?,
                        MultiAck::Continue => writeln!(session.out(), "ACK {id} continue")?,
                        MultiAck::None if negotiation.common().len() == 1 => {
                            writeln!(session.out(), "ACK {id}")?
                        }
                        MultiAck::None => {}
                    }
                }
            },
            NegotiationLine::Done => {
                match last_common.or_else(|| negotiation.common().last().copied()) {
                    Some(last) if multi_ack != MultiAck::None => {
                        writeln!(session.out(), "ACK {last}")?
                    }
                    Some(_) => {}
                    None => session.out().write_text("NAK")?,
                }
                session.out().flush_buffered()?;
                return Ok(true);
            }
        }
    }
}

/// A line of the `have` negotiation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NegotiationLine {
    /// `have <id>`.
    Have(ObjectId),
    /// `done`: send the pack.
    Done,
}

/// Parses a line of the negotiation (its LF removed).
pub(crate) fn parse_negotiation_line(
    line: &[u8],
    format: ObjectFormat,
) -> Result<NegotiationLine, UploadPackError> {
    if let Some(rest) = line.strip_prefix(b"have ") {
        let (id, _) = parse_id(line, rest, format)?;
        Ok(NegotiationLine::Have(id))
    } else if line == b"done" {
        Ok(NegotiationLine::Done)
    } else {
        Err(UploadPackError::request(format!(
            "upload-pack: protocol error, expected to get a have line or done, not '{}'",
            String::from_utf8_lossy(line)
        )))
    }
}
