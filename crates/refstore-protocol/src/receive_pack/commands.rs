//! The client's request: the command list (`<old> <new> <ref>` per line,
//! the capabilities after a NUL on the first), ended by a flush-pkt, then
//! the push options if `push-options` was asked for.
//!
//! A client pushing from a shallow clone first names its shallow commits
//! (`shallow <id>`). Parsing is strict: a line that is not a command in the
//! repository's object format ends the push before anything is stored.
//! Signed pushes are refused with a message saying so, since this server
//! does not offer them.

use super::ReceivePackError;
use crate::limits::Limits;
use crate::pkt_line::{Packet, PacketReader};
use refstore_refs::{ObjectFormat, ObjectId};
use std::io::Read;

/// One ref update the client asks for. The name is kept as sent: whether
/// it is a valid ref name is decided per command, and reported per ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Command {
    /// The value the client believes the ref has (null: absent).
    pub old: ObjectId,
    /// The value to set (null: delete the ref).
    pub new: ObjectId,
    /// The ref's name.
    pub name: Vec<u8>,
}

impl Command {
    /// True if the command deletes its ref.
    pub fn is_delete(&self) -> bool {
        self.new.is_null()
    }
}

/// The capabilities a client asked for, of those this server offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Capabilities {
    pub report_status: bool,
    pub report_status_v2: bool,
    pub side_band_64k: bool,
    pub atomic: bool,
    pub push_options: bool,
}

/// A parsed request.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Request {
    /// The client's shallow commits (a push from a shallow clone).
    pub shallow: Vec<ObjectId>,
    pub commands: Vec<Command>,
    pub capabilities: Capabilities,
    pub push_options: Vec<Vec<u8>>,
}

impl Request {
    /// True if a pack follows the request: git's clients send one unless
    /// every command is a delete.
    pub fn expects_pack(&self) -> bool {
        self.commands.iter().any(|c| !c.is_delete())
    }
}

/// Reads the request. An empty command list (a client with nothing to
/// push, or one that only wanted the advertisement and hung up) gives an
/// empty request.
pub(crate) fn read<R: Read>(
    reader: &mut PacketReader<R>,
    format: ObjectFormat,
    limits: &Limits,
) -> Result<Request, ReceivePackError> {
    let mut request = Request::default();
    loop {
        let line = match reader.read_text()? {
            None if request.commands.is_empty() => return Ok(request),
            None => {
                return Err(ReceivePackError::request(
                    "protocol error: the command list ended without a flush-pkt",
                ))
            }
            Some(Packet::Flush) => break,
            Some(Packet::Data(line)) => line,
            Some(other) => {
                return Err(ReceivePackError::request(format!(
                    "protocol error: unexpected {other:?} in the command list"
                )))
            }
        };
        if let Some(hex) = line.strip_prefix(b"shallow ") {
            // A shallow client names its shallow commits before the
            // commands.
            if !request.commands.is_empty() {
                return Err(ReceivePackError::request(
                    "protocol error: a shallow line after the commands",
                ));
            }
            let hex = hex.strip_suffix(b"\n").unwrap_or(hex);
            let id = ObjectId::from_hex_in(hex, format).map_err(|_| {
                ReceivePackError::request(format!(
                    "protocol error: expected shallow sha, got '{}'",
                    String::from_utf8_lossy(hex)
                ))
            })?;
            request.shallow.push(id);
            continue;
        }
        if line.starts_with(b"push-cert") {
            return Err(ReceivePackError::request(
                "this server does not accept signed pushes: push without --signed",
            ));
        }
        let (command, capabilities) = match line.iter().position(|&b| b == 0) {
            Some(nul) if request.commands.is_empty() => (&line[..nul], Some(&line[nul + 1..])),
            _ => (line, None),
        };
        if let Some(capabilities) = capabilities {
            request.capabilities = parse_capabilities(capabilities, format)?;
        }
        request.commands.push(parse_command(command, format)?);
    }
    if request.capabilities.push_options {
        request.push_options = read_push_options(reader, limits)?;
    }
    Ok(request)
}

