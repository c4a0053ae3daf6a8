//! A v2 command request as it is read: `command=<name>`, capability
//! lines, optionally a delim-pkt and the command's arguments, then a
//! flush-pkt; and the error for a line the protocol does not expect.

use super::super::request::check_format;
use super::super::UploadPackError;
use crate::pkt_line::{Packet, PacketReader};
use refstore_refs::ObjectFormat;
use std::io::Read;

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
pub(crate) fn unexpected(expected: &str, line: &[u8]) -> UploadPackError {
    UploadPackError::request(format!(
        "upload-pack: protocol error, expected {expected}, got '{}'",
        String::from_utf8_lossy(line)
    ))
}
