//! One smart-HTTP request, from routing to the access-log line.

use super::body::{self, Counting};
use super::route::{self, Endpoint, Route, Service};
use super::services;
use super::ServeOptions;
use refstore_fs::Vfs;
use refstore_protocol::repository::{OpenError, Repository};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tiny_http::{Header, Request, Response, StatusCode};

/// What every worker shares.
pub(super) struct State {
    pub options: ServeOptions,
    pub vfs: Arc<dyn Vfs>,
}

/// What the access log says about a request besides its line.
struct Logged {
    status: u16,
    user: Option<String>,
    sent: Arc<AtomicU64>,
}

/// Answers `request` and writes its access-log line.
pub(super) fn handle(state: &State, request: Request) {
    let started = Instant::now();
    let method = request.method().to_string();
    let url = request.url().to_owned();
    let client = request
        .remote_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let logged = answer(state, request);
    tracing::info!(
        target: "refstore::access",
        client = %client,
        method = %method,
        url = %url,
        status = logged.status,
        user = %logged.user.as_deref().unwrap_or("-"),
        bytes = logged.sent.load(Ordering::Relaxed),
        ms = started.elapsed().as_millis() as u64,
        "request"
    );
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("valid header")
}

fn header_value<'a>(request: &'a Request, name: &'static str) -> Option<&'a str> {
    request
        .headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str())
}

/// Headers that keep proxies and clients from caching protocol responses.
fn no_cache() -> Vec<Header> {
    vec![
        header("Expires", "Fri, 01 Jan 1980 00:00:00 GMT"),
        header("Pragma", "no-cache"),
        header("Cache-Control", "no-cache, max-age=0, must-revalidate"),
    ]
}

/// A short plain-text answer (errors, refusals).
fn text(request: Request, status: u16, message: &str, extra: Vec<Header>) -> Logged {
    let sent = Arc::new(AtomicU64::new(message.len() as u64 + 1));
    let mut headers = vec![header("Content-Type", "text/plain; charset=utf-8")];
    headers.extend(extra);
    let body = format!("{message}\n");
    let response = Response::new(
        StatusCode(status),
        headers,
        body.as_bytes(),
        Some(body.len()),
        None,
    );
    if let Err(e) = request.respond(response) {
        tracing::debug!("client went away: {e}");
    }
    Logged {
        status,
        user: None,
        sent,
    }
}

