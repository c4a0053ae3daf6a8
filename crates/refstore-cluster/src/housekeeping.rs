//! The cluster's housekeeping of etcd, done by one node at a time (the
//! leader, [`crate::leader`]):
//!
//! - reflog records older than the cluster file's `reflog_expire` (git's
//!   `gc.reflogExpire`: 90 days unless it says otherwise) are deleted, in
//!   batches of [`EXPIRY_BATCH`] keys, never a ref or a stamp, at most
//!   `reflog_expire_per_round` of them in one round (the rest in the
//!   next rounds);
//! - etcd's revision history is compacted to a revision older than
//!   `compaction_retention_s`, so that every copy a node reads and every
//!   watch it starts (at most a few seconds old) is still within it;
//! - every `defrag_interval_s`, the members are defragmented one after
//!   another (a member answers nothing while it defragments), which gives
//!   the space compaction freed back to the disk.
//!
//! Every node samples etcd's revision and reads a member's database size
//! each round, leader or not, so the node taking over has a history of
//! revisions by age and can compact at once, and every node's metrics
//! show etcd's state (reported through `refstore_fs::observe`).

use crate::cluster::Cluster;
use crate::etcd::{Consistency, EtcdError};
use crate::keys::RepoKeys;
use crate::leader::Leadership;
use etcd_client::{
    Client, CompactionOptions, ConnectOptions, DeleteOptions, GetOptions, SortOrder, SortTarget,
};
use refstore_fs::observe;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Log records deleted by one request: well below etcd's default
/// `--max-txn-ops` and small enough for one raft entry.
pub const EXPIRY_BATCH: i64 = 1000;

/// How often a node samples the revision and renews its leadership.
pub const ROUND: Duration = Duration::from_secs(5);

/// How long the leader key outlives a leader that stopped renewing it.
pub const LEADER_TTL: Duration = Duration::from_secs(30);

/// How often the leader expires reflog records.
const EXPIRY_EVERY: Duration = Duration::from_secs(3600);

/// How long one compaction or defragmentation may take before it is
/// given up on.
const MAINTENANCE_TIMEOUT: Duration = Duration::from_secs(300);

/// Deletes the reflog records of every repository the cluster holds that
/// were written before `horizon`; how many were deleted.
pub fn expire_reflogs(cluster: &Cluster, horizon: SystemTime) -> Result<u64, EtcdError> {
    expire_reflogs_within(cluster, horizon, u64::MAX).map(|(expired, _)| expired)
}

/// Deletes at most `budget` of the reflog records written before
/// `horizon`: how many were deleted, and whether that was all of them.
pub fn expire_reflogs_within(
    cluster: &Cluster,
    horizon: SystemTime,
    budget: u64,
) -> Result<(u64, bool), EtcdError> {
    let (records, _) = cluster.records()?;
    let mut left = budget;
    for (name, record) in records {
        if record.is_live() {
            let keys = RepoKeys::new(&cluster.config.key_prefix, &name);
            left -= expire_repository(cluster, &keys, horizon, left)?;
            if left == 0 {
                // Whether records remain is known only by looking; the
                // next round looks, with a budget of its own.
                return Ok((budget, false));
            }
        }
    }
    Ok((budget - left, true))
}

/// The reflog records of one repository written before `horizon`.
fn expire_repository(
    cluster: &Cluster,
    keys: &RepoKeys,
    horizon: SystemTime,
    budget: u64,
) -> Result<u64, EtcdError> {
    // A record's key starts with its time in nanoseconds, 20 digits, so
    // the records older than the horizon are the keys below its key.
    let nanos = horizon
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let start = keys.log("");
    let end = keys.log(&format!("{nanos:020}"));
    let mut expired = 0;
    while expired < budget {
        let limit = EXPIRY_BATCH.min(i64::try_from(budget - expired).unwrap_or(i64::MAX));
        let (from, to) = (start.clone(), end.clone());
        let last = cluster
            .etcd()
            .call(Consistency::Quorum, move |mut client| {
                let options = GetOptions::new()
                    .with_range(to.clone())
                    .with_keys_only()
                    .with_limit(limit)
                    .with_sort(SortTarget::Key, SortOrder::Ascend);
                let from = from.clone();
                async move {
                    let mut response = client.get(from, Some(options)).await?;
                    Ok(response.take_kvs().pop().map(|kv| kv.key().to_vec()))
                }
            })?;
        let Some(mut last) = last else {
            return Ok(expired);
        };
        last.push(0);
        let from = start.clone();
        expired += cluster
            .etcd()
            .call(Consistency::Quorum, move |mut client| {
                let options = DeleteOptions::new().with_range(last.clone());
                let from = from.clone();
                async move { Ok(client.delete(from, Some(options)).await?.deleted() as u64) }
            })?;
    }
    Ok(expired)
}

