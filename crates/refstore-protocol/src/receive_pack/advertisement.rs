//! The ref advertisement receive-pack sends before a push: every ref below
//! `refs/` with its id (a symbolic ref with the id it resolves to), the
//! capabilities after a NUL on the first line, and `capabilities^{}` on the
//! null id when there is no ref. Unlike upload-pack's, it has no peeled
//! `^{}` lines and no `symref=`: a pushing client needs neither.
//!
//! Everything goes into one [`PacketWriter`] buffer and leaves with the
//! closing flush-pkt.

use super::ReceivePackError;
use crate::pkt_line::PacketWriter;
use crate::Repository;
use refstore_refs::value::Target;
use std::io::Write;

/// The capabilities offered, apart from `push-options`, `object-format`
/// and `agent`.
const CAPABILITIES: &str =
    "report-status report-status-v2 delete-refs side-band-64k quiet atomic ofs-delta";

/// The `agent` value this server sends.
fn agent() -> String {
    format!("refstore/{}", env!("CARGO_PKG_VERSION"))
}

/// Writes the advertisement of `repo`'s refs, ended by a flush-pkt;
/// `push-options` is offered when `push_options` is true (git's
/// `receive.advertisePushOptions`, off by default).
pub(crate) fn write<W: Write>(
    out: &mut PacketWriter<W>,
    repo: &Repository,
    push_options: bool,
) -> Result<(), ReceivePackError> {
    let format = repo.object_format();
    let capabilities = format!(
        "{CAPABILITIES}{} object-format={} agent={}",
        if push_options { " push-options" } else { "" },
        format.name(),
        agent()
    );
    let mut first = Some(capabilities.as_bytes());
    let mut hex = Vec::with_capacity(format.hex_len());
    for stored in repo.refs.list(b"refs/")?.refs {
        let id = match &stored.target {
            Target::Object(id) => *id,
            // A dangling symbolic ref has nothing to offer.
            Target::Symbolic(_) => match repo.refs.resolve(&stored.name)?.and_then(|r| r.id) {
                Some(id) => id,
                None => continue,
            },
        };
        hex.clear();
        id.write_hex(&mut hex);
        let name = stored.name.as_bytes();
        match first.take() {
            Some(caps) => out.write_parts(&[&hex, b" ", name, b"\0", caps, b"\n"])?,
            None => out.write_parts(&[&hex, b" ", name, b"\n"])?,
        }
    }
    if let Some(caps) = first {
        hex.clear();
        format.null_id().write_hex(&mut hex);
        out.write_parts(&[&hex, b" capabilities^{}\0", caps, b"\n"])?;
    }
    out.write_flush()?;
    Ok(())
}
