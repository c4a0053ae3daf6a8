//! The parsers of client requests, run over raw bytes without a
//! repository, for fuzz targets and their smoke tests. Each entry point
//! reads a whole request the way a server session does and returns what
//! it understood, or the error message the client would get.
//!
//! Not a stable interface: it follows the internals it exposes.

use crate::pkt_line::{Dialect, Packet, PacketReader};
use crate::receive_pack::commands;
use crate::upload_pack::filter::FilterPolicy;
use crate::upload_pack::v0::{self, NegotiationLine};
use crate::upload_pack::v2::{self, fetch, ls_refs};
use refstore_refs::ObjectFormat;

/// One protocol v2 command request as the server parsed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V2Command {
    /// The command's name (`ls-refs`, `fetch`, ...).
    pub command: Vec<u8>,
    /// Its argument lines, LF removed.
    pub arguments: Vec<Vec<u8>>,
}

/// Reads protocol v2 command requests up to the end of `bytes` (or the
/// flush-pkt that ends a session), parsing the arguments of `ls-refs` and
/// `fetch` as the server does before answering them.
pub fn upload_pack_v2(bytes: &[u8], format: ObjectFormat) -> Result<Vec<V2Command>, String> {
    let mut input = PacketReader::new(bytes, Dialect::V2).fail_on_err_packets(false);
    let mut commands = Vec::new();
    while let Some(request) = v2::read_request(&mut input, format).map_err(|e| e.to_string())? {
        match request.command.as_slice() {
            b"ls-refs" => {
                ls_refs::parse_arguments(&request.arguments).map_err(|e| e.to_string())?;
            }
            b"fetch" => {
                fetch::parse_arguments(&request.arguments, format, &FilterPolicy::permissive())
                    .map_err(|e| e.to_string())?;
            }
            _ => {}
        }
        commands.push(V2Command {
            command: request.command,
            arguments: request.arguments,
        });
    }
    Ok(commands)
}

/// A protocol v0 fetch request as the server parsed it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct V0Request {
    /// The ids of the `want` lines, in hex.
    pub wants: Vec<String>,
    /// The ids of the `have` lines, in hex.
    pub haves: Vec<String>,
    /// Whether the negotiation ended with `done`.
    pub done: bool,
}

/// Reads a protocol v0 fetch request: `want` lines with capabilities up to
/// a flush-pkt, then `have` lines in flush-terminated batches up to `done`
/// or the end of `bytes`.
pub fn upload_pack_v0(bytes: &[u8], format: ObjectFormat) -> Result<V0Request, String> {
    let mut input = PacketReader::new(bytes, Dialect::V0).fail_on_err_packets(false);
    let mut request = V0Request::default();
    let filters = FilterPolicy::permissive();
    let Some((wants, _, _, _)) =
        v0::read_wants(&mut input, format, &filters).map_err(|e| e.to_string())?
    else {
        return Ok(request);
    };
    request.wants = wants.iter().map(|id| id.to_string()).collect();
    loop {
        match input.read_text().map_err(|e| e.to_string())? {
            None => return Ok(request),
            Some(Packet::Flush) => {}
            Some(Packet::Data(line)) => match v0::parse_negotiation_line(line, format) {
                Ok(NegotiationLine::Have(id)) => request.haves.push(id.to_string()),
                Ok(NegotiationLine::Done) => {
                    request.done = true;
                    return Ok(request);
                }
                Err(e) => return Err(e.to_string()),
            },
            Some(_) => return Err("unexpected special packet".to_owned()),
        }
    }
}

/// One receive-pack command as the server parsed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiveCommand {
    /// The old value, in hex.
    pub old: String,
    /// The new value, in hex.
    pub new: String,
    /// The ref name, as sent.
    pub name: Vec<u8>,
}

/// A receive-pack request as the server parsed it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReceiveRequest {
    /// The commands, in order.
    pub commands: Vec<ReceiveCommand>,
    /// The capabilities understood, as the words that ask for them.
    pub capabilities: Vec<&'static str>,
    /// The push options.
    pub push_options: Vec<Vec<u8>>,
    /// Whether a pack must follow.
    pub expects_pack: bool,
}

/// Reads a receive-pack request: the command list with its capabilities
/// and, when asked for, the push options.
pub fn receive_pack(bytes: &[u8], format: ObjectFormat) -> Result<ReceiveRequest, String> {
    let mut input = PacketReader::new(bytes, Dialect::V0).fail_on_err_packets(false);
    let limits = crate::limits::Limits::default();
    let request = commands::read(&mut input, format, &limits).map_err(|e| e.to_string())?;
    let caps = request.capabilities;
    let capabilities = [
        (caps.report_status, "report-status"),
        (caps.report_status_v2, "report-status-v2"),
        (caps.side_band_64k, "side-band-64k"),
        (caps.atomic, "atomic"),
        (caps.push_options, "push-options"),
    ]
    .into_iter()
    .filter_map(|(on, word)| on.then_some(word))
    .collect();
    Ok(ReceiveRequest {
        expects_pack: request.expects_pack(),
        commands: request
            .commands
            .into_iter()
            .map(|c| ReceiveCommand {
                old: c.old.to_hex(),
                new: c.new.to_hex(),
                name: c.name,
            })
            .collect(),
        capabilities,
        push_options: request.push_options,
    })
}