/// Parses `<old> <new> <ref>`.
fn parse_command(line: &[u8], format: ObjectFormat) -> Result<Command, ReceivePackError> {
    let malformed = || {
        ReceivePackError::request(format!(
            "protocol error: expected old/new/ref, got '{}'",
            String::from_utf8_lossy(line)
        ))
    };
    let hex = format.hex_len();
    // The name may be empty: git takes the line, and refuses the update
    // as a funny ref name in the report.
    if line.len() < 2 * hex + 2 || line[hex] != b' ' || line[2 * hex + 1] != b' ' {
        return Err(malformed());
    }
    let id = |bytes: &[u8]| ObjectId::from_hex_in(bytes, format).map_err(|_| malformed());
    let name = &line[2 * hex + 2..];
    if name.contains(&0) {
        return Err(malformed());
    }
    Ok(Command {
        old: id(&line[..hex])?,
        new: id(&line[hex + 1..2 * hex + 1])?,
        name: name.to_vec(),
    })
}

/// Parses the space-separated capability list of the first command.
/// Unknown capabilities are ignored, as git does, so newer clients can
/// offer more.
fn parse_capabilities(list: &[u8], format: ObjectFormat) -> Result<Capabilities, ReceivePackError> {
    let mut caps = Capabilities::default();
    for word in list.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
        match word {
            b"report-status" => caps.report_status = true,
            b"report-status-v2" => caps.report_status_v2 = true,
            b"side-band-64k" => caps.side_band_64k = true,
            // It silences progress, and this server sends none.
            b"quiet" => {}
            b"atomic" => caps.atomic = true,
            b"push-options" => caps.push_options = true,
            _ => {
                if let Some(asked) = word.strip_prefix(b"object-format=") {
                    if asked != format.name().as_bytes() {
                        return Err(ReceivePackError::request(format!(
                            "the client pushes {} objects, but the repository uses {}",
                            String::from_utf8_lossy(asked),
                            format.name()
                        )));
                    }
                }
            }
        }
    }
    Ok(caps)
}

