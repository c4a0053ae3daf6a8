//! One HTTP request, from routing to the response. Requests for the
//! replication and admin endpoints go to their modules; for a smart-HTTP
//! request, access is decided before the repository is opened, request
//! bodies are limited, and the blocking git services run on tokio's
//! blocking pool, one turn each.

use super::body::{self, Encoding, Failure};
use super::bridge::{first_piece, ChannelWriter, Start, DEPTH};
use super::framing::Framing;
use super::jobs::{blocking, run};
use super::pace::{Active, PacedBody};
use super::push;
use super::refusal::{refuse, refuse_body};
use super::respond::{Answer, LogLine, Reply};
use super::route::{self, Endpoint, Route, Service};
use super::services;
use super::state::State;
use crate::access::{AccessRules, Verdict, Want};
use crate::authorize::{authorize, Decision};
use crate::confine::Served;
use crate::metrics::Rejection;
use hyper::body::Incoming;
use hyper::{Request, Response};
use refstore_protocol::version::ProtocolVersion;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;

/// Answers one request whose head was just read.
pub(super) async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
    client: Option<SocketAddr>,
    framing: Framing,
    active: Active,
) -> Response<Reply> {
    let target = request
        .uri()
        .path_and_query()
        .map_or_else(|| request.uri().to_string(), |p| p.as_str().to_owned());
    let mut answer = Answer {
        line: Some(LogLine {
            client,
            method: request.method().as_str().to_owned(),
            target,
            user: None,
            service: "-",
            started: Instant::now(),
            received: Arc::new(AtomicU64::new(0)),
            metrics: state.options.metrics.clone(),
            _busy: active,
        }),
        // After a chunked body, hyper's reading of the connection is no
        // longer followed (see `framing`): no further request on it.
        close: framing.chunked,
    };
    if framing.ambiguous {
        answer.close = true;
        return refuse(
            &state,
            &mut answer,
            Rejection::BadRequest,
            400,
            "malformed request: both Content-Length and Transfer-Encoding",
            &[],
        );
    }
    answer_request(&state, request, &mut answer).await
}

/// Routes a request, decides who may do what to which repository, and
/// answers it with the advertisement or the service it asks for.
async fn answer_request(
    state: &Arc<State>,
    request: Request<Incoming>,
    answer: &mut Answer,
) -> Response<Reply> {
    let target = answer
        .line
        .as_ref()
        .map(|l| l.target.clone())
        .unwrap_or_default();
    if target.starts_with(refstore_replica::ENDPOINT_PREFIX) {
        return super::replicate::handle(state, request, answer, &target).await;
    }
    if target.starts_with(super::admin::ENDPOINT_PREFIX) {
        return super::admin::handle(state, request, answer, &target).await;
    }
    let route = match route::route(request.method().as_str(), &target) {
        Ok(route) => route,
        Err(refusal) => {
            let message = match refusal.status() {
                403 => "unknown service",
                405 => "method not allowed",
                400 => "malformed URL",
                _ => "not found",
            };
            return answer.text(refusal.status(), message, &[]);
        }
    };
    if let Some(line) = &mut answer.line {
        line.service = route.service.name();
    }
    let path = match authorize_request(state, &request, answer, &route).await {
        Ok(path) => path,
        Err(refusal) => return refusal,
    };
    let version = services::version(header(&request, "Git-Protocol").as_deref());
    if route.endpoint == Endpoint::Advertisement {
        let head = request.method() == hyper::Method::HEAD;
        return advertise(state, answer, &route, path, version, head).await;
    }
    serve_request(state, request, answer, &route, path, version).await
}

