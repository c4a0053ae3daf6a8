//! One `exec` request: which service on which repository, whether the user
//! may, and the service itself on a blocking thread, answered the way
//! git's own ssh server side answers (`fatal: …` on stderr, exit status
//! 128; 1 for a command that is not served).
//!
//! Users who may not read a repository are told it does not exist, in the
//! very words used for a missing one, so its existence is not revealed.

use super::bridge::{ChannelInput, ChannelOutput};
use super::exec::{self, Command, Service};
use super::idle::Busy;
use super::shared::Shared;
use crate::access::Verdict;
use crate::authorize::authorize;
use crate::confine::Served;
use crate::metrics::{Rejection, Transport};
use bytes::Bytes;
use refstore_protocol::repository::{OpenError, Repository};
use refstore_protocol::version::ProtocolVersion;
use refstore_protocol::{receive_pack, upload_pack};
use russh::server::Msg;
use russh::ChannelWriteHalf;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc::Receiver;

/// An `exec` request of an authenticated user.
pub struct Request {
    /// Who sent it (the authorized key's user).
    pub user: String,
    /// From where.
    pub peer: SocketAddr,
    /// The command, as sent.
    pub command: Vec<u8>,
    /// The `GIT_PROTOCOL` environment variable the client set.
    pub protocol: Option<String>,
}

/// How a request ended.
struct Outcome {
    /// The exit status sent to the client.
    exit: u32,
    /// The matching HTTP status, for metrics and the access log.
    status: u16,
    /// A line for the client's stderr.
    message: Option<String>,
    sent: u64,
    received: u64,
}

impl Outcome {
    fn failed(exit: u32, status: u16, message: String) -> Outcome {
        Outcome {
            exit,
            status,
            message: Some(message),
            sent: 0,
            received: 0,
        }
    }
}

/// Serves `request` on the channel `channel`, reading the client's data
/// from `input`, then sends the exit status and closes the channel.
pub async fn serve(
    shared: Arc<Shared>,
    request: Request,
    input: Receiver<Bytes>,
    channel: ChannelWriteHalf<Msg>,
    _busy: Busy,
) {
    let started = Instant::now();
    let _running = Running::new(&shared);
    let channel = Arc::new(channel);
    let (name, outcome) = match exec::parse(&request.command) {
        Err(refused) => (
            "other",
            Outcome::failed(1, 400, format!("fatal: {refused}")),
        ),
        Ok(command) => {
            let name = command.service.name();
            (name, run(&shared, &request, command, input, &channel).await)
        }
    };
    // A client that stopped reading (why a service may have failed)
    // never makes room in the channel's window for the message: it gets
    // as long as any client has to read, so that the service ends and a
    // shutdown, which waits for running services, is not held forever.
    let ending = async {
        if let Some(message) = &outcome.message {
            let _ = channel
                .extended_data_bytes(1, Bytes::from(format!("{message}\n")))
                .await;
        }
        let _ = channel.exit_status(outcome.exit).await;
        let _ = channel.eof().await;
        let _ = channel.close().await;
    };
    let _ = tokio::time::timeout(shared.options.timeout, ending).await;

    let metrics = &shared.options.metrics;
    metrics.request(Transport::Ssh, name, outcome.status, started.elapsed());
    metrics.transferred(Transport::Ssh, outcome.sent, outcome.received);
    tracing::info!(
        target: "refstore::access",
        client = %request.peer,
        transport = "ssh",
        command = %String::from_utf8_lossy(&request.command).escape_debug(),
        status = outcome.status,
        exit = outcome.exit,
        user = %request.user,
        bytes = outcome.sent,
        ms = started.elapsed().as_millis() as u64,
        "request"
    );
}

/// Answers a shell request: there is no shell, but the key worked.
pub async fn greet(channel: ChannelWriteHalf<Msg>, user: String) {
    let message = format!(
        "Hi {user}! You have logged in, but this server only runs git-upload-pack and git-receive-pack.\n"
    );
    let _ = channel.extended_data_bytes(1, Bytes::from(message)).await;
    let _ = channel.exit_status(1).await;
    let _ = channel.eof().await;
    let _ = channel.close().await;
}

/// Checks and runs a parsed command.
async fn run(
    shared: &Arc<Shared>,
    request: &Request,
    command: Command,
    input: Receiver<Bytes>,
    channel: &Arc<ChannelWriteHalf<Msg>>,
) -> Outcome {
    let metrics = &shared.options.metrics;
    let checking = {
        let (shared, user, command) = (shared.clone(), request.user.clone(), command.clone());
        tokio::task::spawn_blocking(move || permitted(&shared, &user, &command))
    };
    let path = match checking.await {
        Ok(Ok(path)) => path,
        Ok(Err(outcome)) => return outcome,
        Err(e) => return internal(&e.to_string()),
    };
    let Some(_permit) = shared
        .capacity
        .permits
        .acquire_unless_busy(request.peer.ip())
        .await
    else {
        metrics.rejected(Rejection::OverloadedAddress);
        let message = "fatal: too many requests from your address at once; try again later";
        return Outcome::failed(128, 503, message.to_owned());
    };
    let runtime = tokio::runtime::Handle::current();
    let timeout = shared.options.timeout;
    let mut input = ChannelInput::new(runtime.clone(), input, timeout);
    let mut output = ChannelOutput::new(runtime, channel.clone(), timeout);
    let (shared, protocol) = (shared.clone(), request.protocol.clone());
    let running = tokio::task::spawn_blocking(move || {
        let mut outcome = match open(&shared, &path, &command) {
            Ok(repo) => {
                let result = service(&repo, command.service, protocol, &mut input, &mut output);
                finish(
                    &shared, &repo, &path.name, &command, result, &input, &output,
                )
            }
            Err(outcome) => outcome,
        };
        outcome.sent = output.sent;
        outcome.received = input.received;
        outcome
    });
    running
        .await
        .unwrap_or_else(|e| internal(&format!("the service failed: {e}")))
}

