//! A node's link to its cluster ([`Cluster`]) and the handle on one
//! repository's refs in etcd ([`EtcdBackend`]): what the ref store
//! ([`crate::backend`]), its transactions and the import share.

use crate::cache::{Caches, Fresh, Refs, RepoCache};
use crate::config::ClusterConfig;
use crate::etcd::{unavailable, Consistency, Etcd, EtcdError};
use crate::keys::{RepoKeys, Value};
use crate::records::{not_in_cluster, Record};
use refstore_refs::{ObjectFormat, PeelObjects, ReadError, RefName};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A node's link to its cluster's etcd: the connection and the copies of
/// the repositories it serves.
#[derive(Debug)]
pub struct Cluster {
    /// The cluster file.
    pub config: ClusterConfig,
    etcd: Arc<Etcd>,
    caches: Caches,
    transactions: AtomicU64,
    /// Why etcd could not be reached, and when a read found it so. Reads
    /// that follow within one etcd timeout, by any request of the node,
    /// do not wait for etcd again: a request makes several (the
    /// repository's record, HEAD, what it points to, the listing), and a
    /// node cut off from etcd should refuse within one timeout, not one
    /// per read.
    cut_off: Mutex<Option<(Instant, EtcdError)>>,
    /// Each repository's record as the latest read through etcd's leader
    /// found it, and when that read was sent ([`Cluster::recent_record`]).
    confirmed_records: Mutex<HashMap<String, (Option<Record>, Instant)>>,
}

/// How old a confirmation may be for what a request reads as of a recent
/// moment rather than the latest: whether to admit it
/// ([`Cluster::recent_record`]), and the refs that pick the tags sent
/// with a pack ([`refstore_refs::Backend::recent`]). Whatever a request
/// promises about the refs (a listing, a single ref, a push's checks) is
/// still read through etcd's leader after it began.
pub const RECENT: Duration = Duration::from_secs(1);

impl Cluster {
    /// Joins the cluster `config` describes (nothing is sent to etcd yet).
    pub fn connect(config: ClusterConfig) -> Result<Arc<Cluster>, EtcdError> {
        let etcd = Etcd::connect(&config)?;
        Ok(Arc::new(Cluster {
            config,
            etcd,
            caches: Caches::default(),
            transactions: AtomicU64::new(0),
            cut_off: Mutex::new(None),
            confirmed_records: Mutex::new(HashMap::new()),
        }))
    }

    /// The refs of the repository called `name` (its path below the
    /// served root), whose ids are in `format`.
    /// Every listing through it confirms the node's copy anew.
    pub fn refs(self: &Arc<Self>, name: &str, format: ObjectFormat) -> Arc<EtcdBackend> {
        self.backend(name, format, None)
    }

    /// The refs of the repository called `name` as one client request,
    /// begun at `since`, reads them: a confirmation of the node's copy
    /// sent since then answers it, and the copy its first listing used
    /// answers its later listings too, until the request commits a
    /// transaction.
    ///
    /// A request is one operation for its client, answered linearizably
    /// if everything it reads is the cluster's state at one moment within
    /// it: a confirming read (the repository's stamp, read through etcd's
    /// leader) sent after the request began shows every push acknowledged
    /// before it began. So the read that admitted the request
    /// ([`Cluster::current_record`], which reads the stamp with the
    /// record) confirms its listings too, and a fetch's `ls-refs`, which
    /// lists its prefixes and resolves `HEAD`, costs no further read. A
    /// handle that lives longer than one request (maintenance, imports)
    /// is made by [`Cluster::refs`] instead.
    pub fn request_refs(
        self: &Arc<Self>,
        name: &str,
        format: ObjectFormat,
        since: Instant,
    ) -> Arc<EtcdBackend> {
        let request = Request {
            began: since,
            since: Mutex::new(since),
            listed: Mutex::new(None),
        };
        self.backend(name, format, Some(request))
    }

    /// Notes that the stamp of the repository called `name` read
    /// `revision` through etcd's leader, by a read sent at `asked`.
    pub(crate) fn note_stamp(&self, name: &str, revision: i64, asked: Instant) {
        let keys = RepoKeys::new(&self.config.key_prefix, name);
        self.caches.repo(&keys).note_stamp(revision, asked);
    }

    /// Notes that a read through etcd's leader sent at `asked` found the
    /// record of `name` to be `record`; the latest sent is kept.
    pub(crate) fn note_record(&self, name: &str, record: Option<Record>, asked: Instant) {
        let mut confirmed = lock(&self.confirmed_records);
        match confirmed.get(name) {
            Some((_, at)) if *at > asked => {}
            _ => {
                confirmed.insert(name.to_owned(), (record, asked));
            }
        }
    }

