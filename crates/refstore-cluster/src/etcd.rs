//! The connection to etcd, for callers that are not async.
//!
//! The ref store's interface is synchronous and the etcd client is async,
//! so the connection owns a small tokio runtime of its own: a call is
//! spawned on it and the calling thread waits for the answer. This works
//! from any thread, the server's blocking pool included, and never nests
//! runtimes.
//!
//! Each etcd member gets a client of its own and a call goes to the member
//! that answered last, moving on to the next one when a member cannot
//! answer (refused connection, no leader, timeout). Every attempt is
//! bounded by the cluster file's `etcd_timeout`, so with no quorum a call
//! fails after at most one timeout per member, with a message saying what
//! each member answered. Writes and linearizable reads ask the member to
//! refuse at once when it has no leader (etcd's "require leader"), rather
//! than wait for an election that cannot happen.

use crate::config::ClusterConfig;
use etcd_client::{Client, ConnectOptions};
use refstore_refs::ReadError;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A call that no member could answer.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", self.describe())]
pub struct Unreachable {
    /// What each member answered, in the order they were tried.
    pub answers: Vec<String>,
    /// True if a write may have been applied although no answer came
    /// (an attempt timed out after the request was sent).
    pub ambiguous: bool,
}

impl Unreachable {
    fn describe(&self) -> String {
        format!(
            "cluster: etcd has no quorum or cannot be reached ({})",
            self.answers.join("; ")
        )
    }
}

/// What went wrong with one call.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EtcdError {
    /// No member could answer.
    #[error(transparent)]
    Unreachable(#[from] Unreachable),
    /// A member answered with an error that another member would give too
    /// (a request too large, too many operations in one transaction).
    #[error("cluster: etcd refused the request: {0}")]
    Refused(String),
}

/// One etcd member's clients.
struct Member {
    url: String,
    /// Refuses at once without a leader: writes, linearizable reads.
    strict: Client,
    /// Answers from the member's own copy even without a leader.
    relaxed: Client,
}

/// Whether a call needs the cluster's quorum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consistency {
    /// Through the leader: linearizable reads and every write.
    Quorum,
    /// From any member's own copy, possibly behind the others.
    Local,
}

/// A connection to every member of one etcd cluster.
pub struct Etcd {
    runtime: Option<tokio::runtime::Runtime>,
    members: Vec<Member>,
    preferred: AtomicUsize,
    timeout: Duration,
}

