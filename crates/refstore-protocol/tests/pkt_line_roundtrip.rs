//! Arbitrary packet sequences survive the writer and the reader unchanged,
//! and the writer's bytes are exactly the pkt-line encoding of what was
//! written, whatever the inner writer accepts per call.

use std::io::{self, IoSlice, Read, Write};

use proptest::prelude::*;
use refstore_protocol::pkt_line::sideband::{SidebandMode, SidebandReader, SidebandWriter};
use refstore_protocol::pkt_line::{
    Dialect, Error, Packet, PacketReader, PacketWriter, MAX_DATA_LEN,
};

/// One call on the writer.
#[derive(Debug, Clone)]
enum Op {
    Data(Vec<u8>),
    Text(String),
    Parts(Vec<Vec<u8>>),
    Fmt(u32, String),
    Flush,
    Delim,
    ResponseEnd,
    FlushBuffered,
}

impl Op {
    /// The packet a reader should return for this op, if any.
    fn expected(&self) -> Option<OwnedPacket> {
        Some(match self {
            Op::Data(data) => OwnedPacket::Data(data.clone()),
            Op::Text(text) => OwnedPacket::Data(format!("{text}\n").into_bytes()),
            Op::Parts(parts) => OwnedPacket::Data(parts.concat()),
            Op::Fmt(n, s) => OwnedPacket::Data(format!("{n:08x} {s}\n").into_bytes()),
            Op::Flush => OwnedPacket::Flush,
            Op::Delim => OwnedPacket::Delim,
            Op::ResponseEnd => OwnedPacket::ResponseEnd,
            Op::FlushBuffered => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum OwnedPacket {
    Data(Vec<u8>),
    Flush,
    Delim,
    ResponseEnd,
}

/// The pkt-line encoding of `packets`, spelled out independently of the
/// writer.
fn encode(packets: &[OwnedPacket]) -> Vec<u8> {
    let mut out = Vec::new();
    for packet in packets {
        match packet {
            OwnedPacket::Data(data) => {
                out.extend_from_slice(format!("{:04x}", data.len() + 4).as_bytes());
                out.extend_from_slice(data);
            }
            OwnedPacket::Flush => out.extend_from_slice(b"0000"),
            OwnedPacket::Delim => out.extend_from_slice(b"0001"),
            OwnedPacket::ResponseEnd => out.extend_from_slice(b"0002"),
        }
    }
    out
}

fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::collection::vec(any::<u8>(), 0..300),
        // Large payloads, up to the limit, to cross the 64 KiB buffer.
        1 => (1000..=MAX_DATA_LEN, any::<u8>()).prop_map(|(len, byte)| vec![byte; len]),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => payload().prop_map(Op::Data),
        2 => "[ -~]{0,80}".prop_map(Op::Text),
        2 => proptest::collection::vec(payload(), 0..3)
            .prop_filter("fits one packet", |parts| parts.iter().map(Vec::len).sum::<usize>() <= MAX_DATA_LEN)
            .prop_map(Op::Parts),
        2 => (any::<u32>(), "[ -~]{0,60}").prop_map(|(n, s)| Op::Fmt(n, s)),
        1 => Just(Op::Flush),
        1 => Just(Op::Delim),
        1 => Just(Op::ResponseEnd),
        1 => Just(Op::FlushBuffered),
    ]
}

fn apply<W: Write>(writer: &mut PacketWriter<W>, op: &Op) -> Result<(), Error> {
    match op {
        Op::Data(data) => writer.write_data(data),
        Op::Text(text) => writer.write_text(text),
        Op::Parts(parts) => {
            writer.write_parts(&parts.iter().map(Vec::as_slice).collect::<Vec<_>>())
        }
        Op::Fmt(n, s) => writeln!(writer, "{n:08x} {s}"),
        Op::Flush => writer.write_flush(),
        Op::Delim => writer.write_delim(),
        Op::ResponseEnd => writer.write_response_end(),
        Op::FlushBuffered => writer.flush_buffered(),
    }
}

/// An inner writer that takes at most `max` bytes per call, vectored or
/// not, so every resumption path of the writer is exercised.
struct Trickle {
    out: Vec<u8>,
    max: usize,
}

impl Write for Trickle {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(self.max);
        self.out.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let mut taken = 0;
        for buf in bufs {
            let n = buf.len().min(self.max - taken);
            self.out.extend_from_slice(&buf[..n]);
            taken += n;
            if taken == self.max {
                break;
            }
        }
        Ok(taken)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn read_all(bytes: &[u8]) -> Vec<OwnedPacket> {
    let mut reader = PacketReader::new(bytes, Dialect::V2).fail_on_err_packets(false);
    let mut packets = Vec::new();
    while let Some(packet) = reader.read().expect("the writer's output reads back") {
        packets.push(match packet {
            Packet::Data(data) => OwnedPacket::Data(data.to_vec()),
            Packet::Flush => OwnedPacket::Flush,
            Packet::Delim => OwnedPacket::Delim,
            Packet::ResponseEnd => OwnedPacket::ResponseEnd,
        });
    }
    packets
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn writer_then_reader_round_trips(ops in proptest::collection::vec(op(), 0..40), max in 1usize..100_000) {
        let mut writer = PacketWriter::new(Trickle { out: Vec::new(), max });
        for op in &ops {
            apply(&mut writer, op).unwrap();
        }
        let bytes = writer.into_inner().unwrap().out;
        let expected: Vec<OwnedPacket> = ops.iter().filter_map(Op::expected).collect();
        prop_assert_eq!(&bytes, &encode(&expected));
        prop_assert_eq!(read_all(&bytes), expected);
    }

    #[test]
    fn sideband_round_trips(
        chunks in proptest::collection::vec((any::<bool>(), payload()), 0..12),
        large in any::<bool>(),
        read_size in 1usize..70_000,
    ) {
        let mode = if large { SidebandMode::SideBand64k } else { SidebandMode::SideBand };
        let mut writer = PacketWriter::new(Vec::new());
        let mut sideband = SidebandWriter::new(&mut writer, mode);
        let (mut data, mut progress) = (Vec::new(), Vec::new());
        for (is_progress, chunk) in &chunks {
            if *is_progress {
                sideband.write_progress(chunk).unwrap();
                progress.extend_from_slice(chunk);
            } else {
                sideband.write_data(chunk).unwrap();
                data.extend_from_slice(chunk);
            }
        }
        sideband.finish().unwrap();
        let mut bytes = writer.into_inner().unwrap();
        bytes.extend_from_slice(b"trailing");

        // Every packet respects the mode's size and names a band.
        let mut packets = PacketReader::new(&bytes[..], Dialect::V0);
        while let Some(Packet::Data(packet)) = packets.read().unwrap() {
            prop_assert!(packet.len() <= mode.max_content_len() + 1);
            prop_assert!(matches!(packet[0], 1 | 2));
        }

        let mut packets = PacketReader::new(&bytes[..], Dialect::V0);
        let mut seen_progress = Vec::new();
        let mut received = Vec::new();
        let mut demux = SidebandReader::new(&mut packets, |message: &[u8]| seen_progress.extend_from_slice(message));
        let mut buf = vec![0; read_size];
        loop {
            let n = demux.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            received.extend_from_slice(&buf[..n]);
        }
        prop_assert_eq!(received, data);
        prop_assert_eq!(seen_progress, progress);
        // The demultiplexer stopped right after the flush-pkt.
        let mut rest = Vec::new();
        packets.into_inner().read_to_end(&mut rest).unwrap();
        prop_assert_eq!(rest, b"trailing");
    }
}

#[test]
fn payload_limits() {
    let mut writer = PacketWriter::new(Vec::new());
    writer.write_data(&vec![b'x'; MAX_DATA_LEN]).unwrap();
    let before = writer.buffered_len();
    let err = writer
        .write_data(&vec![b'x'; MAX_DATA_LEN + 1])
        .unwrap_err();
    assert!(matches!(err, Error::PayloadTooLong(65517)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "pkt-line payload of 65517 bytes is too long: one packet carries at most 65516 bytes; \
         split the data into several packets"
    );
    let long = "y".repeat(MAX_DATA_LEN);
    assert!(matches!(
        writeln!(writer, "{long}"),
        Err(Error::PayloadTooLong(65517))
    ));
    assert!(matches!(
        writer.write_text(&long),
        Err(Error::PayloadTooLong(65517))
    ));
    // Rejected packets leave nothing behind.
    assert_eq!(writer.buffered_len(), before);
    let bytes = writer.into_inner().unwrap();
    assert_eq!(&bytes[..4], b"fff0");
    assert_eq!(bytes.len(), 65520);
}
