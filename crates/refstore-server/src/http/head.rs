//! The head of an HTTP/1.x request (request line and header fields), read
//! with a ceiling on its size so a client cannot make the server buffer
//! without end.

use std::io::{self, BufRead};

/// The largest request head accepted, request line and fields together.
/// Git's requests have heads of a few hundred bytes.
pub const MAX_HEAD: usize = 16 << 10;

/// The most header fields one request may have.
pub const MAX_FIELDS: usize = 100;

/// A request line and its header fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request target as sent (path and query).
    pub target: String,
    /// True for HTTP/1.1 (persistent connections, chunked bodies).
    pub http11: bool,
    /// Field names and values, names as sent, values trimmed.
    pub fields: Vec<(String, String)>,
}

impl Head {
    /// The value of the first field called `name` (case-insensitive).
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// True if a comma-separated field holds `token` (case-insensitive).
    pub fn has_token(&self, name: &str, token: &str) -> bool {
        self.fields
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }
}

/// Why no head was read.
#[derive(Debug)]
pub enum HeadError {
    /// The connection ended before a request started: nothing to answer.
    Closed,
    /// The head is larger than [`MAX_HEAD`] or has more than
    /// [`MAX_FIELDS`] fields (431).
    TooLarge,
    /// Not an HTTP/1.x request head (400).
    Malformed(&'static str),
    /// Reading failed, the client was too slow among others.
    Io(io::Error),
}

/// Reads one request head. Empty lines before the request line are
/// skipped, as RFC 9112 asks of servers.
pub fn read(input: &mut impl BufRead) -> Result<Head, HeadError> {
    let mut budget = MAX_HEAD;
    let mut line = Vec::new();
    let request_line = loop {
        if !read_line(input, &mut line, &mut budget)? {
            return Err(HeadError::Closed);
        }
        if !line.is_empty() {
            break std::mem::take(&mut line);
        }
    };
    let request_line =
        std::str::from_utf8(&request_line).map_err(|_| HeadError::Malformed("request line"))?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::Malformed("request line"));
    };
    let http11 = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        _ => return Err(HeadError::Malformed("HTTP version")),
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) || target.is_empty() {
        return Err(HeadError::Malformed("request line"));
    }
    let mut fields = Vec::new();
    loop {
        if !read_line(input, &mut line, &mut budget)? {
            return Err(HeadError::Malformed("end of stream inside the head"));
        }
        if line.is_empty() {
            break;
        }
        if fields.len() == MAX_FIELDS {
            return Err(HeadError::TooLarge);
        }
        let text = std::str::from_utf8(&line).map_err(|_| HeadError::Malformed("header field"))?;
        let (name, value) = text
            .split_once(':')
            .ok_or(HeadError::Malformed("header field"))?;
        // Whitespace before the colon and folded lines are refused
        // (RFC 9112 5.1, 5.2): proxies disagree on what they mean.
        if name.is_empty()
            || !name.bytes().all(|b| b.is_ascii_graphic())
            || line[0].is_ascii_whitespace()
        {
            return Err(HeadError::Malformed("header field"));
        }
        fields.push((name.to_owned(), value.trim().to_owned()));
        line.clear();
    }
    Ok(Head {
        method: method.to_owned(),
        target: target.to_owned(),
        http11,
        fields,
    })
}

/// Reads one line into `line` without its CRLF (or bare LF), taking its
/// length from `budget`. False at the end of the stream before any byte.
fn read_line(
    input: &mut impl BufRead,
    line: &mut Vec<u8>,
    budget: &mut usize,
) -> Result<bool, HeadError> {
    line.clear();
    loop {
        let available = match input.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(HeadError::Io(e)),
        };
        if available.is_empty() {
            return if line.is_empty() {
                Ok(false)
            } else {
                Err(HeadError::Malformed("end of stream inside the head"))
            };
        }
        let (taken, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if taken > *budget {
            return Err(HeadError::TooLarge);
        }
        *budget -= taken;
        line.extend_from_slice(&available[..taken]);
        input.consume(taken);
        if done {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Head, HeadError> {
        read(&mut text.as_bytes())
    }

    #[test]
    fn a_request_head() {
        let head = parse(
            "\r\nPOST /r.git/git-upload-pack HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\nGit-Protocol:  version=2 \r\n\r\nbody",
        )
        .unwrap();
        assert_eq!(head.method, "POST");
        assert_eq!(head.target, "/r.git/git-upload-pack");
        assert!(head.http11);
        assert_eq!(head.field("git-protocol"), Some("version=2"));
        assert!(head.has_token("transfer-encoding", "chunked"));
        assert!(!head.has_token("transfer-encoding", "identity"));
        let head = parse("GET / HTTP/1.0\n\n").unwrap();
        assert!(!head.http11);
    }

    #[test]
    fn malformed_heads_are_refused() {
        for bad in [
            "GET / HTTP/2.0\r\n\r\n",
            "GET /\r\n\r\n",
            "GET  / HTTP/1.1\r\n\r\n",
            "get / HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nNo colon\r\n\r\n",
            "GET / HTTP/1.1\r\nName : v\r\n\r\n",
            "GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
            "GET / HTTP/1.1\r\nA: b\r\n",
        ] {
            assert!(
                matches!(parse(bad), Err(HeadError::Malformed(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(parse(""), Err(HeadError::Closed)));
        assert!(matches!(parse("\r\n\r\n"), Err(HeadError::Closed)));
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_give_a_head_or_an_error_within_the_limit(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..2000),
        ) {
            let mut input = &bytes[..];
            if let Ok(head) = read(&mut input) {
                let consumed = bytes.len() - input.len();
                proptest::prop_assert!(consumed <= MAX_HEAD);
                proptest::prop_assert!(head.fields.len() <= MAX_FIELDS);
                proptest::prop_assert!(!head.method.is_empty() && !head.target.is_empty());
            }
        }

        #[test]
        fn heads_written_out_read_back(
            target in "/[a-z0-9/._%?=&-]{0,60}",
            fields in proptest::collection::vec(("[A-Za-z][A-Za-z0-9-]{0,15}", "[ -~]{0,40}"), 0..10),
        ) {
            let mut text = format!("POST {target} HTTP/1.1\r\n");
            for (name, value) in &fields {
                text.push_str(&format!("{name}: {value}\r\n"));
            }
            text.push_str("\r\nbody");
            let mut input = text.as_bytes();
            let head = read(&mut input).unwrap();
            proptest::prop_assert_eq!(input, b"body");
            proptest::prop_assert_eq!(&head.target, &target);
            let expected: Vec<(String, String)> = fields
                .iter()
                .map(|(n, v)| (n.clone(), v.trim().to_owned()))
                .collect();
            proptest::prop_assert_eq!(head.fields, expected);
        }
    }

    #[test]
    fn heads_beyond_the_limits_are_too_large() {
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_HEAD));
        assert!(matches!(parse(&long), Err(HeadError::TooLarge)));
        let mut many = String::from("GET / HTTP/1.1\r\n");
        for i in 0..=MAX_FIELDS {
            many.push_str(&format!("X-{i}: y\r\n"));
        }
        many.push_str("\r\n");
        assert!(matches!(parse(&many), Err(HeadError::TooLarge)));
        // Exactly at the limit is fine.
        let mut fit = String::from("GET / HTTP/1.1\r\n");
        for i in 0..MAX_FIELDS {
            fit.push_str(&format!("X-{i}: y\r\n"));
        }
        fit.push_str("\r\n");
        assert_eq!(parse(&fit).unwrap().fields.len(), MAX_FIELDS);
    }
}
