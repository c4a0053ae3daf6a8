//! A node's copy of each repository's refs, for advertisements: a clone
//! of a repository with 100k refs must not read 100k keys from etcd.
//!
//! The copy is read once, at a revision R, and then kept current by an etcd
//! watch of the repository's range from R + 1. A watch alone can lag: a
//! push acknowledged through another node a moment ago may not have
//! reached this node's watch yet, and an advertisement that misses it
//! would break the promise that every node shows an acknowledged push.
//! So each use of the copy starts with one linearizable read of the
//! repository's stamp key, which every transaction writes: its
//! `mod_revision` M is the revision of the repository's last change, as of
//! now. The copy is used once its watch has delivered revision M (waiting a
//! moment for it if needed); a copy whose watch is broken or too slow is
//! read again in full. That one small read costs one round trip through
//! etcd's leader, whatever the number of refs, and keeps advertisements
//! linearizable.
//!
//! When the stamp cannot be read within the etcd bound (no quorum, or
//! this node cut off from etcd by a partition, which from here look the
//! same), nothing confirms the copy is current: a push acknowledged
//! through another node may be missing from it. The read is then refused
//! ([`Fresh::Refused`]), unless the cluster file opts into stale reads
//! (`stale_reads`), in which case the copy is used if it was last
//! confirmed current no longer than `max_staleness_ms` ago
//! ([`Fresh::Stale`]), and refused past that. The time of confirmation
//! is when the confirming read was sent, so the age is never understated.

use crate::etcd::{Consistency, Etcd, EtcdError};
use crate::keys::{RepoKeys, Value};
use etcd_client::{EventType, GetOptions, WatchOptions};
use refstore_refs::ObjectFormat;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A repository's refs by name (root refs included).
pub type Refs = BTreeMap<Box<[u8]>, Value>;

/// How long a read waits for the watch to deliver a change it knows of
/// before reading everything again.
const WATCH_WAIT: Duration = Duration::from_millis(500);

/// Keys read per request when a repository is read in full.
const PAGE: i64 = 10_000;

/// The copies of every repository this node has served.
#[derive(Debug, Default)]
pub struct Caches {
    repos: Mutex<HashMap<Vec<u8>, Arc<RepoCache>>>,
}

impl Caches {
    /// The copy of the repository whose keys are `keys`.
    pub fn repo(&self, keys: &RepoKeys) -> Arc<RepoCache> {
        let mut repos = lock(&self.repos);
        repos
            .entry(keys.stamp())
            .or_insert_with(|| Arc::new(RepoCache::default()))
            .clone()
    }
}