    /// The live record of `name`, if the latest read through etcd's
    /// leader found it live and was sent within the last [`RECENT`], and
    /// no change of the record was seen since ([`Cluster::forget_record`]).
    /// A request that reads refs confirms the record again with its first
    /// listing ([`EtcdBackend::snapshot`]); this answers only whether to
    /// admit it.
    pub fn recent_record(&self, name: &str) -> Option<Record> {
        let confirmed = lock(&self.confirmed_records);
        let (record, asked) = confirmed.get(name)?;
        let record = record.as_ref().filter(|r| r.is_live())?;
        (asked.elapsed() <= RECENT).then(|| record.clone())
    }

    /// What the latest read through etcd's leader found the record of
    /// `name` to be, if that read was sent at or after `since` and no
    /// change of the record was seen after it.
    pub(crate) fn record_read_since(&self, name: &str, since: Instant) -> Option<Option<Record>> {
        let confirmed = lock(&self.confirmed_records);
        let (record, asked) = confirmed.get(name)?;
        (*asked >= since).then(|| record.clone())
    }

    /// Forgets what reads found the record of `name` to be: a change of it
    /// was seen (by the watch of the records).
    pub fn forget_record(&self, name: &str) {
        lock(&self.confirmed_records).remove(name);
    }

    fn backend(
        self: &Arc<Self>,
        name: &str,
        format: ObjectFormat,
        request: Option<Request>,
    ) -> Arc<EtcdBackend> {
        self.handle(name, format, request, false)
    }

    fn handle(
        self: &Arc<Self>,
        name: &str,
        format: ObjectFormat,
        request: Option<Request>,
        recent: bool,
    ) -> Arc<EtcdBackend> {
        Arc::new(EtcdBackend {
            cluster: self.clone(),
            name: name.to_owned(),
            keys: RepoKeys::new(&self.config.key_prefix, name),
            format,
            peeler: Mutex::new(None),
            incarnation: Mutex::new(None),
            request,
            recent,
        })
    }

    pub(crate) fn etcd(&self) -> &Arc<Etcd> {
        &self.etcd
    }

    /// Why etcd could not be reached, if a read of this node found so
    /// within the last etcd timeout.
    pub fn known_cut_off(&self) -> Option<EtcdError> {
        let cut_off = lock(&self.cut_off);
        let (at, error) = cut_off.as_ref()?;
        (at.elapsed() < self.config.etcd_timeout).then(|| error.clone())
    }

    /// Notes that a read found etcd unreachable for `error`.
    pub(crate) fn note_cut_off(&self, error: &EtcdError) {
        *lock(&self.cut_off) = Some((Instant::now(), error.clone()));
    }

    /// A name for a transaction's log record, unique in the cluster.
    pub(crate) fn transaction_id(&self) -> String {
        let n = self.transactions.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("{nanos:020}-{}-{n}", self.config.node)
    }
}

/// The refs of one repository of the cluster, as one request (a
/// connection's service) uses them.
#[derive(Debug)]
pub struct EtcdBackend {
    cluster: Arc<Cluster>,
    /// The repository's name (its path below the served root).
    name: String,
    keys: RepoKeys,
    format: ObjectFormat,
    peeler: Mutex<Option<Arc<dyn PeelObjects>>>,
    /// The incarnation of the repository (its record's id) the node's
    /// copy behind this handle is of, when known: transactions then commit
    /// only while the record is still that incarnation's.
    incarnation: Mutex<Option<String>>,
    /// For a handle of one request ([`Cluster::request_refs`]).
    request: Option<Request>,
    /// Listings may be answered from the node's copy as of a recent moment
    /// ([`EtcdBackend::recent_view`]).
    recent: bool,
}

/// What a handle of one request knows of it.
#[derive(Debug)]
struct Request {
    /// When it began: a read of the repository's record sent since then
    /// shows whether the cluster still held the incarnation it was
    /// admitted for.
    began: Instant,
    /// When it began, or when it last committed a transaction: a stamp
    /// read sent before then may not show what it committed.
    since: Mutex<Instant>,
    /// The copy its first listing used, once there is one.
    listed: Mutex<Option<Arc<Refs>>>,
}

impl EtcdBackend {
    pub(crate) fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Ties this handle to the repository's incarnation `id`: the
    /// incarnation of the copy whose objects a push stores.
    pub fn pin_incarnation(&self, id: String) {
        *lock(&self.incarnation) = Some(id);
    }

    pub(crate) fn incarnation(&self) -> Option<String> {
        lock(&self.incarnation).clone()
    }

    pub(crate) fn keys(&self) -> &RepoKeys {
        &self.keys
    }

    pub(crate) fn format(&self) -> ObjectFormat {
        self.format
    }

