//! The writer's buffering policy, observed on the inner writer: bytes reach
//! it only at flush-pkts, response-ends, explicit flushes, or when 64 KiB
//! would be exceeded — so a large advertisement is a few hundred writes.

use std::io::{self, IoSlice, Write};

use refstore_protocol::pkt_line::sideband::{SidebandMode, SidebandWriter};
use refstore_protocol::pkt_line::{PacketWriter, WRITE_BUFFER_LIMIT};

/// Records every call the packet writer makes.
#[derive(Default)]
struct Counting {
    bytes: Vec<u8>,
    /// Size of each `write`/`write_vectored` call.
    writes: Vec<usize>,
    flushes: usize,
}

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        self.writes.push(buf.len());
        Ok(buf.len())
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let n = bufs.iter().map(|buf| buf.len()).sum();
        for buf in bufs {
            self.bytes.extend_from_slice(buf);
        }
        self.writes.push(n);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flushes += 1;
        Ok(())
    }
}

fn oid(n: usize) -> String {
    format!("{:040x}", n.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

#[test]
fn advertisement_of_100k_refs_takes_few_writes() {
    let mut writer = PacketWriter::new(Counting::default());
    let mut expected = Vec::new();
    for n in 0..100_000 {
        let line = format!("{} refs/heads/branch-{n:06}\n", oid(n));
        expected.extend_from_slice(format!("{:04x}", line.len() + 4).as_bytes());
        expected.extend_from_slice(line.as_bytes());
        writeln!(writer, "{} refs/heads/branch-{n:06}", oid(n)).unwrap();
    }
    writer.write_flush().unwrap();
    expected.extend_from_slice(b"0000");
    let inner = writer.into_inner().unwrap();

    assert_eq!(inner.bytes, expected);
    let total = expected.len();
    // The acceptance bound, and the tighter one a 64 KiB buffer gives.
    assert!(
        inner.writes.len() <= total / (16 * 1024) + 3,
        "{} writes",
        inner.writes.len()
    );
    assert!(
        inner.writes.len() <= total / WRITE_BUFFER_LIMIT + 2,
        "{} writes",
        inner.writes.len()
    );
    assert!(inner.writes.iter().all(|&n| n <= WRITE_BUFFER_LIMIT));
    eprintln!("{total} bytes in {} writes", inner.writes.len());
}

#[test]
fn advertisement_from_parts_takes_few_writes() {
    let mut writer = PacketWriter::new(Counting::default());
    for n in 0..100_000 {
        let (oid, name) = (oid(n), format!("refs/heads/branch-{n:06}"));
        writer
            .write_parts(&[oid.as_bytes(), b" ", name.as_bytes(), b"\n"])
            .unwrap();
    }
    writer.write_flush().unwrap();
    let inner = writer.into_inner().unwrap();
    assert!(inner.writes.len() <= inner.bytes.len() / WRITE_BUFFER_LIMIT + 2);
}

#[test]
fn nothing_is_written_before_the_message_ends() {
    let mut writer = PacketWriter::new(Counting::default());
    writer.write_text("version 2").unwrap();
    writer.write_data(b"ls-refs").unwrap();
    writer.write_delim().unwrap();
    writer.write_text("peel").unwrap();
    assert!(writer.get_ref().writes.is_empty());
    assert_eq!(writer.buffered_len(), 0x000e + 0x000b + 4 + 0x0009);

    writer.write_flush().unwrap();
    assert_eq!(writer.get_ref().writes.len(), 1);
    assert_eq!(writer.get_ref().flushes, 1);
    assert_eq!(
        writer.get_ref().bytes,
        b"000eversion 2\n000bls-refs00010009peel\n0000"
    );

    writer.write_text("x").unwrap();
    writer.write_response_end().unwrap();
    assert_eq!(writer.get_ref().writes, [42, 10]);
    writer.write_text("y").unwrap();
    writer.flush_buffered().unwrap();
    assert_eq!(writer.get_ref().writes, [42, 10, 6]);
    assert_eq!(writer.get_ref().flushes, 3);
    writer.flush_buffered().unwrap();
    assert_eq!(
        writer.get_ref().writes.len(),
        3,
        "an empty buffer is not written"
    );
}

#[test]
fn a_full_buffer_is_written_before_the_packet_that_overflows_it() {
    let mut writer = PacketWriter::new(Counting::default());
    // Six packets of 10000 bytes fit; the seventh would pass 64 KiB.
    for _ in 0..7 {
        writer.write_data(&[b'a'; 9996]).unwrap();
    }
    assert_eq!(writer.get_ref().writes, [60000]);
    assert_eq!(writer.buffered_len(), 10000);

    // A large packet that does not fit leaves with the pending bytes in one
    // write, straight from the caller's slice.
    writer.write_data(&[b'b'; 59996]).unwrap();
    assert_eq!(writer.get_ref().writes, [60000, 70000]);
    assert_eq!(writer.buffered_len(), 0);

    // A formatted packet, whose size is known only once written, too.
    for _ in 0..6 {
        writer.write_data(&[b'a'; 9996]).unwrap();
    }
    writeln!(writer, "{}", "c".repeat(35000)).unwrap();
    assert_eq!(writer.get_ref().writes, [60000, 70000, 60000]);
    assert_eq!(writer.buffered_len(), 35005);
    assert_eq!(writer.get_ref().flushes, 0);
}

#[test]
fn pack_data_on_side_band_is_not_buffered_twice() {
    let pack: Vec<u8> = (0..1_000_000u32).map(|n| (n * 7 % 251) as u8).collect();
    let mut writer = PacketWriter::new(Counting::default());
    let mut sideband = SidebandWriter::new(&mut writer, SidebandMode::SideBand64k);
    sideband
        .write_progress(b"Counting objects: 100% (3/3), done.\n")
        .unwrap();
    io::copy(&mut &pack[..], &mut sideband).unwrap();
    sideband.finish().unwrap();
    let inner = writer.into_inner().unwrap();

    // One vectored write per full packet, each carrying the packet before
    // it in the buffer plus the chunk straight from the caller.
    let packets = pack.len().div_ceil(65515);
    assert!(
        inner.writes.len() <= packets + 2,
        "{} writes for {packets} packets",
        inner.writes.len()
    );
    let mut demuxed = Vec::new();
    let mut packets = refstore_protocol::pkt_line::PacketReader::new(
        &inner.bytes[..],
        refstore_protocol::pkt_line::Dialect::V0,
    );
    let mut progress = Vec::new();
    io::copy(
        &mut refstore_protocol::pkt_line::sideband::SidebandReader::new(
            &mut packets,
            |m: &[u8]| progress.extend_from_slice(m),
        ),
        &mut demuxed,
    )
    .unwrap();
    assert_eq!(demuxed, pack);
    assert_eq!(progress, b"Counting objects: 100% (3/3), done.\n");
}
