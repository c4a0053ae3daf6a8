//! The lines of a client's request that both protocol versions share:
//! object ids in `want` and `have` lines, and the pack options a client can
//! ask for.

use super::UploadPackError;
use crate::pkt_line::sideband::SidebandMode;
use refstore_refs::{ObjectFormat, ObjectId};

/// How far the server acknowledges `have` lines in protocol v0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum MultiAck {
    /// One `ACK` at the end, or `NAK`.
    #[default]
    None,
    /// `multi_ack`: `ACK <id> continue` for each common object.
    Continue,
    /// `multi_ack_detailed`: `ACK <id> common` and `ACK <id> ready`.
    Detailed,
}

/// The options a client chose among the offered capabilities.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ClientOptions {
    /// Acknowledgement mode (v0).
    pub multi_ack: MultiAck,
    /// Pack data in side-band packets.
    pub sideband: Option<SidebandMode>,
    /// No progress messages.
    pub no_progress: bool,
    /// Annotated tags pointing into the pack are sent too.
    pub include_tag: bool,
    /// The pack may be thin: deltas against objects the client has.
    pub thin_pack: bool,
    /// The client reads offset deltas (`ofs-delta`); without it a delta
    /// names its base by id, as git's pack-objects writes it then.
    pub ofs_delta: bool,
    /// The client asked for `filter` (v0), so it may send a `filter` line.
    pub filter: bool,
    /// `no-done` (v0): once the server has said it is ready, the pack
    /// follows the end of that batch without waiting for `done`.
    pub no_done: bool,
}

impl ClientOptions {
    /// Applies one capability word of a v0 `want` line. Words the server
    /// did not offer but that need nothing from it (`agent=`,
    /// `deepen-relative`, ...) are accepted and ignored, as git does.
    pub fn apply_v0(&mut self, word: &[u8], format: ObjectFormat) -> Result<(), UploadPackError> {
        match word {
            b"multi_ack" => {
                if self.multi_ack == MultiAck::None {
                    self.multi_ack = MultiAck::Continue;
                }
            }
            b"multi_ack_detailed" => self.multi_ack = MultiAck::Detailed,
            b"side-band" => {
                if self.sideband.is_none() {
                    self.sideband = Some(SidebandMode::SideBand);
                }
            }
            b"side-band-64k" => self.sideband = Some(SidebandMode::SideBand64k),
            b"filter" => self.filter = true,
            b"no-done" => self.no_done = true,
            _ => return self.apply_common(word, format),
        }
        Ok(())
    }

    /// Applies an option every version shares.
    pub fn apply_common(
        &mut self,
        word: &[u8],
        format: ObjectFormat,
    ) -> Result<(), UploadPackError> {
        match word {
            b"thin-pack" => self.thin_pack = true,
            b"ofs-delta" => self.ofs_delta = true,
            b"no-progress" => self.no_progress = true,
            b"include-tag" => self.include_tag = true,
            _ => {
                if let Some(name) = word.strip_prefix(b"object-format=") {
                    check_format(name, format)?;
                }
            }
        }
        Ok(())
    }
}

/// Fails unless the client's object format is the repository's.
pub(crate) fn check_format(name: &[u8], format: ObjectFormat) -> Result<(), UploadPackError> {
    if name == format.name().as_bytes() {
        return Ok(());
    }
    Err(UploadPackError::request(format!(
        "upload-pack: the client uses object format '{}' but the repository uses '{}'",
        String::from_utf8_lossy(name),
        format.name()
    )))
}

/// The id at the start of `rest` (the text after `want ` or `have `),
/// and what follows it.
pub(crate) fn parse_id<'a>(
    line: &[u8],
    rest: &'a [u8],
    format: ObjectFormat,
) -> Result<(ObjectId, &'a [u8]), UploadPackError> {
    let hex_len = format.hex_len();
    let invalid = || {
        UploadPackError::request(format!(
            "upload-pack: protocol error, expected to get an object id, not '{}'",
            String::from_utf8_lossy(line)
        ))
    };
    if rest.len() < hex_len || rest.get(hex_len).is_some_and(|&b| b != b' ') {
        return Err(invalid());
    }
    let id = ObjectId::from_hex_in(&rest[..hex_len], format).map_err(|_| invalid())?;
    Ok((id, rest.get(hex_len + 1..).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn ids_are_full_lower_or_upper_hex() {
        let line = format!("want {HEX} side-band-64k");
        let (id, rest) =
            parse_id(line.as_bytes(), &line.as_bytes()[5..], ObjectFormat::Sha1).unwrap();
        assert_eq!(id.to_hex(), HEX);
        assert_eq!(rest, b"side-band-64k");
        for bad in ["want 0123", "want xyz", &format!("want {HEX}x")] {
            let err =
                parse_id(bad.as_bytes(), &bad.as_bytes()[5..], ObjectFormat::Sha1).unwrap_err();
            assert!(
                err.to_string().contains("expected to get an object id"),
                "{err}"
            );
        }
    }

    #[test]
    fn capabilities_choose_the_best_mode() {
        let mut options = ClientOptions::default();
        for word in [
            "multi_ack",
            "multi_ack_detailed",
            "side-band-64k",
            "side-band",
            "agent=x",
        ] {
            options
                .apply_v0(word.as_bytes(), ObjectFormat::Sha1)
                .unwrap();
        }
        assert_eq!(options.multi_ack, MultiAck::Detailed);
        assert_eq!(options.sideband, Some(SidebandMode::SideBand64k));
        assert!(options
            .apply_v0(b"object-format=sha256", ObjectFormat::Sha1)
            .is_err());
    }
}
