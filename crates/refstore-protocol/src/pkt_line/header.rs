//! The four-hex-digit length header: encoding, and strict decoding.

use super::lengths::{HEADER_LEN, MAX_PACKET_LEN};
use super::{Dialect, Error};

/// What a header announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Header {
    /// A data packet whose payload has this many bytes.
    Data(usize),
    Flush,
    Delim,
    ResponseEnd,
}

/// The header of a packet of `packet_len` bytes, header included, in the
/// lower-case hex git writes. `packet_len` must be at most [`MAX_PACKET_LEN`].
pub(crate) fn encode(packet_len: usize) -> [u8; HEADER_LEN] {
    debug_assert!(packet_len <= MAX_PACKET_LEN);
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    [12, 8, 4, 0].map(|shift| DIGITS[(packet_len >> shift) & 0xf])
}

/// Decodes a header. Hex digits of either case are accepted, as git does;
/// anything else, lengths 1 to 3 that the dialect does not allow, and lengths
/// above [`MAX_PACKET_LEN`] are errors.
pub(crate) fn decode(bytes: [u8; HEADER_LEN], dialect: Dialect) -> Result<Header, Error> {
    let mut len = 0usize;
    for byte in bytes {
        let digit = (byte as char)
            .to_digit(16)
            .ok_or(Error::BadLengthCharacter(bytes))?;
        len = len << 4 | digit as usize;
    }
    match (len, dialect) {
        (0, _) => Ok(Header::Flush),
        (1, Dialect::V2) => Ok(Header::Delim),
        (2, Dialect::V2) => Ok(Header::ResponseEnd),
        (1, Dialect::V0) => Err(Error::V2PacketOutsideV2("delim-pkt (0001)")),
        (2, Dialect::V0) => Err(Error::V2PacketOutsideV2("response-end-pkt (0002)")),
        (3, _) => Err(Error::BadLength(len)),
        (len, _) if len > MAX_PACKET_LEN => Err(Error::LengthTooLarge(len)),
        (len, _) => Ok(Header::Data(len - HEADER_LEN)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_lower_case_hex() {
        assert_eq!(&encode(0), b"0000");
        assert_eq!(&encode(0x1ab), b"01ab");
        assert_eq!(&encode(MAX_PACKET_LEN), b"fff0");
    }

    #[test]
    fn decodes_both_cases_and_rejects_the_rest() {
        assert_eq!(
            decode(*b"00aF", Dialect::V0).unwrap(),
            Header::Data(0xaf - 4)
        );
        assert_eq!(decode(*b"0004", Dialect::V0).unwrap(), Header::Data(0));
        assert_eq!(decode(*b"fff0", Dialect::V0).unwrap(), Header::Data(65516));
        assert!(matches!(
            decode(*b"fff1", Dialect::V0),
            Err(Error::LengthTooLarge(65521))
        ));
        assert!(matches!(
            decode(*b"0003", Dialect::V2),
            Err(Error::BadLength(3))
        ));
        assert!(matches!(
            decode(*b"+123", Dialect::V0),
            Err(Error::BadLengthCharacter(_))
        ));
        assert_eq!(decode(*b"0001", Dialect::V2).unwrap(), Header::Delim);
        assert!(decode(*b"0002", Dialect::V0).is_err());
    }
}
