//! The connection to etcd, for callers that are not async.
//!
//! The ref store's interface is synchronous and the etcd client is async,
//! so the connection owns a small tokio runtime of its own: a call is
//! spawned on it and the calling thread waits for the answer. This works
//! from any thread, the server's blocking pool included, and never nests
//! runtimes.
//!
//! Each etcd member gets a client of its own and a call goes first to the
//! member that answered last. Every call, whichever members it tries, is
//! bounded as a whole by the cluster file's `etcd_timeout`: a node cut off
//! from etcd (a partition holds its packets, so nothing is refused, only
//! never answered) learns it within that bound, with a message saying what
//! each member answered, instead of waiting one timeout per member and
//! more. Within the bound:
//!
//! - a read ([`Etcd::read`]) moves on to the next member as soon as one
//!   refuses (connection refused, no leader), and also when one is slow:
//!   the next member is asked too after a share of the bound, and the
//!   first answer wins (a read can be asked twice);
//! - a write ([`Etcd::call`]) moves on only when a member refuses at once,
//!   since a member that is slow may still apply it;
//! - when every member refused at once (an election under way), they are
//!   asked again after a short pause, until the bound; a read is asked
//!   again too when a member's connection broke, since it applies
//!   nothing.
//!
//! Writes and linearizable reads ask the member to refuse at once when it
//! has no leader (etcd's "require leader"), rather than wait for an
//! election that cannot happen.

use crate::config::ClusterConfig;
use etcd_client::{Client, ConnectOptions};
use refstore_refs::ReadError;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;

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

    /// Runs the write `call` with a member's client, moving on to the next
    /// member only when one refuses at once; the whole call takes at most
    /// the configured timeout.
    pub fn call<T, F, Fut>(&self, consistency: Consistency, call: F) -> Result<T, EtcdError>
    where
        T: Send + 'static,
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>> + Send + 'static,
    {
        self.attempt(consistency, call, None)
    }

    /// Runs the read `call` with a member's client until one answers,
    /// asking the next member too when one refuses or is slow; the whole
    /// call takes at most the configured timeout.
    pub fn read<T, F, Fut>(&self, consistency: Consistency, call: F) -> Result<T, EtcdError>
    where
        T: Send + 'static,
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>> + Send + 'static,
    {
        // Every member is asked within the first two thirds of the bound,
        // so the last one asked still has a third of it to answer.
        let members = u32::try_from(self.members.len()).unwrap_or(u32::MAX);
        let hedge = self.timeout * 2 / (3 * members.max(1));
        self.attempt(consistency, call, Some(hedge))
    }

    /// The members in the order a call tries them: the one that answered
    /// last first.
    fn order(&self) -> impl Iterator<Item = usize> + '_ {
        let first = self.preferred.load(Ordering::Relaxed);
        (0..self.members.len()).map(move |step| (first + step) % self.members.len())
    }

    /// Runs `call` on members in [`order`](Self::order), within one
    /// timeout: the next member is asked when one fails, and, with
    /// `hedge`, also each time `hedge` passes without an answer.
    fn attempt<T, F, Fut>(
        &self,
        consistency: Consistency,
        call: F,
        hedge: Option<Duration>,
    ) -> Result<T, EtcdError>
    where
        T: Send + 'static,
        F: Fn(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>> + Send + 'static,
    {
        let timeout = self.timeout;
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let attempts: Vec<(usize, Attempt<T>)> = self
                .order()
                .map(|index| {
                    let member = &self.members[index];
                    let client = match consistency {
                        Consistency::Quorum => member.strict.clone(),
                        Consistency::Local => member.relaxed.clone(),
                    };
                    (index, Box::pin(call(client)) as Attempt<T>)
                })
                .collect();
            let budget = deadline.saturating_duration_since(std::time::Instant::now());
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            self.handle().spawn(async move {
                let _ = tx.send(race(attempts, budget, hedge).await);
            });
            let Ok(outcome) = rx.recv() else {
                return Err(EtcdError::Refused("the etcd client stopped".into()));
            };
            if let Some((index, value)) = outcome.value {
                self.preferred.store(index, Ordering::Relaxed);
                return Ok(value);
            }
            let mut answers = Vec::new();
            // A read applies nothing: a broken connection to one member
            // leaves nothing in doubt, and the members are asked again
            // as after refusals (a dead member's error during the
            // election that follows its death must not end a read).
            let may_write = hedge.is_none();
            let mut ambiguous = false;
            for (index, result) in &outcome.failures {
                let url = &self.members[*index].url;
                match result {
                    Some(e) => match classify(e) {
                        Class::Final => return Err(EtcdError::Refused(describe(e))),
                        Class::NotApplied => answers.push(format!("{url}: {}", describe(e))),
                        Class::Ambiguous => {
                            ambiguous |= may_write;
                            answers.push(format!("{url}: {}", describe(e)));
                        }
                    },
                    None => {
                        ambiguous |= may_write;
                        answers.push(format!("{url}: no answer within {timeout:?}"));
                    }
                }
            }
            // Every member refused at once (an election under way, a
            // member restarting): asked again while the bound allows.
            let pause = std::time::Instant::now() + RETRY_PAUSE;
            if ambiguous || pause >= deadline {
                return Err(Unreachable { answers, ambiguous }.into());
            }
            std::thread::sleep(RETRY_PAUSE);
        }
    }
}

