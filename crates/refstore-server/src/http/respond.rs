//! Responses: short ones with their length, streamed ones fed by a
//! service through a channel, and the access-log line and metrics of each
//! request once its response has gone out (or the client went away).

use super::pace::Active;
use crate::metrics::{Metrics, Transport};
use hyper::body::{Body, Bytes, Frame, SizeHint};
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE, SERVER};
use hyper::{Response, StatusCode};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::sync::mpsc;

/// What the access log says about a request, written when the response
/// is done.
pub struct LogLine {
    /// The client's address.
    pub client: Option<SocketAddr>,
    /// The request line's method.
    pub method: String,
    /// The request line's target (path and query).
    pub target: String,
    /// The authenticated user.
    pub user: Option<String>,
    /// The service, for metrics (`-` for requests routed nowhere).
    pub service: &'static str,
    /// When the request's head was read.
    pub started: Instant,
    /// Request body bytes received.
    pub received: Arc<AtomicU64>,
    /// Where to count the request.
    pub metrics: Arc<Metrics>,
    /// Marks the connection busy until the response is done.
    pub _busy: Active,
}

/// Writes the access-log line of a request. Only the request line's
/// method and target, never a header: the Authorization header carries a
/// password.
pub fn log(
    client: Option<SocketAddr>,
    method: &str,
    target: &str,
    status: u16,
    user: Option<&str>,
    sent: u64,
    started: Instant,
) {
    tracing::info!(
        target: "refstore::access",
        client = %client.map(|a| a.to_string()).unwrap_or_default(),
        method = %method,
        url = %target,
        status = status,
        user = %user.unwrap_or("-"),
        bytes = sent,
        ms = started.elapsed().as_millis() as u64,
        "request"
    );
}

/// A response body; logs its request when dropped.
pub struct Reply {
    content: Content,
    status: u16,
    sent: u64,
    line: Option<LogLine>,
}

enum Content {
    Whole(Option<Bytes>),
    /// A first piece not sent yet, then what the channel brings.
    Streamed(Option<Bytes>, mpsc::Receiver<io::Result<Bytes>>),
    /// A stream that failed: the failure is held back for one turn, so
    /// that hyper flushes what went before it (the service's message to
    /// the client) before it cuts the connection.
    Failing(Option<io::Error>),
}

impl Body for Reply {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        let next = match &mut this.content {
            Content::Whole(data) => data.take().map(Ok),
            Content::Streamed(first @ Some(_), _) => first.take().map(Ok),
            Content::Streamed(None, rx) => match rx.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => {
                    this.content = Content::Failing(Some(e));
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Poll::Ready(next) => next,
            },
            Content::Failing(e) => e.take().map(Err),
        };
        if let Some(Ok(data)) = &next {
            this.sent += data.len() as u64;
        }
        Poll::Ready(next.map(|piece| piece.map(Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        matches!(&self.content, Content::Whole(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.content {
            Content::Whole(data) => {
                SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64))
            }
            Content::Streamed(..) | Content::Failing(_) => SizeHint::default(),
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        let Some(line) = self.line.take() else {
            return;
        };
        log(
            line.client,
            &line.method,
            &line.target,
            self.status,
            line.user.as_deref(),
            self.sent,
            line.started,
        );
        let received = line.received.load(Ordering::Relaxed);
        line.metrics.request(
            Transport::Http,
            line.service,
            self.status,
            line.started.elapsed(),
        );
        line.metrics
            .transferred(Transport::Http, self.sent, received);
    }
}

/// A response being put together.
pub struct Answer {
    /// The request's log line, moved into the response body.
    pub line: Option<LogLine>,
    /// True if the connection must close after the response (the
    /// request's body was not, or not wholly, read).
    pub close: bool,
}

/// Headers that keep proxies and clients from caching protocol responses.
const NO_CACHE: [(&str, &str); 3] = [
    ("Expires", "Fri, 01 Jan 1980 00:00:00 GMT"),
    ("Pragma", "no-cache"),
    ("Cache-Control", "no-cache, max-age=0, must-revalidate"),
];

impl Answer {
    fn build(
        &mut self,
        status: u16,
        headers: &[(&str, &str)],
        content: Content,
    ) -> Response<Reply> {
        let mut response = Response::new(Reply {
            content,
            status,
            sent: 0,
            line: self.line.take(),
        });
        *response.status_mut() =
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let fields = response.headers_mut();
        fields.insert(SERVER, HeaderValue::from_static("refstore"));
        for (name, value) in headers {
            if let (Ok(name), Ok(value)) = (
                hyper::header::HeaderName::try_from(*name),
                HeaderValue::try_from(*value),
            ) {
                fields.append(name, value);
            }
        }
        if self.close {
            fields.insert(CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }

    /// A short plain-text answer (errors, refusals).
    pub fn text(&mut self, status: u16, message: &str, extra: &[(&str, &str)]) -> Response<Reply> {
        let mut headers = vec![("Content-Type", "text/plain; charset=utf-8")];
        headers.extend_from_slice(extra);
        let body = Bytes::from(format!("{message}\n"));
        self.build(status, &headers, Content::Whole(Some(body)))
    }

    /// A complete protocol response of type `content_type`.
    pub fn whole(&mut self, content_type: &str, body: Vec<u8>) -> Response<Reply> {
        let headers = protocol_headers(content_type);
        self.build(200, &headers, Content::Whole(Some(Bytes::from(body))))
    }

    /// A JSON document answered with `status` (the admin endpoint's).
    pub fn json(&mut self, status: u16, body: Vec<u8>) -> Response<Reply> {
        let mut headers = NO_CACHE.to_vec();
        headers.push((CONTENT_TYPE.as_str(), "application/json"));
        self.build(status, &headers, Content::Whole(Some(Bytes::from(body))))
    }

    /// A 200 protocol response whose body arrives through `rx`. An error
    /// on the channel cuts the body short (no last chunk), so the client
    /// sees the failure.
    pub fn streamed(
        &mut self,
        content_type: &str,
        rx: mpsc::Receiver<io::Result<Bytes>>,
    ) -> Response<Reply> {
        let headers = protocol_headers(content_type);
        self.build(200, &headers, Content::Streamed(None, rx))
    }

    /// [`streamed`](Self::streamed), whose first piece, `first`, was
    /// taken from the channel already.
    pub fn streamed_from(
        &mut self,
        content_type: &str,
        first: Bytes,
        rx: mpsc::Receiver<io::Result<Bytes>>,
    ) -> Response<Reply> {
        let headers = protocol_headers(content_type);
        self.build(200, &headers, Content::Streamed(Some(first), rx))
    }
}

fn protocol_headers(content_type: &str) -> Vec<(&str, &str)> {
    let mut headers = NO_CACHE.to_vec();
    headers.push((CONTENT_TYPE.as_str(), content_type));
    headers
}
