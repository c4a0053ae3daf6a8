//! Creating, deleting, renaming and listing the cluster's repositories,
//! each one etcd transaction over the repository's record
//! ([`crate::records`]) and its keys ([`crate::keys::RepoKeys`]):
//!
//! - create: a live record with a new incarnation id, HEAD (symbolic, to
//!   the initial branch) and the stamp, on condition that the name has no
//!   live record and no key;
//! - delete: every key of the repository removed and its record turned
//!   into a tombstone (`state deleted`, same id), on condition that the
//!   record is the live one read;
//! - rename: every key copied under the new name and removed under the
//!   old, the record moved (same id) and a tombstone left behind, on
//!   condition that nothing of the old repository changed since it was
//!   read and the new name has no live record and no key.
//!
//! The nodes apply records to their local copies ([`Cluster::watch_records`]
//! streams the changes); this module only changes etcd.

use crate::cluster::Cluster;
use crate::etcd::{Consistency, EtcdError};
use crate::keys::{RecordKeys, RepoKeys};
use crate::records::{check_name, BadName, Record, RefFormat, State};
use etcd_client::{
    Compare, CompareOp, DeleteOptions, EventType, GetOptions, Txn, TxnOp, WatchOptions,
};
use refstore_refs::ObjectFormat;
use std::sync::mpsc;

/// Why an operation on a repository did not happen.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LifecycleError {
    /// The name cannot name a repository.
    #[error("cluster: {0}")]
    BadName(#[from] BadName),
    /// Something else given is not usable (a branch name).
    #[error("cluster: {0}")]
    Invalid(String),
    /// The name is taken.
    #[error("cluster: repository '{0}' exists already")]
    Exists(String),
    /// The cluster holds no repository of that name.
    #[error("cluster: the cluster holds no repository '{0}'")]
    NotFound(String),
    /// Another operation changed the repository meanwhile.
    #[error("cluster: repository '{0}' changed while this ran; try again")]
    Changed(String),
    /// etcd could not be asked, or refused.
    #[error("{0}")]
    Etcd(#[from] EtcdError),
}

/// What `create` makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRepository {
    /// Its object format.
    pub object_format: ObjectFormat,
    /// Its ref format.
    pub ref_format: RefFormat,
    /// The branch HEAD points at (`main`, not `refs/heads/main`).
    pub initial_branch: String,
}

impl Default for NewRepository {
    /// git's defaults: SHA-1, files, `master`.
    fn default() -> Self {
        NewRepository {
            object_format: ObjectFormat::Sha1,
            ref_format: RefFormat::Files,
            initial_branch: "master".to_owned(),
        }
    }
}

/// One change of a record, as a watch delivers it: the name and its new
/// record (`None` if the key was removed, which the lifecycle never does).
pub type RecordChange = (String, Option<Record>);

/// A record as read, with the revision it was last written at (for the
/// conditions of the next transaction; 0 if there is none).
type Read = (Option<Record>, i64);

impl Cluster {
    pub(crate) fn record_keys(&self) -> RecordKeys {
        RecordKeys::new(&self.config.key_prefix)
    }

    fn repo_keys(&self, name: &str) -> RepoKeys {
        RepoKeys::new(&self.config.key_prefix, name)
    }

    /// The record of `name` and the revision it was last written at.
    pub(crate) fn read_record(
        &self,
        name: &str,
        consistency: Consistency,
    ) -> Result<Read, EtcdError> {
        let key = self.record_keys().record(name);
        self.etcd().call(consistency, move |mut client| {
            let key = key.clone();
            let options =
                (consistency == Consistency::Local).then(|| GetOptions::new().with_serializable());
            async move {
                let response = client.get(key, options).await?;
                Ok(response.kvs().first().map_or((None, 0), |kv| {
                    (Record::decode(kv.value()), kv.mod_revision())
                }))
            }
        })
    }