    /// The peeled value of `id` to record, when the store was lent a way
    /// to peel.
    pub(crate) fn peel(&self, id: &refstore_refs::ObjectId) -> refstore_refs::value::Peeled {
        use refstore_refs::value::Peeled;
        let peeler = self
            .peeler
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        match peeler.and_then(|p| p.peel(id)) {
            Some(peeled) => Peeled::Tag(peeled),
            None => Peeled::Unknown,
        }
    }

    /// True if etcd holds any ref of the repository.
    pub fn has_refs(&self) -> Result<bool, ReadError> {
        let (start, end) = self.keys.refs_starting_with(b"");
        self.cluster
            .etcd
            .read(Consistency::Quorum, move |mut client| {
                let options = etcd_client::GetOptions::new()
                    .with_range(end.clone())
                    .with_count_only();
                let start = start.clone();
                async move { Ok(client.get(start, Some(options)).await?.count() > 0) }
            })
            .map_err(unavailable)
    }

    /// The stored value of `name`: linearizable; or, when etcd cannot be
    /// reached and stale reads are allowed, from the node's copy if it is
    /// young enough; else refused. A request's handle is refused, as its
    /// listings are, once the incarnation it was admitted for is gone.
    pub(crate) fn value(&self, name: &RefName) -> Result<Option<Value>, ReadError> {
        if let Some(e) = self.known_cut_off() {
            return self
                .copy_instead(e)
                .map(|refs| refs.get(name.as_bytes()).cloned());
        }
        if let Some(refs) = self.confirm_held()? {
            return Ok(refs.get(name.as_bytes()).cloned());
        }
        let key = self.keys.reference(name.as_bytes());
        let read = self
            .cluster
            .etcd
            .read(Consistency::Quorum, move |mut client| {
                let key = key.clone();
                async move {
                    let mut response = client.get(key, None).await?;
                    Ok(response.take_kvs().pop().map(|kv| kv.into_key_value().1))
                }
            });
        let raw = match read {
            Ok(raw) => raw,
            Err(e @ EtcdError::Unreachable(_)) => {
                self.note_cut_off(&e);
                return self
                    .copy_instead(e)
                    .map(|refs| refs.get(name.as_bytes()).cloned());
            }
            Err(e) => return Err(unavailable(e)),
        };
        raw.map(|raw| Value::decode(name.as_bytes(), &raw, self.format))
            .transpose()
            .map_err(|e| ReadError::Unavailable(e.to_string()))
    }

    fn known_cut_off(&self) -> Option<EtcdError> {
        self.cluster.known_cut_off()
    }

    fn note_cut_off(&self, error: &EtcdError) {
        self.cluster.note_cut_off(error);
    }

    /// The node's copy when etcd could not be reached (`error`), if stale
    /// reads are allowed and it is young enough; else the refusal.
    fn copy_instead(&self, error: EtcdError) -> Result<Arc<Refs>, ReadError> {
        let cache = self.cluster.caches.repo(&self.keys);
        match cache.within(self.cluster.config.stale_reads) {
            Some((refs, age)) => {
                self.answered_stale(age, &error);
                Ok(refs)
            }
            None => Err(self.refused(&cache, error)),
        }
    }

    /// This request's view of the refs as of a recent moment
    /// ([`refstore_refs::Backend::recent`]): its listings are answered
    /// from the node's copy if a read through etcd's leader confirmed it
    /// current within the last [`RECENT`] and its watch has kept it so
    /// since, without a read of their own; otherwise as this handle's
    /// are. `None` for a handle that is not one request's.
    pub(crate) fn recent_view(&self) -> Option<Arc<EtcdBackend>> {
        let request = self.request.as_ref()?;
        let request = Request {
            began: request.began,
            since: Mutex::new(*lock(&request.since)),
            listed: Mutex::new(lock(&request.listed).clone()),
        };
        let view = self
            .cluster
            .handle(&self.name, self.format, Some(request), true);
        *lock(&view.peeler) = lock(&self.peeler).clone();
        *lock(&view.incarnation) = self.incarnation();
        Some(view)
    }