/// The pause before members that all refused at once are asked again.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// One member's attempt at a call.
type Attempt<T> = Pin<Box<dyn Future<Output = Result<T, etcd_client::Error>> + Send>>;

/// How a call went: the first answer, if one came in time, and every
/// attempt that failed (`None`: no answer in time), in the order asked.
struct Outcome<T> {
    value: Option<(usize, T)>,
    failures: Vec<(usize, Option<etcd_client::Error>)>,
}

/// Runs `attempts` (member index, attempt) in order, the next one when
/// one fails or `hedge` passes without an answer, until one succeeds, one
/// fails in a way every member would, or `timeout` passes. Attempts
/// still running then are dropped.
async fn race<T: Send + 'static>(
    attempts: Vec<(usize, Attempt<T>)>,
    timeout: Duration,
    hedge: Option<Duration>,
) -> Outcome<T> {
    let deadline = Instant::now() + timeout;
    let mut waiting = attempts.into_iter();
    let mut running = JoinSet::new();
    let mut asked = Vec::new();
    let mut failures = Vec::new();
    let mut next_hedge = deadline;
    let mut ask = |running: &mut JoinSet<_>, next_hedge: &mut Instant| {
        let Some((index, attempt)) = waiting.next() else {
            *next_hedge = deadline;
            return false;
        };
        asked.push(index);
        running.spawn(async move { (index, attempt.await) });
        *next_hedge = hedge.map_or(deadline, |h| (Instant::now() + h).min(deadline));
        true
    };
    ask(&mut running, &mut next_hedge);
    let value = loop {
        tokio::select! {
            joined = running.join_next(), if !running.is_empty() => {
                let Some(Ok((index, result))) = joined else { continue };
                match result {
                    Ok(value) => break Some((index, value)),
                    Err(e) => {
                        let last = matches!(classify(&e), Class::Final);
                        failures.push((index, Some(e)));
                        if last || (!ask(&mut running, &mut next_hedge) && running.is_empty()) {
                            break None;
                        }
                    }
                }
            }
            () = tokio::time::sleep_until(next_hedge), if next_hedge < deadline => {
                ask(&mut running, &mut next_hedge);
            }
            () = tokio::time::sleep_until(deadline) => break None,
        }
    };
    if value.is_none() {
        let answered: Vec<usize> = failures.iter().map(|(index, _)| *index).collect();
        for index in asked {
            if !answered.contains(&index) {
                failures.push((index, None));
            }
        }
    }
    Outcome { value, failures }
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