/// The size of one member's database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSize {
    /// The member's client URL.
    pub url: String,
    /// Its database file's size, in bytes.
    pub db_size: i64,
    /// The part of it in use (the rest is freed space a defragmentation
    /// gives back).
    pub in_use: i64,
}

/// What the last rounds did, for logs and metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Whether this node led in the last round.
    pub leading: bool,
    /// Reflog records this node deleted, in all.
    pub expired: u64,
    /// The revision this node last compacted to (0: none yet).
    pub compacted: i64,
    /// The members' sizes as last read (after a defragmentation).
    pub sizes: Vec<MemberSize>,
}

/// One node's share of the housekeeping: call [`Housekeeping::round`]
/// every [`ROUND`], or let [`Housekeeping::start`] do it.
#[derive(Debug)]
pub struct Housekeeping {
    cluster: Arc<Cluster>,
    leadership: Leadership,
    /// Revisions seen, oldest first, with when.
    samples: VecDeque<(Instant, i64)>,
    last_expiry: Option<Instant>,
    /// Whether the last expiry stopped at its budget with records left.
    expiry_unfinished: bool,
    last_defrag: Option<Instant>,
    report: Report,
}

impl Housekeeping {
    /// This node's housekeeping, with leases of `ttl` on the leader key.
    pub fn new(cluster: Arc<Cluster>, ttl: Duration) -> Housekeeping {
        let key = format!("{}leaders/housekeeping", cluster.config.key_prefix).into_bytes();
        let leadership = Leadership::new(&cluster, key, ttl);
        Housekeeping {
            cluster,
            leadership,
            samples: VecDeque::new(),
            last_expiry: None,
            expiry_unfinished: false,
            last_defrag: None,
            report: Report::default(),
        }
    }

    /// Runs the rounds on a thread of their own, for as long as the process
    /// lives.
    pub fn start(cluster: Arc<Cluster>) {
        let mut housekeeping = Housekeeping::new(cluster, LEADER_TTL);
        let spawned = std::thread::Builder::new()
            .name("refstore-etcd-housekeeping".into())
            .spawn(move || loop {
                if let Err(e) = housekeeping.round() {
                    tracing::warn!("{e}; etcd housekeeping tries again later");
                }
                std::thread::sleep(ROUND);
            });
        if let Err(e) = spawned {
            tracing::error!("cannot start etcd housekeeping: {e}");
        }
    }

    /// What the rounds did so far.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// Gives the leadership up, for another node to take at once.
    pub fn resign(&mut self) {
        self.leadership.resign();
        self.report.leading = false;
    }

    /// One round: samples the revision, and if this node leads, does what
    /// is due.
    pub fn round(&mut self) -> Result<&Report, EtcdError> {
        let revision = self.sample(self.cluster.config.compaction_retention)?;
        self.report.leading = self.leadership.try_lead()?;
        let observer = observe::observer();
        if let Some(o) = observer {
            o.etcd_round(self.report.leading, revision);
        }
        match first_member_size(&self.cluster) {
            Ok(size) => {
                if let Some(o) = observer {
                    o.etcd_db_size(size.db_size, size.in_use);
                }
            }
            Err(e) => tracing::debug!("{e}; etcd's database size is read again next round"),
        }
        if !self.report.leading {
            return Ok(&self.report);
        }
        let config = self.cluster.config.clone();
        if let Some(age) = config.reflog_expire {
            let due = self.last_expiry.is_none_or(|t| t.elapsed() >= EXPIRY_EVERY);
            if due || self.expiry_unfinished {
                let horizon = SystemTime::now().checked_sub(age).unwrap_or(UNIX_EPOCH);
                let budget = config.reflog_expire_per_round;
                let (expired, all) = expire_reflogs_within(&self.cluster, horizon, budget)?;
                if expired > 0 {
                    tracing::info!(expired, all, "expired reflog records in etcd");
                    if let Some(o) = observer {
                        o.etcd_reflog_expired(expired);
                    }
                }
                self.report.expired += expired;
                self.expiry_unfinished = !all;
                if due {
                    self.last_expiry = Some(Instant::now());
                }
            }
        }
        if let Some(retention) = config.compaction_retention {
            self.compact_older_than(retention)?;
        }
        if let Some(interval) = config.defrag_interval {
            let due = self.last_defrag.is_none_or(|t| t.elapsed() >= interval);
            if due && self.report.compacted > 0 {
                self.report.sizes = self.defragment()?;
                self.last_defrag = Some(Instant::now());
            }
        }
        Ok(&self.report)
    }

    /// Notes etcd's current revision, keeping of the older samples only
    /// the newest one at least `retention` old.
    fn sample(&mut self, retention: Option<Duration>) -> Result<i64, EtcdError> {
        let revision = self
            .cluster
            .etcd()
            .call(Consistency::Quorum, |mut client| async move {
                let options = GetOptions::new().with_count_only();
                let response = client.get(vec![0], Some(options)).await?;
                Ok(response.header().map_or(0, |h| h.revision()))
            })?;
        self.samples.push_back((Instant::now(), revision));
        let retention = retention.unwrap_or(Duration::ZERO);
        while self.samples.len() > 1 && self.samples[1].0.elapsed() >= retention {
            self.samples.pop_front();
        }
        Ok(revision)
    }

