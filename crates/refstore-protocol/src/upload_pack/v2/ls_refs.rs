//! The v2 `ls-refs` command: the refs whose names start with one of the
//! requested prefixes, `HEAD` first, with symbolic targets (`symrefs`),
//! peeled tags (`peel`) and an unborn `HEAD` (`unborn`) when asked.

use super::super::refs::{Head, OfferedView, Offering};
use super::super::{Session, UploadPackError};
use super::command::unexpected;
use crate::pkt_line::PacketWriter;
use std::io::Write;

/// Git ignores the prefixes when a client sends this many or more, and
/// lists everything: filtering would cost more than it saves.
const TOO_MANY_PREFIXES: usize = 65536;

/// The arguments of an `ls-refs` request.
#[derive(Default)]
pub(crate) struct LsRefsArguments<'a> {
    pub symrefs: bool,
    pub peel: bool,
    pub unborn: bool,
    /// Empty: every ref.
    pub prefixes: Vec<&'a [u8]>,
}

/// Parses the arguments of an `ls-refs` request.
pub(crate) fn parse_arguments(
    arguments: &[Vec<u8>],
) -> Result<LsRefsArguments<'_>, UploadPackError> {
    let mut parsed = LsRefsArguments::default();
    for argument in arguments {
        match argument.as_slice() {
            b"symrefs" => parsed.symrefs = true,
            b"peel" => parsed.peel = true,
            b"unborn" => parsed.unborn = true,
            other => match other.strip_prefix(b"ref-prefix ") {
                Some(prefix) => parsed.prefixes.push(prefix),
                None => return Err(unexpected("an ls-refs argument", other)),
            },
        }
    }
    if parsed.prefixes.len() >= TOO_MANY_PREFIXES {
        parsed.prefixes.clear();
    }
    Ok(parsed)
}

/// Answers one `ls-refs` request.
pub(super) fn serve(
    session: &mut Session<'_>,
    arguments: &[Vec<u8>],
) -> Result<(), UploadPackError> {
    let LsRefsArguments {
        symrefs,
        peel,
        unborn,
        prefixes,
    } = parse_arguments(arguments)?;
    let wanted = |name: &[u8]| prefixes.is_empty() || prefixes.iter().any(|p| name.starts_with(p));

    let repo = session.repo;
    let packs = session.packs().ok();
    let mut offering = Offering::new(repo.refs.as_ref(), &repo.objects, packs.as_deref());
    let head = offering.head()?;
    let out = session.out();
    // An unborn HEAD is only listed with its target: without `symrefs`
    // the line would tell the client nothing it could use.
    if let (Head::Unborn(target), true) = (&head, unborn && symrefs && wanted(b"HEAD")) {
        out.write_parts(&[b"unborn HEAD symref-target:", target.as_bytes(), b"\n"])?;
    }
    if let (Head::Present(head), true) = (&head, wanted(b"HEAD")) {
        write_ref(out, head.view(), symrefs, peel)?;
    }
    // Refs are streamed from the store into the output buffer: a million
    // of them cost no allocation each.
    offering.visit(&prefixes, &mut |offered| {
        if wanted(offered.name) {
            write_ref(out, offered, symrefs, peel)?;
        }
        Ok(())
    })?;
    out.write_flush()?;
    Ok(())
}

/// `<id> <name>[ symref-target:<name>][ peeled:<id>]` and LF, as one packet.
fn write_ref<W: Write>(
    out: &mut PacketWriter<W>,
    offered: OfferedView<'_>,
    symrefs: bool,
    peel: bool,
) -> Result<(), UploadPackError> {
    let (mut id, mut peeled) = ([0; 64], [0; 64]);
    // Only the parts this line has: a million lines pass through here.
    let mut parts: [&[u8]; 8] = [&[]; 8];
    parts[0] = offered.id.encode_hex(&mut id);
    parts[1] = b" ";
    parts[2] = offered.name;
    let mut len = 3;
    if let (true, Some(target)) = (symrefs, offered.symref_target) {
        parts[len] = b" symref-target:";
        parts[len + 1] = target.as_bytes();
        len += 2;
    }
    if let (true, Some(id)) = (peel, &offered.peeled) {
        parts[len] = b" peeled:";
        parts[len + 1] = id.encode_hex(&mut peeled);
        len += 2;
    }
    parts[len] = b"\n";
    len += 1;
    out.write_parts(&parts[..len])?;
    Ok(())
}
