//! Malformed input gives the specific error, with git's wording where git
//! has one (checked against git itself), and never a panic.

use std::io::Read;

use proptest::prelude::*;
use refstore_protocol::pkt_line::{Dialect, Error, Packet, PacketReader};
use refstore_testsupport::Git;

/// The first error (or the end) reading `input` to its end.
fn first_error(input: &[u8], dialect: Dialect) -> Option<Error> {
    let mut reader = PacketReader::new(input, dialect);
    loop {
        match reader.read() {
            Ok(Some(_)) => {}
            Ok(None) => return None,
            Err(err) => return Some(err),
        }
    }
}

fn message(input: &[u8], dialect: Dialect) -> String {
    first_error(input, dialect)
        .expect("input is malformed")
        .to_string()
}

#[test]
fn each_malformation_has_its_error() {
    let cases: &[(&[u8], Dialect, &str)] = &[
        (b"zz0a", Dialect::V0, "protocol error: bad line length character: zz0a"),
        (b"000g", Dialect::V2, "protocol error: bad line length character: 000g"),
        (b"+fff", Dialect::V0, "protocol error: bad line length character: +fff"),
        (b"\xff\x00ab", Dialect::V0, "protocol error: bad line length character: \\xff\\x00ab"),
        (b"0003", Dialect::V2, "protocol error: bad line length 3"),
        (
            b"fff1",
            Dialect::V0,
            "protocol error: bad line length 65521 (a packet is at most 65520 bytes, its 4-byte header included)",
        ),
        (b"FFFF", Dialect::V0, "protocol error: bad line length 65535 (a packet is at most 65520 bytes, its 4-byte header included)"),
        (b"0001", Dialect::V0, "protocol error: unexpected delim-pkt (0001) in a protocol v0/v1 stream"),
        (b"0002", Dialect::V0, "protocol error: unexpected response-end-pkt (0002) in a protocol v0/v1 stream"),
        (
            b"00",
            Dialect::V0,
            "the remote end hung up unexpectedly (after 2 of the 4 bytes of a packet's length header)",
        ),
        (
            b"0008ab",
            Dialect::V0,
            "the remote end hung up unexpectedly (after 2 of the 4 bytes of a packet's payload)",
        ),
        (b"000fERR denied\n", Dialect::V0, "remote error: denied"),
    ];
    for (input, dialect, expected) in cases {
        assert_eq!(
            &message(input, *dialect),
            expected,
            "input {:?}",
            input.escape_ascii().to_string()
        );
    }
}

#[test]
fn git_accepted_framing_is_accepted() {
    // Upper-case hex, the empty packet 0004, and v2's special packets in v2.
    let mut reader = PacketReader::new(&b"000Aabcdef00040001000000020000"[..], Dialect::V2);
    assert_eq!(reader.read().unwrap(), Some(Packet::Data(b"abcdef")));
    assert_eq!(reader.read().unwrap(), Some(Packet::Data(b"")));
    assert_eq!(reader.read().unwrap(), Some(Packet::Delim));
    assert_eq!(reader.read().unwrap(), Some(Packet::Flush));
    assert_eq!(reader.read().unwrap(), Some(Packet::ResponseEnd));
    assert_eq!(reader.read().unwrap(), Some(Packet::Flush));
    assert_eq!(reader.read().unwrap(), None);
    assert_eq!(reader.read().unwrap(), None);
}

#[test]
fn err_packets_can_be_read_as_data() {
    let mut reader =
        PacketReader::new(&b"000fERR denied\n"[..], Dialect::V0).fail_on_err_packets(false);
    assert_eq!(
        reader.read_text().unwrap(),
        Some(Packet::Data(b"ERR denied"))
    );
}

#[test]
fn peek_then_read_and_text_lines() {
    let mut reader = PacketReader::new(&b"0007a\n\n0006b\n0000"[..], Dialect::V0);
    assert_eq!(reader.peek().unwrap(), Some(Packet::Data(b"a\n\n")));
    assert_eq!(reader.peek().unwrap(), Some(Packet::Data(b"a\n\n")));
    // One LF only is stripped.
    assert_eq!(reader.read_text().unwrap(), Some(Packet::Data(b"a\n")));
    assert_eq!(reader.read_text().unwrap(), Some(Packet::Data(b"b")));
    assert_eq!(reader.peek().unwrap(), Some(Packet::Flush));
    assert_eq!(reader.read().unwrap(), Some(Packet::Flush));
    assert_eq!(reader.peek().unwrap(), None);
    assert_eq!(reader.read().unwrap(), None);
}

#[test]
fn bytes_after_the_packets_stay_in_the_stream() {
    let mut reader = PacketReader::new(&b"0008abcd0000PACK\x00\x00"[..], Dialect::V0);
    assert_eq!(reader.read().unwrap(), Some(Packet::Data(b"abcd")));
    assert_eq!(reader.read().unwrap(), Some(Packet::Flush));
    let mut rest = Vec::new();
    reader.into_inner().read_to_end(&mut rest).unwrap();
    assert_eq!(rest, b"PACK\x00\x00");
}