/// A request header's value, if it is text.
fn header(request: &Request<Incoming>, name: &str) -> Option<String> {
    request
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Who asks, and may they: decided before the repository is opened, so a
/// client that may not read it cannot tell whether it exists. Gives the
/// repository to open, or the response that refuses the request.
async fn authorize_request(
    state: &Arc<State>,
    request: &Request<Incoming>,
    answer: &mut Answer,
    route: &Route,
) -> Result<Served, Response<Reply>> {
    let rules = state.options.access.as_ref().map(|rules| rules.get());
    let want = route.service.want();
    let user = match header(request, "Authorization") {
        Some(header) if rules.is_some() || want == Want::Write => {
            super::login::login(state, answer, header).await?
        }
        _ => None,
    };
    if let Some(line) = &mut answer.line {
        line.user = user.clone();
    }
    let Some(decision) = decide(state, &route.repo, user, rules, want).await else {
        return Err(answer.text(500, "cannot look up the repository", &[]));
    };
    if let Some(refusal) = refusal_of(state, answer, decision.verdict, want) {
        return Err(refusal);
    }
    let Some(path) = decision.served else {
        return Err(answer.text(404, "repository not found", &[]));
    };
    admit(state, answer, route, &path).await?;
    Ok(path)
}

/// The access rules' decision on `repo` for `user`, made on the blocking
/// pool (it looks at the disk); `None` if that pool could not run it.
async fn decide(
    state: &Arc<State>,
    repo: &str,
    user: Option<String>,
    rules: Option<Arc<AccessRules>>,
    want: Want,
) -> Option<Decision> {
    let (state, repo) = (state.clone(), repo.to_owned());
    blocking(move || {
        let decide = || {
            authorize(
                state.vfs.as_ref(),
                &state.options.root,
                rules.as_deref(),
                state.options.allow_push,
                user.as_deref(),
                &repo,
                want,
            )
        };
        let decision = decide();
        // A repository created in the catalog a moment ago may not be
        // on this server's disk yet.
        match &state.options.catalog {
            Some(catalog) if decision.served.is_none() && catalog.materialize(&repo) => decide(),
            _ => decision,
        }
    })
    .await
}

/// The response that refuses a request the access rules do not allow;
/// `None` when they allow it.
fn refusal_of(
    state: &State,
    answer: &mut Answer,
    verdict: Verdict,
    want: Want,
) -> Option<Response<Reply>> {
    match verdict {
        Verdict::Allowed => None,
        Verdict::AuthenticationRequired => {
            let message = match want {
                Want::Write => "authentication required to push",
                Want::Read => "authentication required",
            };
            let challenge = ("WWW-Authenticate", "Basic realm=\"refstore\"");
            Some(refuse(
                state,
                answer,
                Rejection::Unauthorized,
                401,
                message,
                &[challenge],
            ))
        }
        Verdict::NotFound => Some(refuse(
            state,
            answer,
            Rejection::Forbidden,
            404,
            "repository not found",
            &[],
        )),
        Verdict::Forbidden(message) => Some(refuse(
            state,
            answer,
            Rejection::Forbidden,
            403,
            &message,
            &[],
        )),
    }
}

/// Asks the catalog, when there is one, whether the repository is served
/// now; the response that refuses the request if not.
async fn admit(
    state: &Arc<State>,
    answer: &mut Answer,
    route: &Route,
    path: &Served,
) -> Result<(), Response<Reply>> {
    let Some(catalog) = state.options.catalog.clone() else {
        return Ok(());
    };
    let name = path.name.clone();
    match blocking(move || catalog.admit(&name)).await {
        Some(Ok(())) => Ok(()),
        Some(Err(message)) => Err(not_admitted(
            state,
            answer,
            route.endpoint,
            route.service,
            &message,
        )),
        None => Err(answer.text(500, "cannot look up the repository", &[])),
    }
}

/// Answers `info/refs`: the repository's advertisement for the service,
/// or (`head`) only the headers, with the repository opened but nothing
/// run.
async fn advertise(
    state: &Arc<State>,
    answer: &mut Answer,
    route: &Route,
    path: Served,
    version: ProtocolVersion,
    head: bool,
) -> Response<Reply> {
    let service = route.service;
    let content_type = format!("application/x-{}-advertisement", service.name());
    if head {
        if let Err(refusal) = run(state, answer, route, path, |_| ()).await {
            return refusal;
        }
        return answer.streamed(&content_type, mpsc::channel(1).1);
    }
    let (tx, mut rx) = mpsc::channel(DEPTH);
    let name = route.repo.clone();
    let started = run(state, answer, route, path, move |repo| {
        let mut out = ChannelWriter::new(tx);
        let mut produce = || {
            if !services::is_v2(version) || service == Service::ReceivePack {
                write_service_header(&mut out, service)?;
            }
            services::advertise(&repo, service, version, &mut out)?;
            out.flush().map_err(|e| e.to_string())
        };
        if let Err(message) = produce() {
            tracing::warn!(repo = %name, "advertisement failed: {message}");
            out.refuse(message);
        }
    })
    .await;
    if let Err(refusal) = started {
        return refusal;
    }
    // Nothing is answered before the advertisement's first piece, so
    // that one that cannot be made (refs that cannot be read, as on a
    // cluster node cut off from etcd) is refused with a status and a
    // message git shows, not a body cut short.
    match first_piece(&mut rx).await {
        Start::Piece(first) => answer.streamed_from(&content_type, first, rx),
        Start::Empty => answer.streamed(&content_type, rx),
        Start::Refused(e) => {
            let message = match service {
                Service::ReceivePack => format!("{e}; push refused"),
                Service::UploadPack => e.to_string(),
            };
            answer.text(503, &message, &[("Retry-After", "1")])
        }
    }
}

/// Answers a service's request (`git-upload-pack`, `git-receive-pack`):
/// its headers checked, its body limited, then the fetch or the push.
async fn serve_request(
    state: &Arc<State>,
    request: Request<Incoming>,
    answer: &mut Answer,
    route: &Route,
    path: Served,
    version: ProtocolVersion,
) -> Response<Reply> {
    let expected = format!("application/x-{}-request", route.service.name());
    if header(&request, "Content-Type").as_deref() != Some(expected.as_str()) {
        return answer.text(415, "unsupported media type", &[]);
    }
    let limit = match route.service {
        Service::UploadPack => state.options.limits.max_fetch_request,
        Service::ReceivePack => state.options.limits.max_push_request,
    };
    let encoding = match Encoding::parse(header(&request, "Content-Encoding").as_deref()) {
        Ok(encoding) => encoding,
        Err(e) => return answer.text(415, &e.to_string(), &[]),
    };
    if let Some(length) =
        header(&request, "Content-Length").and_then(|l| l.trim().parse::<u64>().ok())
    {
        // Compressed bodies are limited after inflating, below; a plain
        // one that announces too much is refused before it is sent.
        if length > limit && encoding == Encoding::Identity {
            let message = body::TooLarge(limit).to_string();
            return refuse_body(state, answer, Failure::TooLarge, &message);
        }
    }
    let received = answer
        .line
        .as_ref()
        .map_or_else(Default::default, |l| l.received.clone());
    let mut input = PacedBody::new(request.into_body(), state.options.timeout, received);
    match route.service {
        Service::UploadPack => {
            // The whole request is read before a turn is taken, so a
            // client that sends slowly holds only its own connection.
            match body::collect(&mut input, encoding, limit).await {
                Ok(request) => fetch(state, answer, route, path, version, request).await,
                Err(e) => refuse_body(state, answer, Failure::of(&e), &e.to_string()),
            }
        }
        Service::ReceivePack => {
            push::push(state, answer, route, path, input, encoding, limit).await
        }
    }
}

/// Runs a fetch on the request read whole, streaming the pack back.
async fn fetch(
    state: &Arc<State>,
    answer: &mut Answer,
    route: &Route,
    path: Served,
    version: ProtocolVersion,
    request: Vec<u8>,
) -> Response<Reply> {
    let (tx, rx) = mpsc::channel(DEPTH);
    let name = route.repo.clone();
    let started = run(state, answer, route, path, move |repo| {
        let mut out = ChannelWriter::new(tx);
        let result = services::upload_pack(&repo, version, &mut &request[..], &mut out)
            .and_then(|()| out.flush().map_err(|e| e.to_string()));
        if let Err(message) = result {
            tracing::warn!(repo = %name, "fetch failed: {message}");
            out.fail(message);
        }
    })
    .await;
    if let Err(refusal) = started {
        return refusal;
    }
    let result_type = format!("application/x-{}-result", route.service.name());
    answer.streamed(&result_type, rx)
}

/// Refuses a repository the catalog does not admit: an advertisement
/// answers with an `ERR` packet, which git's client shows as `fatal:
/// remote error: <message>`; any other request with 403 and the message.
fn not_admitted(
    state: &State,
    answer: &mut Answer,
    endpoint: Endpoint,
    service: Service,
    message: &str,
) -> Response<Reply> {
    if endpoint != Endpoint::Advertisement {
        return refuse(state, answer, Rejection::Forbidden, 403, message, &[]);
    }
    state.options.metrics.rejected(Rejection::Forbidden);
    let line = format!("ERR {message}\n");
    let body = format!("{:04x}{line}", line.len() + 4).into_bytes();
    let content_type = format!("application/x-{}-advertisement", service.name());
    answer.whole(&content_type, body)
}

/// The pkt-line and flush that start a v0 advertisement over HTTP.
fn write_service_header(out: &mut dyn Write, service: Service) -> Result<(), String> {
    let line = format!("# service={}\n", service.name());
    write!(out, "{:04x}{line}0000", line.len() + 4).map_err(|e| e.to_string())
}
