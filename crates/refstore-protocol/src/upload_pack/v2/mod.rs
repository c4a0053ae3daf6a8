//! Protocol v2: the server advertises its capabilities, then answers
//! commands. Each command request is `command=<name>`, capability lines,
//! optionally a delim-pkt and the command's arguments, then a flush-pkt.

pub(crate) mod fetch;
pub(crate) mod ls_refs;

use super::advertisement::agent;
use super::filter::FilterPolicy;
use super::request::check_format;
use super::{Session, UploadPackError};
use crate::pkt_line::{Packet, PacketReader};
use refstore_refs::ObjectFormat;
use std::io::Read;

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

/// One command request.
pub(crate) struct Request {
    pub command: Vec<u8>,
    pub arguments: Vec<Vec<u8>>,
}

/// Reads the next request; `None` when the client is done (the stream
/// ends, or a flush-pkt comes instead of a command).
pub(crate) fn read_request<R: Read>(
    input: &mut PacketReader<R>,
    format: ObjectFormat,
) -> Result<Option<Request>, UploadPackError> {
    let command = match input.read_text()? {
        None | Some(Packet::Flush) => return Ok(None),
        Some(Packet::Data(line)) => match line.strip_prefix(b"command=") {
            Some(command) => command.to_vec(),
            None => return Err(unexpected("a command", line)),
        },
        Some(_) => {
            return Err(UploadPackError::request(
                "upload-pack: protocol error, expected a command, got a special packet",
            ))
        }
    };
    // Capabilities, up to the arguments or the end of the request.
    let mut has_arguments = false;
    loop {
        match input.read_text()? {
            None => return Err(hung_up()),
            Some(Packet::Flush) => break,
            Some(Packet::Delim) => {
                has_arguments = true;
                break;
            }
            Some(Packet::Data(line)) => {
                if let Some(name) = line.strip_prefix(b"object-format=") {
                    check_format(name, format)?;
                } else if !line.starts_with(b"agent=") && !line.starts_with(b"server-option=") {
                    return Err(UploadPackError::request(format!(
                        "upload-pack: unknown capability '{}'",
                        String::from_utf8_lossy(line)
                    )));
                }
            }
            Some(Packet::ResponseEnd) => return Err(unexpected("a capability", b"0002")),
        }
    }
    let mut arguments = Vec::new();
    if has_arguments {
        loop {
            match input.read_text()? {
                None => return Err(hung_up()),
                Some(Packet::Flush) => break,
                Some(Packet::Data(line)) => arguments.push(line.to_vec()),
                Some(_) => {
                    return Err(UploadPackError::request(
                        "upload-pack: protocol error, expected an argument or a flush-pkt",
                    ))
                }
            }
        }
    }
    Ok(Some(Request { command, arguments }))
}

fn hung_up() -> UploadPackError {
    UploadPackError::request("upload-pack: the client hung up in the middle of a request")
}

/// An error for a line that is not what the protocol expects here.
pub(super) fn unexpected(expected: &str, line: &[u8]) -> UploadPackError {
    UploadPackError::request(format!(
        "upload-pack: protocol error, expected {expected}, got '{}'",
        String::from_utf8_lossy(line)
    ))
}