    /// The node's current copy of the repository's refs (or, if allowed,
    /// a copy young enough when etcd cannot be reached).
    /// A handle of one request answers from the copy its first listing
    /// confirmed ([`Cluster::request_refs`]), once the record is known to
    /// have been held since the request began ([`EtcdBackend::confirm_held`]):
    /// a request is never answered from the copy of a repository deleted
    /// before it began.
    pub(crate) fn snapshot(&self) -> Result<Arc<Refs>, ReadError> {
        if let Some(listed) = self.request.as_ref().and_then(|r| lock(&r.listed).clone()) {
            return Ok(listed);
        }
        let cache = self.cluster.caches.repo(&self.keys);
        let since = self.request.as_ref().map(|r| *lock(&r.since));
        // A confirmation sent since the request began holds even if a read
        // of this node found etcd unreachable after it.
        let confirmed = since.is_some_and(|since| cache.stamp_sent_since(since).is_some());
        if let Some(e) = self.known_cut_off().filter(|_| !confirmed) {
            return self.copy_instead(e);
        }
        if self.recent && !confirmed {
            if let Some(refs) = cache.confirmed_within(RECENT) {
                return Ok(refs);
            }
        }
        if let Some(refs) = self.confirm_held()? {
            return Ok(refs);
        }
        let stale_reads = self.cluster.config.stale_reads;
        match cache.refs(
            &self.cluster.etcd,
            &self.keys,
            self.format,
            stale_reads,
            since,
        ) {
            Ok(Fresh::Current(refs)) => {
                if let Some(request) = &self.request {
                    *lock(&request.listed) = Some(refs.clone());
                }
                Ok(refs)
            }
            Ok(Fresh::Stale { refs, age, error }) => {
                self.note_cut_off(&error);
                self.answered_stale(age, &error);
                Ok(refs)
            }
            Err(e @ EtcdError::Unreachable(_)) => {
                self.note_cut_off(&e);
                Err(self.refused(&cache, e))
            }
            Err(e) => Err(unavailable(e)),
        }
    }

    /// For a handle of one request, whether the cluster held the
    /// incarnation it was admitted for at a moment since the request
    /// began: by what a read of the record sent since then found (the
    /// read that admitted it, or an earlier read of this request's), else
    /// by one transaction now that reads the record with the stamp (and so
    /// confirms the copy too). A read of the stamp alone, as a listing
    /// outside requests sends, confirms the copy but not the record.
    /// Always held for a handle outside requests.
    /// `Ok(None)` when it was, and the read may go on; the refusal when
    /// it was not; when etcd cannot be reached, the node's copy if stale
    /// reads allow it, else that refusal.
    fn confirm_held(&self) -> Result<Option<Arc<Refs>>, ReadError> {
        let Some(request) = &self.request else {
            return Ok(None);
        };
        let record = match self.cluster.record_read_since(&self.name, request.began) {
            Some(record) => record,
            None => match self.cluster.current_record(&self.name) {
                Ok(record) => record,
                Err(e @ EtcdError::Unreachable(_)) => return self.copy_instead(e).map(Some),
                Err(e) => return Err(unavailable(e)),
            },
        };
        if self.is_held_by(record.as_ref()) {
            Ok(None)
        } else {
            Err(ReadError::Unavailable(not_in_cluster(&self.name)))
        }
    }

    /// True if `record` says the cluster holds the repository, as the
    /// incarnation this handle's copy is of (when it is known).
    fn is_held_by(&self, record: Option<&Record>) -> bool {
        record.is_some_and(|record| {
            record.is_live() && self.incarnation().is_none_or(|id| id == record.id)
        })
    }

    /// Notes a read answered from a copy etcd could not confirm.
    fn answered_stale(&self, age: Duration, error: &EtcdError) {
        tracing::warn!(
            "{error}; answering from this node's copy of the refs, confirmed current {age:?} ago"
        );
        if let Some(observer) = refstore_fs::observe::observer() {
            observer.stale_read();
        }
    }

    /// The refusal of a read that etcd could not confirm current, saying
    /// why the node's copy is not used instead.
    fn refused(&self, cache: &RepoCache, error: EtcdError) -> ReadError {
        let why = match (self.cluster.config.stale_reads, cache.confirmed_age()) {
            (None, _) => "this node does not answer from its copy of the refs, which may be stale".to_owned(),
            (Some(_), None) => "this node has no copy of these refs that etcd confirmed".to_owned(),
            (Some(limit), Some(age)) => format!(
                "this node's copy of the refs was confirmed current {:.1}s ago, more than max_staleness_ms ({} ms) allows",
                age.as_secs_f64(),
                limit.as_millis()
            ),
        };
        ReadError::Unavailable(format!("{error}; {why}"))
    }

    /// Forgets the copy a request's listings were answered from, and
    /// what confirmed it: after its own transaction, a request lists what
    /// it committed.
    pub(crate) fn forget_confirmed(&self) {
        if let Some(request) = &self.request {
            *lock(&request.since) = Instant::now();
            *lock(&request.listed) = None;
        }
    }

    /// Lends the store a way to peel tags, for the peeled values it
    /// records.
    pub(crate) fn lend_peeler(&self, peeler: Arc<dyn PeelObjects>) {
        *lock(&self.peeler) = Some(peeler);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