impl std::fmt::Debug for Etcd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let urls: Vec<&str> = self.members.iter().map(|m| m.url.as_str()).collect();
        f.debug_struct("Etcd").field("members", &urls).finish()
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        // The last owner may be a thread of another runtime, where a
        // blocking shutdown is not allowed.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Etcd {
    /// Prepares clients for the members `config` lists. Nothing is sent
    /// yet: a node starts even while etcd is down, and its calls fail with
    /// a clear error until etcd is back.
    pub fn connect(config: &ClusterConfig) -> Result<Arc<Etcd>, EtcdError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("refstore-etcd")
            .enable_all()
            .build()
            .map_err(|e| EtcdError::Refused(format!("cannot start the etcd client: {e}")))?;
        let timeout = config.etcd_timeout;
        let options = ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_timeout(timeout)
            .with_keep_alive(Duration::from_secs(2), timeout);
        let mut members = Vec::new();
        for url in &config.etcd {
            let connect = |options: ConnectOptions| {
                let url = url.clone();
                runtime.block_on(async move { Client::connect([url], Some(options)).await })
            };
            let refused = |e: etcd_client::Error| EtcdError::Refused(format!("{url}: {e}"));
            let strict = connect(options.clone().with_require_leader(true)).map_err(refused)?;
            let relaxed = connect(options.clone()).map_err(refused)?;
            members.push(Member {
                url: url.clone(),
                strict,
                relaxed,
            });
        }
        Ok(Arc::new(Etcd {
            runtime: Some(runtime),
            members,
            preferred: AtomicUsize::new(0),
            timeout,
        }))
    }

    /// The runtime the clients run on (watches are spawned on it).
    pub(crate) fn handle(&self) -> &tokio::runtime::Handle {
        self.runtime
            .as_ref()
            .expect("present until dropped")
            .handle()
    }

    /// A client of the member calls go to first, for long-lived streams
    /// (watches); a stream that breaks is started again by its owner.
    pub(crate) fn preferred_client(&self) -> Client {
        let index = self.preferred.load(Ordering::Relaxed) % self.members.len();
        self.members[index].strict.clone()
    }

    /// Runs `call` with each member's client in turn until one answers.
    pub fn call<T, F, Fut>(&self, consistency: Consistency, call: F) -> Result<T, EtcdError>
    where
        T: Send + 'static,
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>> + Send + 'static,
    {
        let first = self.preferred.load(Ordering::Relaxed);
        let mut answers = Vec::new();
        let mut ambiguous = false;
        for step in 0..self.members.len() {
            let index = (first + step) % self.members.len();
            let member = &self.members[index];
            let client = match consistency {
                Consistency::Quorum => member.strict.clone(),
                Consistency::Local => member.relaxed.clone(),
            };
            match self.wait(call(client)) {
                Some(Ok(value)) => {
                    self.preferred.store(index, Ordering::Relaxed);
                    return Ok(value);
                }
                Some(Err(e)) => match classify(&e) {
                    Class::Final => return Err(EtcdError::Refused(describe(&e))),
                    Class::NotApplied => answers.push(format!("{}: {}", member.url, describe(&e))),
                    Class::Ambiguous => {
                        ambiguous = true;
                        answers.push(format!("{}: {}", member.url, describe(&e)));
                    }
                },
                None => {
                    ambiguous = true;
                    answers.push(format!(
                        "{}: no answer within {:?}",
                        member.url, self.timeout
                    ));
                }
            }
        }
        Err(Unreachable { answers, ambiguous }.into())
    }

    /// Runs `future` on the connection's runtime and waits for it, at most
    /// one timeout (and a little more, for the client's own timeout to be
    /// the one reported). `None` if it did not finish.
    fn wait<T: Send + 'static>(
        &self,
        future: impl Future<Output = Result<T, etcd_client::Error>> + Send + 'static,
    ) -> Option<Result<T, etcd_client::Error>> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let limit = self.timeout + Duration::from_millis(200);
        self.handle().spawn(async move {
            let result = tokio::time::timeout(limit, future).await.ok();
            let _ = tx.send(result);
        });
        rx.recv().ok().flatten()
    }
}

/// How a failed call is handled.
enum Class {
    /// Another member would answer the same: give up.
    Final,
    /// This member did not apply it: try the next.
    NotApplied,
    /// This member may have applied it: try the next, and let the caller
    /// find out.
    Ambiguous,
}

fn classify(e: &etcd_client::Error) -> Class {
    match e {
        etcd_client::Error::GRpcStatus(status) => {
            let message = status.message();
            if message.contains("no leader")
                || message.contains("not capable")
                || message.contains("leader changed")
            {
                Class::NotApplied
            } else if message.contains("too many operations")
                || message.contains("request is too large")
                || message.contains("duplicate key")
                || message.contains("key is not provided")
            {
                Class::Final
            } else if message.contains("connection refused")
                || message.contains("tcp connect error")
                || message.contains("error trying to connect")
            {
                Class::NotApplied
            } else {
                Class::Ambiguous
            }
        }
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => Class::NotApplied,
        _ => Class::Ambiguous,
    }
}

/// The useful part of an error: gRPC's status message, without the
/// metadata the client's display adds.
fn describe(e: &etcd_client::Error) -> String {
    match e {
        etcd_client::Error::GRpcStatus(status) => {
            let message = status.message();
            if message.is_empty() {
                format!("{:?}", status.code())
            } else {
                message.to_owned()
            }
        }
        e => e.to_string(),
    }
}

/// A failed etcd call as a read error.
pub(crate) fn unavailable(e: EtcdError) -> ReadError {
    ReadError::Unavailable(e.to_string())
}