/// git's own message for `input` sent to upload-pack.
fn git_message(input: &[u8]) -> String {
    let repo = tempfile::tempdir().unwrap();
    let path = repo.path().to_str().unwrap();
    Git::at(repo.path()).ok(&["init", "-q", "--bare", path]);
    let out = Git::at(repo.path()).run_with(&["upload-pack", "--stateless-rpc", path], input);
    assert!(!out.status.success());
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn messages_match_git() {
    for input in [&b"zz0a"[..], b"0003", b"00", b"000axx"] {
        let ours = message(input, Dialect::V0);
        // Our EOF messages add how much was missing after git's sentence.
        let git_sentence = ours.split(" (").next().unwrap();
        let git = git_message(input);
        assert_eq!(
            git.trim_end(),
            format!("fatal: {git_sentence}"),
            "input {input:?}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Random bytes, biased towards headers: every read returns a packet
    /// that matches the input, the end, or an error — and reading stops
    /// making progress only at the end or an error.
    #[test]
    fn random_input_never_panics(
        pieces in proptest::collection::vec(prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..20),
            (0u16..0x40).prop_map(|len| format!("{len:04x}").into_bytes()),
            (0u16..=0xffff).prop_map(|len| format!("{len:04X}").into_bytes()),
            Just(b"0000".to_vec()),
            Just(b"0001".to_vec()),
            Just(b"0002".to_vec()),
        ], 0..20),
        v2 in any::<bool>(),
    ) {
        let input = pieces.concat();
        let dialect = if v2 { Dialect::V2 } else { Dialect::V0 };
        let mut reader = PacketReader::new(&input[..], dialect).fail_on_err_packets(false);
        let mut offset = 0;
        loop {
            match reader.read() {
                Ok(Some(packet)) => {
                    let header = std::str::from_utf8(&input[offset..offset + 4]).unwrap();
                    let len = usize::from_str_radix(header, 16).unwrap();
                    match packet {
                        Packet::Data(data) => {
                            prop_assert!((4..=65520).contains(&len));
                            prop_assert_eq!(data, &input[offset + 4..offset + len]);
                            offset += len;
                        }
                        Packet::Flush => { prop_assert_eq!(len, 0); offset += 4; }
                        Packet::Delim => { prop_assert!(v2 && len == 1); offset += 4; }
                        Packet::ResponseEnd => { prop_assert!(v2 && len == 2); offset += 4; }
                    }
                }
                Ok(None) => { prop_assert_eq!(offset, input.len()); break; }
                Err(err) => {
                    prop_assert!(!matches!(err, Error::Io(_)));
                    prop_assert!(err.to_string().starts_with("protocol error: ")
                        || err.to_string().starts_with("the remote end hung up unexpectedly"));
                    break;
                }
            }
        }
    }
}

/// The error a side-band stream ends in, recovered from `io::Read`.
fn sideband_error(input: &[u8]) -> (Error, Vec<u8>, Vec<u8>) {
    let mut packets = PacketReader::new(input, Dialect::V2);
    let mut progress = Vec::new();
    let mut data = Vec::new();
    let err =
        refstore_protocol::pkt_line::sideband::SidebandReader::new(&mut packets, |m: &[u8]| {
            progress.extend_from_slice(m)
        })
        .read_to_end(&mut data)
        .unwrap_err();
    (Error::from(err), data, progress)
}

#[test]
fn side_band_errors() {
    let (err, data, progress) =
        sideband_error(b"0008\x01abc0009\x02step0013\x03access denied\n0000");
    assert!(
        matches!(&err, Error::Remote(m) if m == "access denied"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "remote error: access denied");
    assert_eq!((data, progress), (b"abc".to_vec(), b"step".to_vec()));

    let cases: &[(&[u8], &str)] = &[
        (b"0004", "protocol error: no band designator"),
        (b"0006\x05x", "protocol error: bad band #5"),
        (
            b"0001",
            "protocol error: unexpected delim-pkt (0001) in a side-band stream",
        ),
        (
            b"0002",
            "protocol error: unexpected response-end-pkt (0002) in a side-band stream",
        ),
        (
            b"0006\x01x",
            "the remote end hung up unexpectedly: the side-band stream ended without a flush-pkt",
        ),
        (b"zzzz", "protocol error: bad line length character: zzzz"),
    ];
    for (input, expected) in cases {
        assert_eq!(sideband_error(input).0.to_string(), *expected);
    }
}

#[test]
fn data_of_a_packet() {
    let mut reader = PacketReader::new(&b"0006ab0000"[..], Dialect::V0);
    assert_eq!(
        reader.read().unwrap().and_then(Packet::data),
        Some(&b"ab"[..])
    );
    assert_eq!(reader.read().unwrap().and_then(Packet::data), None);
}