/// Runs `service` as over a pipe (not stateless): advertisement first,
/// then as many rounds as the client asks for.
fn service(
    repo: &Repository,
    service: Service,
    protocol: Option<String>,
    input: &mut ChannelInput,
    output: &mut ChannelOutput,
) -> Result<usize, String> {
    match service {
        Service::UploadPack => {
            let options = upload_pack::Options {
                stateless_rpc: false,
                advertise_refs: false,
                version: ProtocolVersion::from_git_protocol(protocol.as_deref()),
            };
            upload_pack::upload_pack(repo, &options, input, output)
                .map(|()| 0)
                .map_err(|e| e.to_string())
        }
        Service::ReceivePack => {
            let options = receive_pack::Options {
                stateless_rpc: false,
                advertise_refs: false,
                version: ProtocolVersion::from_git_protocol(protocol.as_deref()),
            };
            receive_pack::receive_pack(repo, &options, input, output).map_err(|e| e.to_string())
        }
    }
}

/// What a service's result means for the client and the server.
fn finish(
    shared: &Shared,
    repo: &Repository,
    name: &str,
    command: &Command,
    result: Result<usize, String>,
    input: &ChannelInput,
    output: &ChannelOutput,
) -> Outcome {
    match result {
        Ok(updated) => {
            // A refused push stored nothing there is to maintain.
            if command.service == Service::ReceivePack && updated > 0 {
                shared.capacity.maintenance.after_push(repo, name);
            }
            Outcome {
                exit: 0,
                status: 200,
                message: None,
                sent: 0,
                received: 0,
            }
        }
        Err(message) => {
            tracing::warn!(repo = %command.path, "ssh: {} failed: {message}",
                command.service.name());
            if input.timed_out || output.timed_out {
                shared.options.metrics.rejected(Rejection::Timeout);
            }
            Outcome::failed(128, 500, format!("fatal: {message}"))
        }
    }
}

/// The repository if `user` may do what `command` does to it; else the
/// answer to give.
fn permitted(shared: &Shared, user: &str, command: &Command) -> Result<Served, Outcome> {
    let options = &shared.options;
    let rules = options.access.as_ref().map(|rules| rules.get());
    let decide = || {
        authorize(
            shared.vfs.as_ref(),
            &options.root,
            rules.as_deref(),
            options.allow_push,
            Some(user),
            command.relative(),
            command.service.want(),
        )
    };
    let mut decision = decide();
    if let Some(catalog) = &options.catalog {
        // A repository created a moment ago may not be on disk yet.
        if decision.served.is_none() && catalog.materialize(command.relative()) {
            decision = decide();
        }
    }
    match decision.verdict {
        Verdict::Allowed => decision.served.ok_or_else(|| not_found(command)),
        Verdict::NotFound | Verdict::AuthenticationRequired => {
            options.metrics.rejected(Rejection::Forbidden);
            Err(not_found(command))
        }
        Verdict::Forbidden(reason) => {
            options.metrics.rejected(Rejection::Forbidden);
            Err(Outcome::failed(128, 403, format!("fatal: {reason}")))
        }
    }
}

fn open(shared: &Shared, served: &Served, command: &Command) -> Result<Repository, Outcome> {
    let options = &shared.options;
    if let Some(catalog) = &options.catalog {
        if let Err(message) = catalog.admit(&served.name) {
            options.metrics.rejected(Rejection::Forbidden);
            return Err(Outcome::failed(128, 403, format!("fatal: {message}")));
        }
    }
    match options.open_repository(shared.vfs.clone(), served) {
        Ok(repo) => Ok(repo),
        Err(OpenError::NotARepository(_)) => Err(not_found(command)),
        Err(e) => {
            tracing::error!(repo = %command.path, "ssh: cannot open repository: {e}");
            Err(Outcome::failed(
                128,
                500,
                "fatal: cannot open the repository".to_owned(),
            ))
        }
    }
}

/// Git's words for a repository that is not there.
fn not_found(command: &Command) -> Outcome {
    Outcome::failed(
        128,
        404,
        format!(
            "fatal: '{}' does not appear to be a git repository",
            command.path
        ),
    )
}

fn internal(reason: &str) -> Outcome {
    tracing::error!("ssh: {reason}");
    Outcome::failed(128, 500, format!("fatal: {reason}"))
}

/// A service counted in [`Shared::running`] until dropped, so shutdown
/// waits for it.
struct Running(Arc<Shared>);

impl Running {
    fn new(shared: &Arc<Shared>) -> Running {
        shared.running.fetch_add(1, Ordering::Relaxed);
        Running(shared.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::Relaxed);
    }
}