fn answer(state: &State, mut request: Request) -> Logged {
    let route = match route::route(&request.method().to_string(), request.url()) {
        Ok(route) => route,
        Err(refusal) => {
            let message = match refusal.status() {
                403 => "unknown service",
                405 => "method not allowed",
                400 => "malformed URL",
                _ => "not found",
            };
            return text(request, refusal.status(), message, Vec::new());
        }
    };

    let mut user = None;
    if route.service.writes() {
        if !state.options.allow_push {
            return text(
                request,
                403,
                "pushing is disabled on this server (start `refstore serve` with --allow-push)",
                Vec::new(),
            );
        }
        let authorization = header_value(&request, "Authorization").unwrap_or("");
        match state.options.credentials.check_header(authorization) {
            Some(name) => user = Some(name.to_owned()),
            None => {
                return text(
                    request,
                    401,
                    "authentication required to push",
                    vec![header("WWW-Authenticate", "Basic realm=\"refstore\"")],
                )
            }
        }
    }

    let repo = match open(state, &route) {
        Ok(repo) => repo,
        Err(Some(message)) => {
            tracing::error!(repo = %route.repo, "cannot open repository: {message}");
            return text(request, 500, "cannot open the repository", Vec::new());
        }
        Err(None) => return text(request, 404, "repository not found", Vec::new()),
    };
    let version = services::version(header_value(&request, "Git-Protocol"));

    let mut logged = match route.endpoint {
        Endpoint::Advertisement => {
            let service = route.service;
            stream(
                request,
                &format!("application/x-{}-advertisement", service.name()),
                |out| {
                    if !services::is_v2(version) || service == Service::ReceivePack {
                        write_service_header(out, service)?;
                    }
                    services::advertise(&repo, service, version, out)
                },
            )
        }
        Endpoint::Rpc => {
            let expected = format!("application/x-{}-request", route.service.name());
            if header_value(&request, "Content-Type").map(str::trim) != Some(expected.as_str()) {
                return text(request, 415, "unsupported media type", Vec::new());
            }
            let encoding = header_value(&request, "Content-Encoding").map(str::to_owned);
            let result_type = format!("application/x-{}-result", route.service.name());
            match route.service {
                Service::UploadPack => {
                    let mut input = Vec::new();
                    let limit = state.options.max_fetch_request;
                    let read = body::decoded(request.as_reader(), encoding.as_deref(), limit)
                        .map_err(|e| e.to_string())
                        .and_then(|mut r| r.read_to_end(&mut input).map_err(|e| e.to_string()));
                    if let Err(message) = read {
                        return text(request, 400, &message, Vec::new());
                    }
                    stream(request, &result_type, |out| {
                        services::upload_pack(&repo, version, &mut &input[..], out)
                    })
                }
                Service::ReceivePack => {
                    let mut output = Vec::new();
                    let limit = state.options.max_push_request;
                    let result =
                        match body::decoded(request.as_reader(), encoding.as_deref(), limit) {
                            Ok(mut input) => {
                                Ok(services::receive_pack(&repo, &mut input, &mut output))
                            }
                            Err(e) => Err(e.to_string()),
                        };
                    let result = match result {
                        Ok(result) => result,
                        Err(message) => return text(request, 415, &message, Vec::new()),
                    };
                    if let Err(message) = result {
                        tracing::warn!(repo = %route.repo, "push failed: {message}");
                        if output.is_empty() {
                            return text(request, 500, &message, Vec::new());
                        }
                    }
                    let sent = Arc::new(AtomicU64::new(output.len() as u64));
                    let mut headers = no_cache();
                    headers.push(header("Content-Type", &result_type));
                    let length = output.len();
                    let response =
                        Response::new(StatusCode(200), headers, &output[..], Some(length), None);
                    if let Err(e) = request.respond(response) {
                        tracing::debug!("client went away: {e}");
                    }
                    Logged {
                        status: 200,
                        user: None,
                        sent,
                    }
                }
            }
        }
    };
    logged.user = user;
    logged
}

/// Opens the repository a route names. `Err(None)`: there is none to serve
/// (404); `Err(Some(_))`: it exists but cannot be opened.
fn open(state: &State, route: &Route) -> Result<Repository, Option<String>> {
    let path = refstore_fs::confine::confine(state.vfs.as_ref(), &state.options.root, &route.repo)
        .map_err(|_| None)?;
    match Repository::open(state.vfs.clone(), &path, &state.options.config_overrides) {
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

/// Streams what `produce` writes as a chunked 200 response: the service
/// runs on this thread while another one sends its output, so neither a
/// large pack nor a large advertisement is held in memory.
fn stream(
    request: Request,
    content_type: &str,
    produce: impl FnOnce(&mut dyn Write) -> Result<(), String>,
) -> Logged {
    let sent = Arc::new(AtomicU64::new(0));
    let (reader, mut writer) = match rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) {
        Ok((reader, writer)) => (std::fs::File::from(reader), std::fs::File::from(writer)),
        Err(e) => {
            return text(
                request,
                500,
                &format!("cannot create a pipe: {e}"),
                Vec::new(),
            )
        }
    };
    let mut headers = no_cache();
    headers.push(header("Content-Type", content_type));
    let body = Counting::new(reader, sent.clone());
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let response = Response::new(StatusCode(200), headers, body, None, None);
            if let Err(e) = request.respond(response) {
                tracing::debug!("client went away: {e}");
            }
        });
        let mut buffered = std::io::BufWriter::with_capacity(64 << 10, &mut writer);
        let result =
            produce(&mut buffered).and_then(|()| buffered.flush().map_err(|e| e.to_string()));
        if let Err(message) = result {
            tracing::warn!("service failed: {message}");
        }
        drop(buffered);
        drop(writer);
    });
    Logged {
        status: 200,
        user: None,
        sent,
    }
}
