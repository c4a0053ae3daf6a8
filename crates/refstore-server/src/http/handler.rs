//! One smart-HTTP request, from routing to the access-log line.

use super::body::{self, Failure, Framed, Framing};
use super::head::Head;
use super::respond::Exchange;
use super::route::{self, Endpoint, Route, Service};
use super::services;
use super::{permits::Permits, ServeOptions};
use refstore_fs::Vfs;
use refstore_protocol::repository::{OpenError, Repository};
use std::cell::Cell;
use std::io::{BufRead, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

/// What every connection shares.
pub(super) struct State {
    pub options: ServeOptions,
    pub vfs: Arc<dyn Vfs>,
    pub permits: Permits,
    pub maintenance: crate::maintenance::Maintenance,
}

/// How much of an unread request body is skipped to keep a connection
/// open; past this the connection is closed instead.
const SKIP_BODY: u64 = 64 << 10;

/// Answers the request `head` (its body is next on `input`), writes its
/// access-log line, and says whether the connection can carry another
/// request.
pub(super) fn handle(
    state: &State,
    head: &Head,
    client: Option<SocketAddr>,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> bool {
    let started = Instant::now();
    let mut exchange = Exchange::new(out, head);
    let mut user = None;
    let reusable = match body::framing(head) {
        Err(message) => {
            let _ = exchange.text(400, message, &[]);
            false
        }
        Ok(framing) => {
            let mut body = Framed::new(input, framing);
            answer(state, head, framing, &mut body, &mut exchange, &mut user);
            exchange.reusable() && body.skip_rest(SKIP_BODY)
        }
    };
    log(
        client,
        &head.method,
        &head.target,
        exchange.status,
        user.as_deref(),
        exchange.sent,
        started,
    );
    reusable
}

/// Writes the access-log line of a request. Only the request line's
/// method and target, never a header: the Authorization header carries a
/// password.
pub(super) fn log(
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

/// Headers that keep proxies and clients from caching protocol responses.
const NO_CACHE: [(&str, &str); 3] = [
    ("Expires", "Fri, 01 Jan 1980 00:00:00 GMT"),
    ("Pragma", "no-cache"),
    ("Cache-Control", "no-cache, max-age=0, must-revalidate"),
];

fn answer<W: Write>(
    state: &State,
    head: &Head,
    framing: Framing,
    body: &mut dyn Read,
    exchange: &mut Exchange<'_, W>,
    user: &mut Option<String>,
) {
    // A client that stops reading is cut off by the connection's time
    // limits; nothing more to do about write errors here.
    let route = match route::route(&head.method, &head.target) {
        Ok(route) => route,
        Err(refusal) => {
            let message = match refusal.status() {
                403 => "unknown service",
                405 => "method not allowed",
                400 => "malformed URL",
                _ => "not found",
            };
            let _ = exchange.text(refusal.status(), message, &[]);
            return;
        }
    };

    if route.service.writes() {
        if !state.options.allow_push {
            let _ = exchange.text(
                403,
                "pushing is disabled on this server (start `refstore serve` with --allow-push)",
                &[],
            );
            return;
        }
        let authorization = head.field("Authorization").unwrap_or("");
        match state.options.credentials.check_header(authorization) {
            Some(name) => *user = Some(name.to_owned()),
            None => {
                let _ = exchange.text(
                    401,
                    "authentication required to push",
                    &[("WWW-Authenticate", "Basic realm=\"refstore\"")],
                );
                return;
            }
        }
    }

    let repo = match open(state, &route) {
        Ok(repo) => repo,
        Err(Some(message)) => {
            tracing::error!(repo = %route.repo, "cannot open repository: {message}");
            let _ = exchange.text(500, "cannot open the repository", &[]);
            return;
        }
        Err(None) => {
            let _ = exchange.text(404, "repository not found", &[]);
            return;
        }
    };
    let version = services::version(head.field("Git-Protocol"));

    if route.endpoint == Endpoint::Advertisement {
        let service = route.service;
        let content_type = format!("application/x-{}-advertisement", service.name());
        let _permit = state.permits.acquire();
        let result = exchange.stream(&headers(&content_type), |out| {
            if !services::is_v2(version) || service == Service::ReceivePack {
                write_service_header(out, service)?;
            }
            services::advertise(&repo, service, version, out)
        });
        if let Err(message) = result {
            tracing::warn!(repo = %route.repo, "advertisement failed: {message}");
        }
        return;
    }

    let expected = format!("application/x-{}-request", route.service.name());
    if head.field("Content-Type") != Some(expected.as_str()) {
        let _ = exchange.text(415, "unsupported media type", &[]);
        return;
    }
    let limit = match route.service {
        Service::UploadPack => state.options.max_fetch_request,
        Service::ReceivePack => state.options.max_push_request,
    };
    let encoding = head.field("Content-Encoding");
    if let Framing::Length(length) = framing {
        // Compressed bodies are limited after inflating, below; a plain
        // one that announces too much is refused before it is sent.
        if length > limit && encoding.is_none_or(|e| e.eq_ignore_ascii_case("identity")) {
            let message = body::TooLarge(limit).to_string();
            refuse_body(exchange, Failure::TooLarge, &message);
            return;
        }
    }
    if exchange.proceed().is_err() {
        return;
    }
    let failure = Cell::new(None);
    let mut input = match body::decoded(body, encoding, limit) {
        Ok(input) => body::Watched::new(input, &failure),
        Err(e) => {
            let _ = exchange.text(415, &e.to_string(), &[]);
            return;
        }
    };
    let result_type = format!("application/x-{}-result", route.service.name());
    match route.service {
        Service::UploadPack => {
            // The whole request is read before a worker is taken, so a
            // client that sends slowly holds only its own connection.
            let mut request = Vec::new();
            if let Err(e) = input.read_to_end(&mut request) {
                refuse_body(exchange, Failure::of(&e), &e.to_string());
                return;
            }
            let _permit = state.permits.acquire();
            let result = exchange.stream(&headers(&result_type), |out| {
                services::upload_pack(&repo, version, &mut &request[..], out)
            });
            if let Err(message) = result {
                tracing::warn!(repo = %route.repo, "fetch failed: {message}");
            }
        }
        Service::ReceivePack => {
            // Only authenticated users get here; their pack streams into
            // the repository as it arrives.
            let _permit = state.permits.acquire();
            let mut output = Vec::new();
            let result = services::receive_pack(&repo, &mut input, &mut output);
            // A body cut off (too large, too slow) is answered with its
            // HTTP status even where the service reported it in its own
            // words, so clients and proxies see what happened.
            if let Some(failure) = failure.get() {
                let message = match &result {
                    Err(message) => message.clone(),
                    Ok(()) => String::from_utf8_lossy(&output).into_owned(),
                };
                tracing::warn!(repo = %route.repo, "push failed: {message}");
                refuse_body(exchange, failure, &message);
                return;
            }
            if let Err(message) = &result {
                tracing::warn!(repo = %route.repo, "push failed: {message}");
                if output.is_empty() {
                    let _ = exchange.text(500, message, &[]);
                    return;
                }
            }
            let _ = exchange.respond(200, &headers(&result_type), &output);
            if result.is_ok() {
                state.maintenance.after_push(&repo.location.git_dir);
            }
        }
    }
}

/// Answers a request whose body could not be read; the connection closes,
/// since the rest of the body is still on the wire.
fn refuse_body<W: Write>(exchange: &mut Exchange<'_, W>, failure: Failure, message: &str) {
    exchange.close_after();
    let _ = exchange.text(failure.status(), message, &[]);
}

fn headers(content_type: &str) -> Vec<(&str, &str)> {
    let mut headers = NO_CACHE.to_vec();
    headers.push(("Content-Type", content_type));
    headers
}

/// Opens the repository a route names. `Err(None)`: there is none to serve
/// (404); `Err(Some(_))`: it exists but cannot be opened.
fn open(state: &State, route: &Route) -> Result<Repository, Option<String>> {
    let path = refstore_fs::confine::confine(state.vfs.as_ref(), &state.options.root, &route.repo)
        .map_err(|_| None)?;
    match Repository::open(
        state.vfs.clone(),
        &path,
        &state.options.repository_overrides(),
    ) {
        Ok(repo) => Ok(repo),
        Err(OpenError::NotARepository(_)) => Err(None),
        Err(e) => Err(Some(e.to_string())),
    }
}

/// The pkt-line and flush that start a v0 advertisement over HTTP.
fn write_service_header(out: &mut dyn Write, service: Service) -> Result<(), String> {
    let line = format!("# service={}\n", service.name());
    write!(out, "{:04x}{line}0000", line.len() + 4).map_err(|e| e.to_string())
}