    /// The record of `name`, linearizable, for a request about to use the
    /// repository: one bounded wait at most. When etcd cannot be reached
    /// (now, or by a read of this node within the last etcd timeout) the
    /// error says so at once, and the reads of the request that follow do
    /// not wait for etcd again.
    ///
    /// The same read (one etcd transaction) reads the repository's stamp,
    /// which confirms the node's copy of its refs for the request
    /// ([`Cluster::request_refs`]): a request's refs cost no read of
    /// their own.
    pub fn current_record(&self, name: &str) -> Result<Option<Record>, EtcdError> {
        if let Some(e) = self.known_cut_off() {
            return Err(e);
        }
        let record_key = self.record_keys().record(name);
        let stamp_key = self.repo_keys(name).stamp();
        let asked = std::time::Instant::now();
        let read = self.etcd().call(Consistency::Quorum, move |mut client| {
            let txn = Txn::new().and_then(vec![
                TxnOp::get(record_key.clone(), None),
                TxnOp::get(stamp_key.clone(), None),
            ]);
            async move {
                let mut gets =
                    client
                        .txn(txn)
                        .await?
                        .op_responses()
                        .into_iter()
                        .map(|op| match op {
                            etcd_client::TxnOpResponse::Get(get) => get.kvs().first().cloned(),
                            _ => None,
                        });
                let record = gets.next().flatten();
                let stamp = gets.next().flatten();
                Ok((
                    record.and_then(|kv| Record::decode(kv.value())),
                    stamp.map_or(0, |kv| kv.mod_revision()),
                ))
            }
        });
        match read {
            Ok((record, stamp)) => {
                self.note_stamp(name, stamp, asked);
                self.note_record(name, record.clone(), asked);
                Ok(record)
            }
            Err(e @ EtcdError::Unreachable(_)) => {
                self.note_cut_off(&e);
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Every record, tombstones included, sorted by name, and the revision
    /// they were read at.
    pub fn records(&self) -> Result<(Vec<(String, Record)>, i64), EtcdError> {
        let keys = self.record_keys();
        let (start, end) = keys.all();
        let (kvs, revision) = self.range(start, end)?;
        let mut records: Vec<(String, Record)> = kvs
            .iter()
            .filter_map(|kv| {
                let name = keys.name_of(kv.key())?;
                match Record::decode(kv.value()) {
                    Some(record) => Some((name, record)),
                    None => {
                        tracing::error!("cluster: the record of '{name}' in etcd is unreadable");
                        None
                    }
                }
            })
            .collect();
        records.sort_by(|a, b| a.0.cmp(&b.0));
        Ok((records, revision))
    }

    /// Every key in `[start, end)`, read linearizably, and the revision it
    /// was read at (one request: records and a repository's keys are few
    /// enough for one transaction anyway).
    fn range(
        &self,
        start: Vec<u8>,
        end: Vec<u8>,
    ) -> Result<(Vec<etcd_client::KeyValue>, i64), EtcdError> {
        self.etcd().call(Consistency::Quorum, move |mut client| {
            let (start, end) = (start.clone(), end.clone());
            async move {
                let mut response = client
                    .get(start, Some(GetOptions::new().with_range(end)))
                    .await?;
                let revision = response.header().map_or(0, |h| h.revision());
                Ok((response.take_kvs(), revision))
            }
        })
    }

    /// The repositories the cluster holds, sorted by name.
    pub fn list(&self) -> Result<Vec<(String, Record)>, LifecycleError> {
        let (records, _) = self.records()?;
        Ok(records.into_iter().filter(|(_, r)| r.is_live()).collect())
    }

    /// A new incarnation id, unique in the cluster.
    fn new_id(&self) -> String {
        self.transaction_id()
    }

    /// The condition that `name` is free: no live record (a tombstone, as
    /// read, may be replaced) and no key of a repository. Keys under a
    /// tombstone are a push that raced the deletion (planned before it,
    /// committed after): they are cleared first. Keys without any record
    /// are a repository imported before the cluster kept records, which
    /// is not free.
    fn free(&self, name: &str) -> Result<Vec<Compare>, LifecycleError> {
        let (record, revision) = self.read_record(name, Consistency::Quorum)?;
        if record.as_ref().is_some_and(Record::is_live) {
            return Err(LifecycleError::Exists(name.to_owned()));
        }
        let record_key = self.record_keys().record(name);
        let (start, end) = self.repo_keys(name).all();
        let unchanged = Compare::mod_revision(record_key, CompareOp::Equal, revision);
        let empty = Compare::version(start.clone(), CompareOp::Equal, 0).with_range(end.clone());
        if record.is_some() {
            // etcd refuses to delete a range and write in it in one
            // transaction: the leftovers go in one of their own.
            let clear = Txn::new()
                .when([unchanged.clone()])
                .and_then([TxnOp::delete(
                    start,
                    Some(DeleteOptions::new().with_range(end)),
                )]);
            if !self.run_txn(clear)? {
                return Err(LifecycleError::Changed(name.to_owned()));
            }
        } else if !self.run_txn(Txn::new().when([empty.clone()]))? {
            return Err(LifecycleError::Invalid(format!(
                "etcd holds refs of '{name}' but no record (imported before the cluster kept \
                 records?); record it with `refstore cluster import --record-only`"
            )));
        }
        Ok(vec![unchanged, empty])
    }

    /// Runs one transaction; true if its condition held.
    pub(crate) fn run_txn(&self, txn: Txn) -> Result<bool, EtcdError> {
        self.etcd().call(Consistency::Quorum, move |mut client| {
            let txn = txn.clone();
            async move { Ok(client.txn(txn).await?.succeeded()) }
        })
    }

    /// Creates the repository `name` (see the module's documentation).
    pub fn create(&self, name: &str, new: &NewRepository) -> Result<Record, LifecycleError> {
        check_name(name)?;
        let head = format!("refs/heads/{}", new.initial_branch);
        if refstore_refs::name::check(head.as_bytes(), Default::default()).is_err() {
            return Err(LifecycleError::Invalid(format!(
                "invalid initial branch name: '{}'",
                new.initial_branch
            )));
        }
        let record = Record {
            state: State::Live,
            id: self.new_id(),
            object_format: new.object_format,
            ref_format: new.ref_format,
            head: head.clone(),
        };
        let guards = self.free(name)?;
        let keys = self.repo_keys(name);
        let txn = Txn::new().when(guards).and_then([
            TxnOp::put(self.record_keys().record(name), record.encode(), None),
            TxnOp::put(keys.reference(b"HEAD"), format!("ref: {head}"), None),
            TxnOp::put(keys.stamp(), self.config.node.as_bytes(), None),
        ]);
        self.applied(txn, name, &record)
    }

    /// A live record with a new incarnation id, for an import
    /// ([`crate::import::import`] keeps the id of a live record it
    /// replaces).
    pub fn new_record(
        &self,
        object_format: ObjectFormat,
        ref_format: RefFormat,
        head: String,
    ) -> Record {
        Record {
            state: State::Live,
            id: self.new_id(),
            object_format,
            ref_format,
            head,
        }
    }

    /// Deletes the repository `name`: its keys, and its record turned into
    /// a tombstone. Returns the tombstone.
    pub fn delete(&self, name: &str) -> Result<Record, LifecycleError> {
        check_name(name)?;
        let (live, revision) = self.live(name)?;
        let tombstone = Record {
            state: State::Deleted,
            ..live
        };
        let (start, end) = self.repo_keys(name).all();
        let key = self.record_keys().record(name);
        let txn = Txn::new()
            .when([Compare::mod_revision(
                key.clone(),
                CompareOp::Equal,
                revision,
            )])
            .and_then([
                TxnOp::delete(start, Some(DeleteOptions::new().with_range(end))),
                TxnOp::put(key, tombstone.encode(), None),
            ]);
        self.applied(txn, name, &tombstone)
    }

    /// Renames the repository `from` to `to`, which must be free. Returns
    /// its record under the new name.
    pub fn rename(&self, from: &str, to: &str) -> Result<Record, LifecycleError> {
        check_name(from)?;
        check_name(to)?;
        if from == to {
            return Err(LifecycleError::Exists(to.to_owned()));
        }
        let (live, revision) = self.live(from)?;
        let mut guards = self.free(to)?;
        let old = self.repo_keys(from);
        let new = self.repo_keys(to);
        let (start, end) = old.all();
        let (kvs, at) = self.range(start.clone(), end.clone())?;
        let records = self.record_keys();
        guards.push(Compare::mod_revision(
            records.record(from),
            CompareOp::Equal,
            revision,
        ));
        // No key of the old repository written since it was read (a
        // deletion also writes the stamp, which is among them).
        guards.push(
            Compare::mod_revision(start.clone(), CompareOp::Less, at + 1).with_range(end.clone()),
        );
        guards.push(Compare::version(
            old.stamp(),
            CompareOp::Equal,
            stamp_version(&kvs, &old),
        ));
        let mut ops = vec![TxnOp::delete(
            start.clone(),
            Some(DeleteOptions::new().with_range(end)),
        )];
        for kv in &kvs {
            let Some(rest) = kv.key().strip_prefix(start.as_slice()) else {
                continue;
            };
            let mut key = new.all().0;
            key.extend_from_slice(rest);
            ops.push(TxnOp::put(key, kv.value().to_vec(), None));
        }
        let moved = Record { ..live.clone() };
        ops.push(TxnOp::put(records.record(to), moved.encode(), None));
        ops.push(TxnOp::put(
            records.record(from),
            Record {
                state: State::Deleted,
                ..live
            }
            .encode(),
            None,
        ));
        let operations = guards.len() + ops.len();
        let txn = Txn::new().when(guards).and_then(ops);
        match self.applied(txn, from, &moved) {
            Err(LifecycleError::Etcd(EtcdError::Refused(message))) => Err(LifecycleError::Etcd(
                EtcdError::Refused(format!(
                    "{message} (one transaction of {operations} operations: etcd's --max-txn-ops and --max-request-bytes must allow it)"
                )),
            )),
            other => other,
        }
    }

    /// The live record of `name` and its revision.
    fn live(&self, name: &str) -> Result<(Record, i64), LifecycleError> {
        match self.read_record(name, Consistency::Quorum)? {
            (Some(record), revision) if record.is_live() => Ok((record, revision)),
            _ => Err(LifecycleError::NotFound(name.to_owned())),
        }
    }

    /// Runs `txn`; `record` if it was applied.
    fn applied(&self, txn: Txn, name: &str, record: &Record) -> Result<Record, LifecycleError> {
        match self.run_txn(txn) {
            Ok(true) => Ok(record.clone()),
            Ok(false) => Err(LifecycleError::Changed(name.to_owned())),
            Err(e) => Err(e.into()),
        }
    }

    /// The changes of records after `revision`, as they happen, in the
    /// order etcd applied them (a transaction's changes arrive together).
    /// The channel closes when the watch breaks (etcd unreachable, the
    /// revision compacted away): read every record again and watch anew.
    pub fn watch_records(&self, revision: i64) -> mpsc::Receiver<Vec<RecordChange>> {
        let (tx, rx) = mpsc::channel();
        let mut client = self.etcd().preferred_client();
        let keys = self.record_keys();
        self.etcd().handle().spawn(async move {
            let (start, end) = keys.all();
            let options = WatchOptions::new()
                .with_range(end)
                .with_start_revision(revision + 1);
            let Ok(mut stream) = client.watch(start, Some(options)).await else {
                return;
            };
            while let Ok(Some(response)) = stream.message().await {
                if response.canceled() {
                    break;
                }
                let changes: Vec<RecordChange> = response
                    .events()
                    .iter()
                    .filter_map(|event| {
                        let kv = event.kv()?;
                        let name = keys.name_of(kv.key())?;
                        let record = match event.event_type() {
                            EventType::Put => Record::decode(kv.value()),
                            EventType::Delete => None,
                        };
                        Some((name, record))
                    })
                    .collect();
                if !changes.is_empty() && tx.send(changes).is_err() {
                    break;
                }
            }
        });
        rx
    }
}

/// The version of the stamp among `kvs` (0 if it is not there).
fn stamp_version(kvs: &[etcd_client::KeyValue], keys: &RepoKeys) -> i64 {
    let stamp = keys.stamp();
    kvs.iter()
        .find(|kv| kv.key() == stamp.as_slice())
        .map_or(0, |kv| kv.version())
}
