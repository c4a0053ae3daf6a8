//! The v2 `ls-refs` command: the refs whose names start with one of the
//! requested prefixes, `HEAD` first, with symbolic targets (`symrefs`),
//! peeled tags (`peel`) and an unborn `HEAD` (`unborn`) when asked.

use super::super::refs::{Head, OfferedRef, RefSnapshot};
use super::super::{Session, UploadPackError};
use super::unexpected;

/// Git ignores the prefixes when a client sends more than this many, and
/// lists everything: filtering would cost more than it saves.
const MAX_PREFIXES: usize = 10;

/// Answers one `ls-refs` request.
pub(super) fn serve(
    session: &mut Session<'_>,
    arguments: &[Vec<u8>],
) -> Result<(), UploadPackError> {
    let mut symrefs = false;
    let mut peel = false;
    let mut unborn = false;
    let mut prefixes: Vec<&[u8]> = Vec::new();
    for argument in arguments {
        match argument.as_slice() {
            b"symrefs" => symrefs = true,
            b"peel" => peel = true,
            b"unborn" => unborn = true,
            other => match other.strip_prefix(b"ref-prefix ") {
                Some(prefix) => prefixes.push(prefix),
                None => return Err(unexpected("an ls-refs argument", other)),
            },
        }
    }
    if prefixes.len() > MAX_PREFIXES {
        prefixes.clear();
    }
    let wanted = |name: &[u8]| prefixes.is_empty() || prefixes.iter().any(|p| name.starts_with(p));

    let repo = session.repo;
    let snapshot = RefSnapshot::read_matching(repo.refs.as_ref(), &repo.objects, &prefixes)?;
    let out = session.out();
    let mut line = Vec::new();
    if let (Head::Unborn(target), true) = (&snapshot.head, unborn && wanted(b"HEAD")) {
        line.extend_from_slice(b"unborn HEAD");
        if symrefs {
            line.extend_from_slice(b" symref-target:");
            line.extend_from_slice(target.as_bytes());
        }
        line.push(b'\n');
        out.write_data(&line)?;
    }
    for offered in snapshot.offered() {
        if wanted(offered.name.as_bytes()) {
            format_ref(&mut line, offered, symrefs, peel);
            out.write_data(&line)?;
        }
    }
    out.write_flush()?;
    Ok(())
}

/// `<id> <name>[ symref-target:<name>][ peeled:<id>]` and LF, into `line`.
fn format_ref(line: &mut Vec<u8>, offered: &OfferedRef, symrefs: bool, peel: bool) {
    line.clear();
    offered.id.write_hex(line);
    line.push(b' ');
    line.extend_from_slice(offered.name.as_bytes());
    if let (true, Some(target)) = (symrefs, &offered.symref_target) {
        line.extend_from_slice(b" symref-target:");
        line.extend_from_slice(target.as_bytes());
    }
    if let (true, Some(peeled)) = (peel, &offered.peeled) {
        line.extend_from_slice(b" peeled:");
        peeled.write_hex(line);
    }
    line.push(b'\n');
}
