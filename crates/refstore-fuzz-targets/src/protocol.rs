//! Targets for the wire protocol: pkt-line framing and the requests of
//! upload-pack (v0 and v2) and receive-pack.

use crate::checks::{check_message, FORMATS};
use refstore_protocol::fuzzing::{self, ReceiveRequest, V0Request, V2Command};
use refstore_protocol::pkt_line::{Dialect, Error, Packet, PacketReader, PacketWriter};

/// pkt-line reader, in both dialects. Round trip: the packets read,
/// written again, are the bytes read (header hex in lower case).
pub fn pkt_line(data: &[u8]) {
    for dialect in [Dialect::V0, Dialect::V2] {
        for fail_on_err in [false, true] {
            let mut reader = PacketReader::new(data, dialect).fail_on_err_packets(fail_on_err);
            let mut writer = PacketWriter::new(Vec::new());
            loop {
                match reader.read() {
                    Ok(None) => break,
                    Ok(Some(Packet::Data(payload))) => writer.write_data(payload).unwrap(),
                    Ok(Some(Packet::Flush)) => writer.write_flush().unwrap(),
                    Ok(Some(Packet::Delim)) => writer.write_delim().unwrap(),
                    Ok(Some(Packet::ResponseEnd)) => writer.write_response_end().unwrap(),
                    Err(e) => {
                        check_message(&e.to_string());
                        break;
                    }
                }
            }
            let written = writer.into_inner().unwrap();
            let remaining = reader.into_inner();
            // An error may stop the reader inside a packet: the bytes of
            // the whole packets read come first either way.
            let read = &data[..data.len() - remaining.len()];
            assert!(written.len() <= read.len());
            assert!(
                same_packets(&written, &read[..written.len()]),
                "packets re-encode differently"
            );
        }
    }
}

/// Equal, except that a header's hex digits may differ in case.
fn same_packets(written: &[u8], read: &[u8]) -> bool {
    let mut at = 0;
    while at < written.len() {
        let header = &written[at..at + 4];
        if !header.eq_ignore_ascii_case(&read[at..at + 4]) {
            return false;
        }
        let len = usize::from_str_radix(std::str::from_utf8(header).unwrap(), 16).unwrap();
        let end = at + len.max(4);
        if written[at + 4..end] != read[at + 4..end] {
            return false;
        }
        at = end;
    }
    true
}

/// upload-pack v2 command requests. Round trip: the requests parsed,
/// written again, parse to the same requests.
pub fn upload_pack_v2(data: &[u8]) {
    for format in FORMATS {
        match fuzzing::upload_pack_v2(data, format) {
            Ok(commands) => {
                // A line of the largest size has no room for the LF added.
                if let Ok(bytes) = encode_v2(&commands) {
                    let again = fuzzing::upload_pack_v2(&bytes, format)
                        .expect("a re-encoded v2 request parses");
                    assert_eq!(again, commands);
                }
            }
            Err(message) => check_message(&message),
        }
    }
}

fn encode_v2(commands: &[V2Command]) -> Result<Vec<u8>, Error> {
    let mut out = PacketWriter::new(Vec::new());
    for command in commands {
        out.write_parts(&[b"command=", &command.command, b"\n"])?;
        out.write_delim()?;
        for argument in &command.arguments {
            out.write_parts(&[argument, b"\n"])?;
        }
        out.write_flush()?;
    }
    out.into_inner()
}

/// upload-pack v0 wants, capabilities, haves and done. Round trip as for
/// v2.
pub fn upload_pack_v0(data: &[u8]) {
    for format in FORMATS {
        match fuzzing::upload_pack_v0(data, format) {
            Ok(request) => {
                let bytes = encode_v0(&request).expect("ids fit in a packet");
                let again = fuzzing::upload_pack_v0(&bytes, format)
                    .expect("a re-encoded v0 request parses");
                assert_eq!(again, request);
            }
            Err(message) => check_message(&message),
        }
    }
}

fn encode_v0(request: &V0Request) -> Result<Vec<u8>, Error> {
    let mut out = PacketWriter::new(Vec::new());
    if request.wants.is_empty() {
        return out.into_inner();
    }
    for want in &request.wants {
        out.write_text(&format!("want {want}"))?;
    }
    out.write_flush()?;
    for have in &request.haves {
        out.write_text(&format!("have {have}"))?;
    }
    if request.done {
        out.write_text("done")?;
    }
    out.into_inner()
}

/// receive-pack command list, capabilities and push options. Round trip
/// as for upload-pack.
pub fn receive_pack(data: &[u8]) {
    for format in FORMATS {
        match fuzzing::receive_pack(data, format) {
            Ok(request) => {
                // A line of the largest size has no room for the LF added.
                if let Ok(bytes) = encode_receive(&request) {
                    let again = fuzzing::receive_pack(&bytes, format)
                        .expect("a re-encoded receive-pack request parses");
                    assert_eq!(again, request);
                }
                assert_eq!(
                    request.expects_pack,
                    request
                        .commands
                        .iter()
                        .any(|c| c.new.bytes().any(|b| b != b'0'))
                );
            }
            Err(message) => check_message(&message),
        }
    }
}

fn encode_receive(request: &ReceiveRequest) -> Result<Vec<u8>, Error> {
    let mut out = PacketWriter::new(Vec::new());
    for (i, command) in request.commands.iter().enumerate() {
        let head = format!("{} {} ", command.old, command.new);
        let capabilities = match i {
            0 => format!("\0{}", request.capabilities.join(" ")),
            _ => String::new(),
        };
        // The LF keeps a name's own trailing LF: the reader removes one.
        out.write_parts(&[
            head.as_bytes(),
            &command.name,
            capabilities.as_bytes(),
            b"\n",
        ])?;
    }
    if request.commands.is_empty() {
        return out.into_inner();
    }
    out.write_flush()?;
    if request.capabilities.contains(&"push-options") {
        for option in &request.push_options {
            out.write_parts(&[option, b"\n"])?;
        }
        out.write_flush()?;
    }
    out.into_inner()
}
