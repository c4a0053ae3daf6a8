//! Writing HTTP/1.x responses: fixed-length bodies, and streamed bodies
//! in chunked transfer coding (HTTP/1.1) or delimited by closing the
//! connection (HTTP/1.0).

use super::head::Head;
use std::io::{self, Write};

/// The answer to one request, as it is being written.
pub struct Exchange<'a, W: Write> {
    out: &'a mut W,
    head_only: bool,
    http11: bool,
    expects_continue: bool,
    /// The status sent (0 until a response starts).
    pub status: u16,
    /// Body bytes sent, for the access log.
    pub sent: u64,
    /// False once the response can only end by closing the connection.
    reusable: bool,
}

/// The reason phrase of the statuses the server sends.
fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

impl<'a, W: Write> Exchange<'a, W> {
    /// The response to `head`, written to `out`.
    pub fn new(out: &'a mut W, head: &Head) -> Self {
        // HTTP/1.0 clients get one request per connection.
        let wants_keep_alive = head.http11 && !head.has_token("connection", "close");
        Exchange {
            out,
            head_only: head.method == "HEAD",
            http11: head.http11,
            expects_continue: head.http11 && head.has_token("expect", "100-continue"),
            status: 0,
            sent: 0,
            reusable: wants_keep_alive,
        }
    }

    /// A response for a request whose head could not be read: always
    /// closes the connection.
    pub fn without_head(out: &'a mut W) -> Self {
        Exchange {
            out,
            head_only: false,
            http11: true,
            expects_continue: false,
            status: 0,
            sent: 0,
            reusable: false,
        }
    }

    /// True if the connection may carry another request once the body of
    /// this one has been read.
    pub fn reusable(&self) -> bool {
        self.reusable && self.status != 0
    }

    /// The connection must close after this response.
    pub fn close_after(&mut self) {
        self.reusable = false;
    }

    /// Tells a client that waits for it (`Expect: 100-continue`) to send
    /// its body. Call before reading a body.
    pub fn proceed(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.expects_continue) {
            self.out.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
            self.out.flush()?;
        }
        Ok(())
    }

    fn start(
        &mut self,
        status: u16,
        headers: &[(&str, &str)],
        length: Option<u64>,
    ) -> io::Result<()> {
        self.status = status;
        if self.expects_continue {
            // The body was never asked for: it is still on the wire.
            self.reusable = false;
        }
        let mut text = format!(
            "HTTP/1.{} {status} {}\r\nServer: refstore\r\nDate: {}\r\n",
            u8::from(self.http11),
            reason(status),
            http_date(std::time::SystemTime::now())
        );
        for (name, value) in headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        match length {
            Some(n) => text.push_str(&format!("Content-Length: {n}\r\n")),
            None if self.http11 && !self.head_only => {
                text.push_str("Transfer-Encoding: chunked\r\n")
            }
            None => self.reusable = false,
        }
        if !self.reusable {
            text.push_str("Connection: close\r\n");
        }
        text.push_str("\r\n");
        self.out.write_all(text.as_bytes())
    }

    /// A complete response with a body of known length.
    pub fn respond(
        &mut self,
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<()> {
        self.start(status, headers, Some(body.len() as u64))?;
        if !self.head_only {
            self.out.write_all(body)?;
            self.sent = body.len() as u64;
        }
        self.out.flush()
    }

    /// A short plain-text answer (errors, refusals).
    pub fn text(&mut self, status: u16, message: &str, extra: &[(&str, &str)]) -> io::Result<()> {
        let mut headers = vec![("Content-Type", "text/plain; charset=utf-8")];
        headers.extend_from_slice(extra);
        self.respond(status, &headers, format!("{message}\n").as_bytes())
    }

    /// A 200 response whose body `produce` writes as it goes. If `produce`
    /// fails, the body is cut short (no last chunk) so the client sees
    /// the failure, and the connection closes.
    pub fn stream(
        &mut self,
        headers: &[(&str, &str)],
        produce: impl FnOnce(&mut dyn Write) -> Result<(), String>,
    ) -> Result<(), String> {
        self.start(200, headers, None).map_err(|e| e.to_string())?;
        if self.head_only {
            return self.out.flush().map_err(|e| e.to_string());
        }
        let chunked = self.http11;
        let mut body = Body {
            out: &mut *self.out,
            chunked,
            sent: 0,
        };
        let result = {
            let mut buffered = io::BufWriter::with_capacity(64 << 10, &mut body);
            produce(&mut buffered).and_then(|()| buffered.flush().map_err(|e| e.to_string()))
        };
        self.sent = body.sent;
        if result.is_err() {
            self.reusable = false;
            let _ = self.out.flush();
            return result;
        }
        if chunked {
            self.out
                .write_all(b"0\r\n\r\n")
                .map_err(|e| e.to_string())?;
        }
        self.out.flush().map_err(|e| e.to_string())
    }
}

