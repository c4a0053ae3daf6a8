//! Protocol v2: the server advertises its capabilities, then answers
//! commands. Each command request is `command=<name>`, capability lines,
//! optionally a delim-pkt and the command's arguments, then a flush-pkt.

mod command;
pub(crate) mod fetch;
pub(crate) mod ls_refs;

pub(crate) use command::read_request;

use super::advertisement::agent;
use super::filter::FilterPolicy;
use super::{Session, UploadPackError};

/// Serves a v2 connection (or its capability advertisement, or one
/// stateless request).
pub(super) fn serve(session: &mut Session<'_>) -> Result<(), UploadPackError> {
    if !session.options.stateless_rpc || session.options.advertise_refs {
        advertise(session)?;
    }
    if session.options.advertise_refs {
        return Ok(());
    }
    let format = session.repo.object_format();
    while let Some(request) = read_request(&mut session.input, format)? {
        // Each command's answer starts without pack data: an error in it
        // is told in an `ERR` packet again.
        session.pack_started = false;
        match request.command.as_slice() {
            b"ls-refs" => ls_refs::serve(session, &request.arguments)?,
            b"fetch" => fetch::serve(session, &request.arguments)?,
            other => {
                return Err(UploadPackError::request(format!(
                    "upload-pack: invalid command '{}'",
                    String::from_utf8_lossy(other)
                )))
            }
        }
        if session.options.stateless_rpc {
            break;
        }
    }
    Ok(())
}

/// Writes the capability advertisement.
fn advertise(session: &mut Session<'_>) -> Result<(), UploadPackError> {
    let format = session.repo.object_format().name();
    let filter = FilterPolicy::read(&session.repo.config)?.allow_filter;
    let out = session.out();
    out.write_text("version 2")?;
    out.write_text(&format!("agent={}", agent()))?;
    out.write_text("ls-refs=unborn")?;
    out.write_text(if filter {
        "fetch=shallow wait-for-done filter"
    } else {
        "fetch=shallow wait-for-done"
    })?;
    out.write_text("server-option")?;
    out.write_text(&format!("object-format={format}"))?;
    out.write_flush()?;
    Ok(())
}
