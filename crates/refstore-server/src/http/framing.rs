//! Requests that announce their body two ways.
//!
//! A request with both `Content-Length` and `Transfer-Encoding` can be
//! read two ways, and a proxy in front may read it the other way (request
//! smuggling). hyper settles on the transfer coding and drops the length
//! before the request reaches the server; RFC 9112 6.3 also allows
//! refusing such a request, which is what this server does (400). So the
//! bytes hyper reads are watched on their way past for the header names
//! of each request head, in order.
//!
//! The watch follows the connection exactly while it can: heads follow
//! each other directly, or after a body of `Content-Length` bytes. After
//! a chunked body it stops, and the response to that request closes the
//! connection, so no later head goes unwatched.

use std::collections::VecDeque;
use std::sync::Mutex;

/// How one request head delimits its body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Framing {
    /// Both `Content-Length` and `Transfer-Encoding`.
    pub ambiguous: bool,
    /// A transfer coding: the watch stops here, the connection must
    /// close after this request.
    pub chunked: bool,
}

/// The longest prefix of a header line kept: enough for the names looked
/// for and a length's digits.
const KEEP: usize = 64;

/// The watch over one connection's incoming bytes.
#[derive(Debug)]
pub struct Scan {
    state: State,
    /// The framing of each head seen, until the request is handled.
    seen: Mutex<VecDeque<Framing>>,
}

#[derive(Debug)]
enum State {
    Head(Head),
    /// Inside a body of known length.
    Skip(u64),
    /// After a chunked body, or a head that hyper refuses anyway.
    Off,
}

#[derive(Debug, Default)]
struct Head {
    line: Vec<u8>,
    line_len: usize,
    request_line: bool,
    length: Option<Option<u64>>,
    coding: bool,
}

impl Default for Scan {
    fn default() -> Self {
        Scan {
            state: State::Head(Head::default()),
            seen: Mutex::new(VecDeque::new()),
        }
    }
}

impl Scan {
    /// Watches `bytes`, the next ones read from the client.
    pub fn observe(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            match &mut self.state {
                State::Off => return,
                State::Skip(left) => {
                    let n = bytes
                        .len()
                        .min(usize::try_from(*left).unwrap_or(usize::MAX));
                    *left -= n as u64;
                    bytes = &bytes[n..];
                    if *left == 0 {
                        self.state = State::Head(Head::default());
                    }
                }
                State::Head(head) => {
                    let byte = bytes[0];
                    bytes = &bytes[1..];
                    if byte != b'\n' {
                        if head.line.len() < KEEP {
                            head.line.push(byte);
                        }
                        head.line_len += 1;
                        continue;
                    }
                    if let Some((framing, next)) = head.end_line() {
                        self.state = next;
                        self.seen
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push_back(framing);
                    }
                }
            }
        }
    }

    /// The framing of the next request to handle, in the order the heads
    /// arrived.
    pub fn next_request(&self) -> Framing {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
            .unwrap_or_default()
    }
}

impl Head {
    /// Ends a line; once the head is complete, its framing and what
    /// follows it.
    fn end_line(&mut self) -> Option<(Framing, State)> {
        let mut line = std::mem::take(&mut self.line);
        let len = std::mem::take(&mut self.line_len);
        if line.last() == Some(&b'\r') && len <= KEEP {
            line.pop();
        }
        let empty = len == 0 || (len == 1 && line.is_empty());
        if !self.request_line {
            // Empty lines before the request line are allowed.
            self.request_line = !empty;
            return None;
        }
        if !empty {
            let colon = line.iter().position(|&b| b == b':')?;
            let (name, value) = (&line[..colon], &line[colon + 1..]);
            if name.eq_ignore_ascii_case(b"content-length") {
                let digits = std::str::from_utf8(value).ok().map(str::trim);
                let length = digits
                    .filter(|d| {
                        len <= KEEP && !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())
                    })
                    .and_then(|d| d.parse().ok());
                self.length = Some(length);
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                self.coding = true;
            }
            return None;
        }
        let framing = Framing {
            ambiguous: self.coding && self.length.is_some(),
            chunked: self.coding,
        };
        let next = match self.length {
            _ if self.coding => State::Off,
            None | Some(Some(0)) => State::Head(Head::default()),
            Some(Some(n)) => State::Skip(n),
            // hyper refuses a bad length and closes the connection.
            Some(None) => State::Off,
        };
        Some((framing, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(pieces: &[&[u8]]) -> Scan {
        let mut scan = Scan::default();
        for piece in pieces {
            scan.observe(piece);
        }
        scan
    }

    #[test]
    fn heads_are_followed_across_bodies_and_reads() {
        let wire = b"\r\nPOST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\nHost: x\r\n\r\nPOST /c HTTP/1.1\r\ncontent-length: 3\r\nTransfer-Encoding: chunked\r\n\r\n";
        // Whatever the cuts between reads.
        for cut in [1, 2, 7, 30, wire.len()] {
            let pieces: Vec<&[u8]> = wire.chunks(cut).collect();
            let scan = scan(&pieces);
            assert_eq!(scan.next_request(), Framing::default());
            assert_eq!(scan.next_request(), Framing::default());
            assert_eq!(
                scan.next_request(),
                Framing {
                    ambiguous: true,
                    chunked: true
                }
            );
        }
    }

    #[test]
    fn a_chunked_body_ends_the_watch() {
        let scan = scan(&[
            b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nContent-Length: 1\r\n\r\n",
        ]);
        assert_eq!(
            scan.next_request(),
            Framing {
                ambiguous: false,
                chunked: true
            }
        );
        assert_eq!(scan.seen.lock().unwrap().len(), 0);
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_are_watched_without_panic(
            wire in proptest::collection::vec(proptest::num::u8::ANY, 0..600),
        ) {
            let mut scan = Scan::default();
            scan.observe(&wire);
            let _ = scan.next_request();
        }
    }
}