    /// Compacts to the newest revision seen at least `retention` ago, if it
    /// is newer than the last compaction.
    fn compact_older_than(&mut self, retention: Duration) -> Result<(), EtcdError> {
        match self.samples.front() {
            Some(&(at, revision))
                if at.elapsed() >= retention && revision > self.report.compacted =>
            {
                compact(&self.cluster, revision)?;
                tracing::info!(revision, "compacted etcd's history");
                self.report.compacted = revision;
                if let Some(o) = observe::observer() {
                    o.etcd_compacted(revision);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Defragments every member, one after another.
    fn defragment(&self) -> Result<Vec<MemberSize>, EtcdError> {
        let mut sizes = Vec::new();
        for url in &self.cluster.config.etcd {
            let defragmented = defragment_member(&self.cluster, url);
            if let Some(o) = observe::observer() {
                o.etcd_defragmented(defragmented.is_ok());
            }
            let size = defragmented?;
            tracing::info!(url, db_size = size.db_size, "defragmented an etcd member");
            sizes.push(size);
        }
        Ok(sizes)
    }
}

/// Compacts etcd's history to `revision`, waiting until the space is
/// freed (which takes longer than a request may, hence a client of its
/// own); a revision compacted already is no error.
pub fn compact(cluster: &Cluster, revision: i64) -> Result<(), EtcdError> {
    let mut answers = Vec::new();
    for url in &cluster.config.etcd {
        let compacted = maintain(
            cluster,
            url,
            MAINTENANCE_TIMEOUT,
            move |mut client| async move {
                let options = CompactionOptions::new().with_physical();
                client.compact(revision, Some(options)).await.map(|_| ())
            },
        );
        match compacted {
            Ok(()) => return Ok(()),
            Err(e) if e.contains("required revision has been compacted") => return Ok(()),
            Err(e) if e.contains("future revision") => return Err(EtcdError::Refused(e)),
            Err(e) => answers.push(e),
        }
    }
    Err(crate::etcd::Unreachable {
        answers,
        ambiguous: true,
    }
    .into())
}

/// Defragments the member at `url` and reads its size afterwards.
pub fn defragment_member(cluster: &Cluster, url: &str) -> Result<MemberSize, EtcdError> {
    let url_owned = url.to_owned();
    maintain(
        cluster,
        url,
        MAINTENANCE_TIMEOUT,
        move |mut client| async move {
            client.defragment().await?;
            member_size(&mut client, &url_owned).await
        },
    )
    .map_err(EtcdError::Refused)
}

/// Runs `call` with a client of the member at `url` alone whose requests
/// may take `timeout`; errors name the member.
fn maintain<T, F, Fut>(
    cluster: &Cluster,
    url: &str,
    timeout: Duration,
    call: F,
) -> Result<T, String>
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = Result<T, etcd_client::Error>>,
{
    let options = ConnectOptions::new()
        .with_connect_timeout(cluster.config.etcd_timeout)
        .with_timeout(timeout);
    cluster
        .etcd()
        .handle()
        .block_on(async {
            let client = Client::connect([url.to_owned()], Some(options)).await?;
            call(client).await
        })
        .map_err(|e| format!("{url}: {e}"))
}

/// The size of the database of the first member that answers.
fn first_member_size(cluster: &Cluster) -> Result<MemberSize, EtcdError> {
    let mut answers = Vec::new();
    for url in &cluster.config.etcd {
        let timeout = cluster.config.etcd_timeout;
        match maintain(cluster, url, timeout, |mut client| async move {
            member_size(&mut client, url).await
        }) {
            Ok(size) => return Ok(size),
            Err(e) => answers.push(e),
        }
    }
    Err(EtcdError::Refused(answers.join("; ")))
}

/// The sizes of every member's database.
pub fn member_sizes(cluster: &Cluster) -> Result<Vec<MemberSize>, EtcdError> {
    let mut sizes = Vec::new();
    for url in &cluster.config.etcd {
        let timeout = cluster.config.etcd_timeout;
        let size = maintain(cluster, url, timeout, |mut client| async move {
            member_size(&mut client, url).await
        });
        sizes.push(size.map_err(EtcdError::Refused)?);
    }
    Ok(sizes)
}

async fn member_size(client: &mut Client, url: &str) -> Result<MemberSize, etcd_client::Error> {
    let status = client.status().await?;
    Ok(MemberSize {
        url: url.to_owned(),
        db_size: status.db_size(),
        in_use: status.raft_used_db_size(),
    })
}