/// `time` as an HTTP date (RFC 9110 5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`.
fn http_date(time: std::time::SystemTime) -> String {
    let seconds = time
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, of_day) = (seconds / 86_400, seconds % 86_400);
    // 1970-01-01 was a Thursday.
    let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][(days % 7) as usize];
    // Days to civil date, after Howard Hinnant's algorithm: eras of 400
    // years starting on March 1st.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ][(month - 1) as usize];
    format!(
        "{weekday}, {day:02} {month} {year} {:02}:{:02}:{:02} GMT",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}

/// A streamed body: each write is one chunk (or raw bytes for HTTP/1.0).
struct Body<'a, W: Write> {
    out: &'a mut W,
    chunked: bool,
    sent: u64,
}

impl<W: Write> Write for Body<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.chunked {
            write!(self.out, "{:x}\r\n", buf.len())?;
            self.out.write_all(buf)?;
            self.out.write_all(b"\r\n")?;
        } else {
            self.out.write_all(buf)?;
        }
        self.sent += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(method: &str, http11: bool, fields: &[(&str, &str)]) -> Head {
        Head {
            method: method.into(),
            target: "/".into(),
            http11,
            fields: fields
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn streamed_bodies_are_chunked_for_http11_and_close_delimited_for_http10() {
        let mut out = Vec::new();
        let h = head("GET", true, &[]);
        let mut ex = Exchange::new(&mut out, &h);
        ex.stream(&[("Content-Type", "x")], |w| {
            w.write_all(b"hello").map_err(|e| e.to_string())
        })
        .unwrap();
        assert!(ex.reusable());
        assert_eq!(ex.sent, 5);
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("Transfer-Encoding: chunked\r\n"));
        assert!(
            text.ends_with("\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
            "{text:?}"
        );

        let mut out = Vec::new();
        let h = head("GET", false, &[]);
        let mut ex = Exchange::new(&mut out, &h);
        ex.stream(&[], |w| w.write_all(b"hello").map_err(|e| e.to_string()))
            .unwrap();
        assert!(!ex.reusable());
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with("\r\n\r\nhello"), "{text:?}");
    }

    #[test]
    fn dates_are_written_as_http_wants_them() {
        use std::time::{Duration, UNIX_EPOCH};
        let at = |s| http_date(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(at(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(at(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        // 2100 is no leap year.
        assert_eq!(at(4_107_542_399), "Sun, 28 Feb 2100 23:59:59 GMT");
        assert_eq!(at(4_107_542_400), "Mon, 01 Mar 2100 00:00:00 GMT");
    }

    #[test]
    fn a_failing_stream_has_no_last_chunk_and_closes() {
        let mut out = Vec::new();
        let h = head("GET", true, &[]);
        let mut ex = Exchange::new(&mut out, &h);
        let err = ex
            .stream(&[], |w| {
                w.write_all(b"part").unwrap();
                Err("broken".to_owned())
            })
            .unwrap_err();
        assert_eq!(err, "broken");
        assert!(!ex.reusable());
        let text = String::from_utf8(out).unwrap();
        assert!(!text.ends_with("0\r\n\r\n"), "{text:?}");
    }

    #[test]
    fn continue_only_when_asked_and_unread_bodies_close() {
        let mut out = Vec::new();
        let h = head("POST", true, &[("Expect", "100-continue")]);
        let mut ex = Exchange::new(&mut out, &h);
        ex.text(401, "no", &[]).unwrap();
        assert!(!ex.reusable(), "the unsent body would be read as a request");
        assert!(String::from_utf8(out)
            .unwrap()
            .starts_with("HTTP/1.1 401 Unauthorized"));

        let mut out = Vec::new();
        let mut ex = Exchange::new(&mut out, &h);
        ex.proceed().unwrap();
        ex.text(200, "ok", &[]).unwrap();
        assert!(ex.reusable());
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"));
    }
}