/// Reads push options up to their flush-pkt, at most
/// `refstore.maxPushOptions` of them and `refstore.maxPushOptionsSize`
/// bytes together: each is kept until the hooks have run, so their memory
/// is bounded by what the server allows rather than by what a client sends.
fn read_push_options<R: Read>(
    reader: &mut PacketReader<R>,
    limits: &Limits,
) -> Result<Vec<Vec<u8>>, ReceivePackError> {
    let mut options = Vec::new();
    let mut size = 0u64;
    loop {
        match reader.read_text()? {
            Some(Packet::Data(option)) => {
                size += option.len() as u64;
                if options.len() as u64 >= limits.max_push_options {
                    return Err(ReceivePackError::TooLarge(format!(
                        "too many push options: this server accepts at most {}",
                        limits.max_push_options
                    )));
                }
                if size > limits.max_push_options_size {
                    return Err(ReceivePackError::TooLarge(format!(
                        "the push options are larger than this server accepts ({} bytes)",
                        limits.max_push_options_size
                    )));
                }
                options.push(option.to_vec());
            }
            Some(Packet::Flush) => return Ok(options),
            _ => {
                return Err(ReceivePackError::request(
                    "protocol error: the push options ended without a flush-pkt",
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pkt_line::{Dialect, PacketWriter};

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";

    fn packets(lines: &[&[u8]], flush: bool) -> Vec<u8> {
        let mut w = PacketWriter::new(Vec::new());
        for line in lines {
            w.write_data(line).unwrap();
        }
        if flush {
            w.write_flush().unwrap();
        }
        w.into_inner().unwrap()
    }

    fn parse(bytes: &[u8]) -> Result<Request, ReceivePackError> {
        parse_within(bytes, &Limits::default())
    }

    fn parse_within(bytes: &[u8], limits: &Limits) -> Result<Request, ReceivePackError> {
        read(
            &mut PacketReader::new(bytes, Dialect::V0),
            ObjectFormat::Sha1,
            limits,
        )
    }

    #[test]
    fn parses_commands_capabilities_and_options() {
        let first = format!("{A} {B} refs/heads/main\0report-status side-band-64k atomic push-options agent=git/2.39 object-format=sha1\n");
        let second = format!("{B} {} refs/heads/old\n", "0".repeat(40));
        let mut bytes = packets(&[first.as_bytes(), second.as_bytes()], true);
        bytes.extend(packets(&[b"ci.skip\n", b"a=b"], true));
        let request = parse(&bytes).unwrap();
        assert_eq!(request.commands.len(), 2);
        assert_eq!(request.commands[0].name, b"refs/heads/main");
        assert!(request.commands[1].is_delete());
        assert!(request.expects_pack());
        let caps = request.capabilities;
        assert!(caps.report_status && caps.side_band_64k && caps.atomic && caps.push_options);
        assert!(!caps.report_status_v2);
        assert_eq!(
            request.push_options,
            vec![b"ci.skip".to_vec(), b"a=b".to_vec()]
        );
    }

    #[test]
    fn push_options_are_bounded_in_number_and_bytes() {
        let first = format!("{A} {B} refs/heads/main\0report-status push-options\n");
        let request = |options: &[&[u8]]| {
            let mut bytes = packets(&[first.as_bytes()], true);
            bytes.extend(packets(options, true));
            bytes
        };
        let limits = Limits {
            max_push_options: 2,
            max_push_options_size: 8,
            ..Limits::default()
        };
        let within = parse_within(&request(&[b"abcd", b"efgh"]), &limits).unwrap();
        assert_eq!(within.push_options.len(), 2);
        let err = parse_within(&request(&[b"a", b"b", b"c"]), &limits).unwrap_err();
        assert!(matches!(err, ReceivePackError::TooLarge(_)), "{err}");
        assert!(err.to_string().contains("at most 2"), "{err}");
        let err = parse_within(&request(&[b"abcd", b"efghi"]), &limits).unwrap_err();
        assert!(err.to_string().contains("(8 bytes)"), "{err}");
    }

    #[test]
    fn an_empty_list_is_an_empty_request() {
        assert_eq!(parse(b"0000").unwrap(), Request::default());
        assert_eq!(parse(b"").unwrap(), Request::default());
    }

    #[test]
    fn refuses_malformed_commands() {
        let cases: Vec<Vec<u8>> = vec![
            format!("{A} {B}").into_bytes(),
            format!("{A}x{B} refs/heads/a").into_bytes(),
            format!("{} {B} refs/heads/a", &A[..39]).into_bytes(),
            format!("{} {B} refs/heads/a", "g".repeat(40)).into_bytes(),
        ];
        for line in cases {
            let err = parse(&packets(&[&line], true)).unwrap_err();
            assert!(
                err.to_string()
                    .starts_with("protocol error: expected old/new/ref, got '"),
                "{err}"
            );
        }
    }

    #[test]
    fn an_empty_ref_name_is_no_protocol_error() {
        // git takes the line and refuses the update in its report.
        let line = format!("{A} {B} ");
        let request = parse(&packets(&[line.as_bytes()], true)).unwrap();
        assert_eq!(request.commands.len(), 1);
        assert!(request.commands[0].name.is_empty());
    }

    #[test]
    fn a_nul_after_the_first_line_is_no_separator() {
        let first = format!("{A} {B} refs/heads/a\0report-status");
        let second = format!("{A} {B} refs/heads/b\0atomic");
        let err = parse(&packets(&[first.as_bytes(), second.as_bytes()], true)).unwrap_err();
        assert!(err.to_string().starts_with("protocol error"), "{err}");
    }

    #[test]
    fn reads_shallow_lines_and_refuses_signed_and_unfinished_requests() {
        let shallow = format!("shallow {A}");
        let command = format!("{A} {B} refs/heads/a");
        let request = parse(&packets(&[shallow.as_bytes(), command.as_bytes()], true)).unwrap();
        assert_eq!(request.shallow.len(), 1);
        assert_eq!(request.commands.len(), 1);
        assert!(parse(&packets(&[command.as_bytes(), shallow.as_bytes()], true)).is_err());
        assert!(parse(&packets(&[b"shallow 12", command.as_bytes()], true))
            .unwrap_err()
            .to_string()
            .contains("shallow"));
        assert!(parse(&packets(&[b"push-cert\0report-status"], true))
            .unwrap_err()
            .to_string()
            .contains("signed"));
        let line = format!("{A} {B} refs/heads/a");
        assert!(parse(&packets(&[line.as_bytes()], false)).is_err());
        assert!(parse(b"00zz").is_err());
    }

    #[test]
    fn refuses_another_object_format() {
        let line = format!("{A} {B} refs/heads/a\0report-status object-format=sha256");
        let err = parse(&packets(&[line.as_bytes()], true)).unwrap_err();
        assert!(err.to_string().contains("sha256"), "{err}");
    }
}