/// One repository's copy.
#[derive(Debug, Default)]
pub struct RepoCache {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    refs: Option<Arc<Refs>>,
    /// The revision the copy reflects.
    revision: i64,
    /// When a read that found the copy current was sent.
    confirmed: Option<Instant>,
    /// The latest read of the stamp through etcd's leader: the revision
    /// it found and when it was sent.
    stamp: Option<(i64, Instant)>,
    /// The watch keeping it current is running.
    watching: bool,
    /// Which read the running watch belongs to: a watch of an older copy
    /// stops touching the state.
    generation: u64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a read of the copy found.
pub enum Fresh {
    /// Current as of a linearizable read.
    Current(Arc<Refs>),
    /// etcd could not be reached and stale reads are allowed: the copy,
    /// last confirmed current `age` ago (within the allowed staleness),
    /// possibly behind.
    Stale {
        /// The copy.
        refs: Arc<Refs>,
        /// Time since the copy was last confirmed current.
        age: Duration,
        /// Why etcd could not confirm it now.
        error: EtcdError,
    },
}

impl RepoCache {
    /// The repository's refs, current as of now (see the module's
    /// documentation for how, and for what happens when etcd cannot be
    /// reached); a copy up to `stale_reads` old when etcd cannot confirm
    /// it, if that is allowed. With `since`, current as of a moment since
    /// then: a read of the stamp sent since `since`, by anyone, serves
    /// instead of a new one.
    pub fn refs(
        self: &Arc<Self>,
        etcd: &Arc<Etcd>,
        keys: &RepoKeys,
        format: ObjectFormat,
        stale_reads: Option<Duration>,
        since: Option<Instant>,
    ) -> Result<Fresh, EtcdError> {
        let known = since.and_then(|since| self.stamp_sent_since(since));
        let (latest, asked) = match known {
            Some(known) => known,
            None => {
                let asked = Instant::now();
                let stamp = keys.stamp();
                let latest = etcd.read(Consistency::Quorum, move |mut client| {
                    let stamp = stamp.clone();
                    async move {
                        let response = client.get(stamp, None).await?;
                        Ok(response.kvs().first().map_or(0, |kv| kv.mod_revision()))
                    }
                });
                match latest {
                    Ok(latest) => {
                        self.note_stamp(latest, asked);
                        (latest, asked)
                    }
                    Err(e) => return self.unconfirmed(stale_reads, e),
                }
            }
        };
        let deadline = Instant::now() + WATCH_WAIT;
        let mut state = lock(&self.state);
        loop {
            match &state.refs {
                Some(refs) if state.watching && state.revision >= latest => {
                    let refs = refs.clone();
                    state.confirmed = Some(asked);
                    return Ok(Fresh::Current(refs));
                }
                _ => {}
            }
            let now = Instant::now();
            if !state.watching || now >= deadline {
                break;
            }
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(state);
        let (refs, revision) = match read_all(etcd, keys, format, Consistency::Quorum) {
            Ok(read) => read,
            Err(e) => return self.unconfirmed(stale_reads, e),
        };
        let refs = Arc::new(refs);
        let mut state = lock(&self.state);
        state.generation += 1;
        state.refs = Some(refs.clone());
        state.revision = revision;
        state.confirmed = Some(asked);
        state.watching = true;
        let generation = state.generation;
        drop(state);
        self.watch(etcd, keys, format, revision, generation);
        Ok(Fresh::Current(refs))
    }

    /// The latest read of the stamp through etcd's leader, if it was sent
    /// at or after `since`: the revision it found and when it was sent.
    pub fn stamp_sent_since(&self, since: Instant) -> Option<(i64, Instant)> {
        lock(&self.state).stamp.filter(|(_, asked)| *asked >= since)
    }

    /// Notes a read of the repository's stamp through etcd's leader, sent
    /// at `asked`, that found `revision`; the latest sent is kept.
    pub fn note_stamp(&self, revision: i64, asked: Instant) {
        let mut state = lock(&self.state);
        if state.stamp.is_none_or(|(_, at)| at <= asked) {
            state.stamp = Some((revision, asked));
        }
    }

    /// What is left when etcd could not confirm the copy: the copy, if
    /// stale reads are allowed and it is young enough; else the error.
    fn unconfirmed(
        &self,
        stale_reads: Option<Duration>,
        error: EtcdError,
    ) -> Result<Fresh, EtcdError> {
        if let EtcdError::Refused(_) = error {
            return Err(error);
        }
        match self.within(stale_reads) {
            Some((refs, age)) => Ok(Fresh::Stale { refs, age, error }),
            None => Err(error),
        }
    }

    /// The copy, if a read through etcd's leader sent within the last
    /// `within` found it current and its watch has kept it so since.
    pub fn confirmed_within(&self, within: Duration) -> Option<Arc<Refs>> {
        let state = lock(&self.state);
        let fresh = state.watching && state.confirmed?.elapsed() <= within;
        fresh.then(|| state.refs.clone()).flatten()
    }

    /// Time since the copy was last confirmed current, if ever.
    pub fn confirmed_age(&self) -> Option<Duration> {
        let state = lock(&self.state);
        state
            .refs
            .as_ref()
            .and(state.confirmed)
            .map(|at| at.elapsed())
    }

    /// The copy and its age, if stale reads are allowed and it was
    /// confirmed current no longer than they allow.
    pub fn within(&self, stale_reads: Option<Duration>) -> Option<(Arc<Refs>, Duration)> {
        let limit = stale_reads?;
        let state = lock(&self.state);
        let age = state.confirmed?.elapsed();
        let refs = state.refs.clone()?;
        (age <= limit).then_some((refs, age))
    }

    /// Keeps the copy of `generation` current from `revision` on, until the
    /// watch breaks or a newer copy replaces it.
    fn watch(
        self: &Arc<Self>,
        etcd: &Arc<Etcd>,
        keys: &RepoKeys,
        format: ObjectFormat,
        revision: i64,
        generation: u64,
    ) {
        let mut client = etcd.preferred_client();
        let cache = self.clone();
        let keys = keys.clone();
        etcd.handle().spawn(async move {
            let (start, end) = keys.watched();
            let options = WatchOptions::new()
                .with_range(end)
                .with_start_revision(revision + 1);
            if let Ok(mut stream) = client.watch(start, Some(options)).await {
                while let Ok(Some(response)) = stream.message().await {
                    if response.canceled() || !cache.apply(&keys, format, generation, &response) {
                        break;
                    }
                }
            }
            let mut state = lock(&cache.state);
            if state.generation == generation {
                state.watching = false;
            }
            drop(state);
            cache.changed.notify_all();
        });
    }

    /// Applies a watch response to the copy of `generation`; false if that
    /// copy was replaced.
    fn apply(
        &self,
        keys: &RepoKeys,
        format: ObjectFormat,
        generation: u64,
        response: &etcd_client::WatchResponse,
    ) -> bool {
        let mut state = lock(&self.state);
        if state.generation != generation {
            return false;
        }
        let mut revision = state.revision;
        if let Some(refs) = state.refs.as_mut() {
            let refs = Arc::make_mut(refs);
            for event in response.events() {
                let Some(kv) = event.kv() else { continue };
                revision = revision.max(kv.mod_revision());
                let Some(name) = keys.ref_name(kv.key()) else {
                    continue;
                };
                match event.event_type() {
                    EventType::Delete => {
                        refs.remove(name);
                    }
                    EventType::Put => match Value::decode(name, kv.value(), format) {
                        Ok(value) => {
                            refs.insert(name.into(), value);
                        }
                        Err(e) => {
                            tracing::error!("{e}");
                            refs.remove(name);
                        }
                    },
                }
            }
        }
        state.revision = revision;
        drop(state);
        self.changed.notify_all();
        true
    }
}

/// Every ref of the repository, and the revision they were read at: one
/// request per [`PAGE`] keys, all at the first one's revision.
pub fn read_all(
    etcd: &Etcd,
    keys: &RepoKeys,
    format: ObjectFormat,
    consistency: Consistency,
) -> Result<(Refs, i64), EtcdError> {
    let (mut start, end) = keys.refs_starting_with(b"");
    let mut refs = Refs::new();
    let mut revision = 0;
    loop {
        let from = start.clone();
        let to = end.clone();
        let pinned = revision;
        let (kvs, more, at) = etcd.read(consistency, move |mut client| {
            let mut options = GetOptions::new().with_range(to.clone()).with_limit(PAGE);
            if pinned > 0 {
                options = options.with_revision(pinned);
            }
            if consistency == Consistency::Local {
                options = options.with_serializable();
            }
            let from = from.clone();
            async move {
                let mut response = client.get(from, Some(options)).await?;
                let at = response.header().map_or(0, |h| h.revision());
                let more = response.more();
                Ok((response.take_kvs(), more, at))
            }
        })?;
        if revision == 0 {
            revision = at;
        }
        for kv in &kvs {
            let Some(name) = keys.ref_name(kv.key()) else {
                continue;
            };
            match Value::decode(name, kv.value(), format) {
                Ok(value) => {
                    refs.insert(name.into(), value);
                }
                Err(e) => tracing::error!("{e}"),
            }
        }
        match kvs.last() {
            Some(last) if more => {
                start = last.key().to_vec();
                start.push(0);
            }
            _ => return Ok((refs, revision)),
        }
    }
}
