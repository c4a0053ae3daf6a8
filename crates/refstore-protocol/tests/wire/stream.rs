//! A server's answer cut into what the comparison looks at: every
//! pkt-line with its bytes, the special packets, and the side-band
//! sections, whose pack data is compared by the objects it holds and
//! whose progress only by being there.

use std::fmt;

/// One part of an answer.
#[derive(Clone, PartialEq, Eq)]
pub enum Item {
    /// A data pkt-line: its payload (the length header follows from it).
    Line(Vec<u8>),
    Flush,
    Delim,
    ResponseEnd,
    /// Consecutive side-band packets.
    Sideband(Sideband),
    /// A pack sent without side-band: everything after the pkt-lines.
    RawPack(Vec<u8>),
    /// Bytes that are no pkt-line, up to the end.
    Garbage(Vec<u8>),
}

/// Consecutive side-band packets, by band.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Sideband {
    /// Band 1, concatenated: how it is cut into packets is no difference.
    pub data: Vec<u8>,
    /// Whether band 2 (progress) carried anything.
    pub progress: bool,
    /// Band 3 packets (fatal errors).
    pub errors: Vec<Vec<u8>>,
}

impl fmt::Debug for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Line(line) => write!(
                f,
                "{:04x}{:?}",
                line.len() + 4,
                String::from_utf8_lossy(line)
            ),
            Item::Flush => write!(f, "0000"),
            Item::Delim => write!(f, "0001"),
            Item::ResponseEnd => write!(f, "0002"),
            Item::Sideband(band) => write!(
                f,
                "sideband(data {} bytes{}, progress {}, errors {:?})",
                band.data.len(),
                if band.data.starts_with(b"PACK") {
                    " of pack"
                } else {
                    ""
                },
                band.progress,
                band.errors
                    .iter()
                    .map(|e| String::from_utf8_lossy(e))
                    .collect::<Vec<_>>()
            ),
            Item::RawPack(pack) => write!(f, "raw pack of {} bytes", pack.len()),
            Item::Garbage(bytes) => write!(f, "garbage {:?}", String::from_utf8_lossy(bytes)),
        }
    }
}

/// Cuts `bytes` into items. With `sideband`, data packets whose first
/// byte is 1, 2 or 3 are side-band packets (no line of the protocol
/// starts with such a byte).
pub fn parse(bytes: &[u8], sideband: bool) -> Vec<Item> {
    let mut items = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        if rest.starts_with(b"PACK") {
            items.push(Item::RawPack(rest.to_vec()));
            break;
        }
        let len = rest
            .get(..4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| usize::from_str_radix(h, 16).ok());
        let item = match len {
            Some(0) => Item::Flush,
            Some(1) => Item::Delim,
            Some(2) => Item::ResponseEnd,
            Some(len) if len >= 4 && len <= rest.len() => {
                let payload = &rest[4..len];
                match payload.first() {
                    Some(&band @ 1..=3) if sideband => {
                        if !matches!(items.last(), Some(Item::Sideband(_))) {
                            items.push(Item::Sideband(Sideband::default()));
                        }
                        let Some(Item::Sideband(section)) = items.last_mut() else {
                            unreachable!()
                        };
                        match band {
                            1 => section.data.extend_from_slice(&payload[1..]),
                            2 => section.progress = true,
                            _ => section.errors.push(payload[1..].to_vec()),
                        }
                        rest = &rest[len..];
                        continue;
                    }
                    _ => Item::Line(payload.to_vec()),
                }
            }
            _ => {
                items.push(Item::Garbage(rest.to_vec()));
                break;
            }
        };
        rest = &rest[len.map_or(4, |l| l.max(4))..];
        items.push(item);
    }
    items
}
