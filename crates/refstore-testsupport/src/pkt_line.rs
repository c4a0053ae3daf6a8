//! pkt-lines written and read by hand, independently of refstore's own
//! codec: the framing of requests tests send to a server and of the answers
//! they read back.

/// `payload` framed as one pkt-line (four hex digits of length, then the
/// payload).
pub fn pkt(payload: impl AsRef<[u8]>) -> Vec<u8> {
    let payload = payload.as_ref();
    let mut out = format!("{:04x}", payload.len() + 4).into_bytes();
    out.extend_from_slice(payload);
    out
}

/// The flush-pkt.
pub const FLUSH: &[u8] = b"0000";

/// The text of the pkt-lines between the first flush-pkt of `stream` and
/// the next, each without its trailing white space: a receive-pack
/// report, after the advertisement.
pub fn after_first_flush(stream: &[u8]) -> Vec<String> {
    let mut bytes = stream;
    let mut lines = Vec::new();
    let mut flushes = 0;
    while bytes.len() >= 4 {
        let len = usize::from_str_radix(std::str::from_utf8(&bytes[..4]).unwrap(), 16).unwrap();
        if len == 0 {
            flushes += 1;
            bytes = &bytes[4..];
            continue;
        }
        if flushes == 1 {
            lines.push(
                String::from_utf8_lossy(&bytes[4..len])
                    .trim_end()
                    .to_owned(),
            );
        }
        bytes = &bytes[len..];
    }
    lines
}
