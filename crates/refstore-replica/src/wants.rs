//! The objects a fetch request wants (`want <id>` lines, in protocol v0
//! and v2 alike), read before upload-pack runs so that a node can fetch
//! what it missed from its peers first.

use refstore_protocol::pkt_line::{Dialect, PacketReader};
use refstore_refs::{ObjectFormat, ObjectId};

/// The ids of the request's `want` lines; what cannot be read is left to
/// upload-pack to refuse.
pub fn wanted(request: &[u8], format: ObjectFormat) -> Vec<ObjectId> {
    let mut reader = PacketReader::new(request, Dialect::V2).fail_on_err_packets(false);
    let mut ids = Vec::new();
    while let Ok(Some(packet)) = reader.read() {
        let Some(line) = packet.without_lf().data() else {
            continue;
        };
        let Some(rest) = line.strip_prefix(b"want ") else {
            continue;
        };
        let hex = rest.get(..format.hex_len()).unwrap_or(rest);
        if let Ok(id) = ObjectId::from_hex_in(hex, format) {
            ids.push(id);
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn want_lines_of_both_protocols() {
        let a = "1".repeat(40);
        let b = "2".repeat(40);
        let request = [
            format!("{:04x}want {a} ofs-delta\n", 4 + 5 + 40 + 11),
            format!("{:04x}want {b}\n", 4 + 5 + 40 + 1),
            "0000".to_owned(),
            "0009done\n".to_owned(),
        ]
        .concat();
        let ids = wanted(request.as_bytes(), ObjectFormat::Sha1);
        let expected: Vec<ObjectId> = [&a, &b]
            .iter()
            .map(|h| ObjectId::from_hex(h.as_bytes()).unwrap())
            .collect();
        assert_eq!(ids, expected);
        let v2 = [
            format!("{:04x}command=fetch\n", 4 + 14),
            "0001".to_owned(),
            format!("{:04x}want {a}\n", 4 + 5 + 40 + 1),
            "0000".to_owned(),
        ]
        .concat();
        assert_eq!(wanted(v2.as_bytes(), ObjectFormat::Sha1), expected[..1]);
        assert!(wanted(b"garbage", ObjectFormat::Sha1).is_empty());
    }
}
