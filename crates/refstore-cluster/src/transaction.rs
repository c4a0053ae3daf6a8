//! Ref transactions as etcd transactions.
//!
//! A transaction is planned from linearizable reads: the refs its updates
//! name, the symbolic refs they go through, and, for each ref it creates,
//! the names that would conflict with it (a ref at a prefix of its name, a
//! ref below it). Then ONE etcd `Txn` writes every new value, the
//! repository's stamp and the transaction's log record, on condition that
//! nothing the plan read has changed: each ref read still has the
//! `mod_revision` it was read with (0 for a ref that did not exist), and
//! each directory found empty is still empty. That condition is stronger
//! than comparing each ref's expected old value: it also covers where a
//! symbolic ref pointed and directory/file conflicts, and it makes a push
//! atomic and compare-and-swap across every node. When the condition
//! fails, another writer got in between: the transaction is planned again
//! from fresh reads, so a stale expected value is then rejected as git
//! rejects it, and a batch keeps git's per-ref semantics.
//!
//! When a member times out after the request was sent, the transaction may
//! have been applied there, and the next member's attempt then fails its
//! condition. The log record's key is unique to each attempt, so finding
//! it tells that the transaction was applied and its outcome is reported.

use crate::cluster::EtcdBackend;
use crate::etcd::{unavailable, Consistency, EtcdError};
use crate::keys::Value;
use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp, TxnOpResponse};
use refstore_refs::availability::{self, ExistingRefs};
use refstore_refs::files::reflog::autocreates;
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::files::SYMREF_MAX_DEPTH;
use refstore_refs::plan;
use refstore_refs::transaction::{Change, Outcome, Rejected, Transaction};
use refstore_refs::value::{Peeled, Target};
use refstore_refs::{CommitError, ObjectId, ReadError, RefName};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

/// How many times a transaction is planned again after other writers
/// changed what it read.
const ATTEMPTS: u32 = 64;

/// Reads batched in one etcd request.
const READ_BATCH: usize = 100;

/// Commits `tx`: see the module's documentation.
pub(crate) fn commit(
    backend: &EtcdBackend,
    tx: &Transaction,
    options: &CommitOptions,
) -> Result<Outcome, CommitError> {
    let etcd = backend.cluster().etcd();
    for attempt in 0..ATTEMPTS {
        // Nothing is written before the plan is made.
        let plan = plan(backend, tx, options).map_err(|e| match e {
            CommitError::Unavailable(message) => {
                CommitError::Unavailable(format!("{message}; push refused"))
            }
            e => e,
        })?;
        if plan.writes.is_empty() {
            return Ok(plan.outcome);
        }
        let log_key = backend.keys().log(&backend.cluster().transaction_id());
        let mut writes = plan.writes;
        writes.push(TxnOp::put(
            backend.keys().stamp(),
            backend.cluster().config.node.as_bytes(),
            None,
        ));
        writes.push(TxnOp::put(log_key.clone(), plan.log, None));
        let mut guards = plan.guards;
        guards.push(same_repository(backend)?);
        let operations = guards.len() + writes.len();
        let txn = Txn::new().when(guards).and_then(writes);
        let applied = etcd.call(Consistency::Quorum, move |mut client| {
            let txn = txn.clone();
            async move { Ok(client.txn(txn).await?.succeeded()) }
        });
        match applied {
            Ok(true) => return Ok(plan.outcome),
            Ok(false) => {
                if exists(backend, &log_key)? {
                    return Ok(plan.outcome);
                }
                std::thread::sleep(backoff(attempt));
            }
            Err(EtcdError::Unreachable(e)) if e.ambiguous => {
                return Err(CommitError::Unavailable(format!(
                    "{e}; the update may or may not have been applied"
                )))
            }
            Err(EtcdError::Unreachable(e)) => {
                return Err(CommitError::Unavailable(format!("{e}; push refused")))
            }
            Err(EtcdError::Refused(message)) => {
                return Err(CommitError::Unavailable(format!(
                    "{message} (one transaction of {operations} operations: etcd's --max-txn-ops and --max-request-bytes must allow it)"
                )))
            }
        }
    }
    Err(CommitError::Locked(
        "cluster: other writers kept changing these refs; try again".into(),
    ))
}

/// The condition that the repository is still the one the transaction
/// was planned for: its record unchanged since it was read now, live, and
/// of the incarnation the handle is pinned to, if it is. A push in flight
/// while its repository is deleted, renamed or created again is then
/// refused rather than acknowledged into keys its objects are not behind
/// (a repository created later under the name clears what a deleted one
/// left). Refs kept without a record (imported before records existed)
/// are guarded by the record's absence.
fn same_repository(backend: &EtcdBackend) -> Result<Compare, CommitError> {
    let cluster = backend.cluster();
    let name = backend.name();
    let key = cluster.record_keys().record(name);
    let gone = || {
        CommitError::Unavailable(format!(
            "cluster: repository '{name}' was deleted or renamed while the push was in \
             flight; push refused"
        ))
    };
    match cluster.read_record(name, Consistency::Quorum) {
        Ok((Some(record), revision)) if record.is_live() => match backend.incarnation() {
            Some(id) if id != record.id => Err(gone()),
            _ => Ok(Compare::mod_revision(key, CompareOp::Equal, revision)),
        },
        Ok((Some(_), _)) => Err(gone()),
        Ok((None, _)) if backend.incarnation().is_some() => Err(gone()),
        Ok((None, _)) => Ok(Compare::version(key, CompareOp::Equal, 0)),
        Err(e) => Err(CommitError::Unavailable(format!("{e}; push refused"))),
    }
}

/// The rejections `tx` meets now (a batch's; an atomic transaction fails
/// with its first).
pub(crate) fn check(
    backend: &EtcdBackend,
    tx: &Transaction,
    options: &CommitOptions,
) -> Result<Vec<Rejected>, CommitError> {
    Ok(plan(backend, tx, options)?.outcome.rejected)
}

/// A short wait after a conflict, growing with the attempts and varied so
/// that racing writers do not collide again in step.
fn backoff(attempt: u32) -> Duration {
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() % 5);
    Duration::from_millis(u64::from(attempt.min(20) + 1) * (1 + u64::from(jitter)))
}

fn exists(backend: &EtcdBackend, key: &[u8]) -> Result<bool, CommitError> {
    let key = key.to_vec();
    backend
        .cluster()
        .etcd()
        .read(Consistency::Quorum, move |mut client| {
            let key = key.clone();
            let options = GetOptions::new().with_count_only();
            async move { Ok(client.get(key, Some(options)).await?.count() > 0) }
        })
        .map_err(|e| {
            CommitError::Unavailable(format!("{e}; the update may or may not have been applied"))
        })
}

/// What a transaction writes, on which condition.
struct Plan {
    guards: Vec<Compare>,
    writes: Vec<TxnOp>,
    log: Vec<u8>,
    outcome: Outcome,
}

/// A ref as read, with the revision that last changed it (0: absent).
struct Read {
    value: Option<Value>,
    revision: i64,
}

/// The linearizable reads of one plan, each remembered for the condition.
struct Reader<'b> {
    backend: &'b EtcdBackend,
    refs: HashMap<Vec<u8>, Read>,
    /// Directory (`…/`) → the first ref below it, if any.
    below: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

impl<'b> Reader<'b> {
    fn new(backend: &'b EtcdBackend) -> Self {
        Reader {
            backend,
            refs: HashMap::new(),
            below: BTreeMap::new(),
        }
    }

    /// Reads the refs `names` not read yet, [`READ_BATCH`] per request.
    fn fetch(&mut self, names: &[&[u8]]) -> Result<(), ReadError> {
        let mut wanted: Vec<Vec<u8>> = names
            .iter()
            .filter(|n| !self.refs.contains_key(**n))
            .map(|n| n.to_vec())
            .collect();
        wanted.sort();
        wanted.dedup();
        for chunk in wanted.chunks(READ_BATCH) {
            let keys: Vec<Vec<u8>> = chunk
                .iter()
                .map(|n| self.backend.keys().reference(n))
                .collect();
            let found = self.batch(keys.iter().map(|k| TxnOp::get(k.clone(), None)).collect())?;
            for (name, response) in chunk.iter().zip(found) {
                let read = match response.kvs().first() {
                    Some(kv) => Read {
                        value: Some(
                            Value::decode(name, kv.value(), self.backend.format())
                                .map_err(|e| ReadError::Unavailable(e.to_string()))?,
                        ),
                        revision: kv.mod_revision(),
                    },
                    None => Read {
                        value: None,
                        revision: 0,
                    },
                };
                self.refs.insert(name.clone(), read);
            }
        }
        Ok(())
    }

    /// Finds, for each directory in `dirs` not looked at yet, the first
    /// ref below it.
    fn fetch_below(&mut self, dirs: &[Vec<u8>]) -> Result<(), ReadError> {
        let wanted: Vec<&Vec<u8>> = dirs
            .iter()
            .filter(|d| !self.below.contains_key(*d))
            .collect();
        for chunk in wanted.chunks(READ_BATCH) {
            let ops = chunk
                .iter()
                .map(|dir| {
                    let (start, end) = self.backend.keys().refs_starting_with(dir);
                    let options = GetOptions::new()
                        .with_range(end)
                        .with_limit(1)
                        .with_keys_only();
                    TxnOp::get(start, Some(options))
                })
                .collect();
            let found = self.batch(ops)?;
            for (dir, response) in chunk.iter().zip(found) {
                let first = response
                    .kvs()
                    .first()
                    .and_then(|kv| self.backend.keys().ref_name(kv.key()).map(<[u8]>::to_vec));
                self.below.insert((*dir).clone(), first);
            }
        }
        Ok(())
    }

    /// Runs `ops` (reads) in one etcd transaction: one revision, one round
    /// trip.
    fn batch(&self, ops: Vec<TxnOp>) -> Result<Vec<etcd_client::GetResponse>, ReadError> {
        let txn = Txn::new().and_then(ops);
        let responses = self
            .backend
            .cluster()
            .etcd()
            .read(Consistency::Quorum, move |mut client| {
                let txn = txn.clone();
                async move { Ok(client.txn(txn).await?.op_responses()) }
            })
            .map_err(unavailable)?;
        Ok(responses
            .into_iter()
            .filter_map(|r| match r {
                TxnOpResponse::Get(get) => Some(get),
                _ => None,
            })
            .collect())
    }

    fn get(&mut self, name: &RefName) -> Result<Option<Value>, ReadError> {
        if !self.refs.contains_key(name.as_bytes()) {
            self.fetch(&[name.as_bytes()])?;
        }
        Ok(self.refs[name.as_bytes()].value.clone())
    }

    /// Follows `name` through symbolic refs to the ref an update changes.
    fn deref_target(&mut self, name: &RefName) -> Result<RefName, ReadError> {
        let mut current = name.clone();
        for _ in 0..=SYMREF_MAX_DEPTH {
            match self.get(&current)?.map(|v| v.target) {
                Some(Target::Symbolic(next)) => current = next,
                _ => return Ok(current),
            }
        }
        Err(ReadError::SymrefTooDeep(name.clone()))
    }

    /// The object `name` resolves to, if any.
    fn resolve(&mut self, name: &RefName) -> Result<Option<ObjectId>, ReadError> {
        let target = self.deref_target(name)?;
        Ok(self
            .get(&target)?
            .and_then(|v| v.target.object_id().copied()))
    }

    /// The condition: everything read is as it was read.
    fn guards(&self) -> Vec<Compare> {
        let keys = self.backend.keys();
        let mut guards: Vec<Compare> = self
            .refs
            .iter()
            .map(|(name, read)| {
                Compare::mod_revision(keys.reference(name), CompareOp::Equal, read.revision)
            })
            .collect();
        for (dir, first) in &self.below {
            if first.is_none() {
                let (start, end) = keys.refs_starting_with(dir);
                guards.push(Compare::version(start, CompareOp::Equal, 0).with_range(end));
            }
        }
        guards
    }
}

/// The plan's answers to the availability check.
struct Existing<'r, 'b> {
    reader: &'r mut Reader<'b>,
    error: Option<ReadError>,
}

impl ExistingRefs for Existing<'_, '_> {
    fn contains(&mut self, name: &[u8]) -> bool {
        if !self.reader.refs.contains_key(name) {
            if let Err(e) = self.reader.fetch(&[name]) {
                self.error.get_or_insert(e);
                return false;
            }
        }
        self.reader.refs[name].value.is_some()
    }

    fn seek(&mut self, from: &[u8]) -> Option<Vec<u8>> {
        if !self.reader.below.contains_key(from) {
            if let Err(e) = self.reader.fetch_below(&[from.to_vec()]) {
                self.error.get_or_insert(e);
                return None;
            }
        }
        self.reader.below[from].clone()
    }
}

/// Reads what `tx` depends on and works out its writes.
fn plan(
    backend: &EtcdBackend,
    tx: &Transaction,
    options: &CommitOptions,
) -> Result<Plan, CommitError> {
    let mut outcome = Outcome::default();
    let mut reader = Reader::new(backend);
    let names: Vec<&[u8]> = tx.updates.iter().map(|u| u.name.as_bytes()).collect();
    reader.fetch(&names)?;

    // Follow symbolic refs; refuse a second update of one ref.
    let planned = plan::follow_symrefs(tx, &mut outcome, |name| reader.deref_target(name))?;

    // Directory/file conflicts of the refs the transaction creates, their
    // reads batched.
    let targets: Vec<&[u8]> = planned.iter().map(|p| p.target.as_bytes()).collect();
    reader.fetch(&targets)?;
    let mut missing = Vec::new();
    for p in &planned {
        if !p.target.is_root_ref() && reader.get(&p.target)?.is_none() {
            missing.push(p.target.clone());
        }
    }
    let prefixes: Vec<&[u8]> = missing.iter().flat_map(|m| m.prefixes()).collect();
    reader.fetch(&prefixes)?;
    let dirs: Vec<Vec<u8>> = missing
        .iter()
        .map(|m| {
            let mut dir = m.as_bytes().to_vec();
            dir.push(b'/');
            dir
        })
        .collect();
    reader.fetch_below(&dirs)?;
    let affected: BTreeSet<RefName> = planned.iter().map(|p| p.target.clone()).collect();
    let mut existing = Existing {
        reader: &mut reader,
        error: None,
    };
    let conflicts = availability::check(&missing, &affected, &mut existing);
    if let Some(e) = existing.error {
        return Err(e.into());
    }
    let mut blocked = availability::rejections(conflicts);

    // Old values, new values, log lines.
    let null = backend.format().null_id();
    let head = RefName::new("HEAD").expect("valid");
    let head_target = match reader.get(&head)? {
        Some(value) => value.target.symbolic().cloned(),
        None => None,
    };
    let mut writes = Vec::new();
    let mut log = Vec::new();
    for p in planned {
        let update = &tx.updates[p.index];
        if let Some(reason) = blocked.remove(&p.target) {
            plan::reject(tx, &mut outcome, &p.target, reason)?;
            continue;
        }
        let old = reader.get(&p.target)?.map(|v| v.target);
        let old_id = match &old {
            Some(Target::Object(id)) => Some(*id),
            Some(Target::Symbolic(to)) => reader.resolve(to)?,
            None => None,
        };
        if let Err(reason) = update.expected.check(&old, old_id) {
            plan::reject(tx, &mut outcome, &p.target, reason)?;
            continue;
        }
        let key = backend.keys().reference(p.target.as_bytes());
        let old_or_null = old_id.unwrap_or(null);
        let mut logged: Option<ObjectId> = None;
        match &update.change {
            Change::Set(target) if old.as_ref() == Some(target) => {}
            Change::Set(Target::Symbolic(to)) => {
                let value = Value {
                    target: Target::Symbolic(to.clone()),
                    peeled: Peeled::Unknown,
                };
                writes.push(TxnOp::put(key, value.encode(), None));
            }
            Change::Set(Target::Object(id)) => {
                let value = Value {
                    target: Target::Object(*id),
                    peeled: backend.peel(id),
                };
                writes.push(TxnOp::put(key, value.encode(), None));
                logged = Some(*id);
            }
            Change::Delete => {
                if old.is_some() {
                    writes.push(TxnOp::delete(key, None));
                }
                logged = Some(null);
            }
            Change::Verify => {}
        }
        if let Some(new) = logged {
            let mut names: Vec<&RefName> = vec![&p.target];
            names.extend(p.via.as_ref());
            if p.via.is_none() && head_target.as_ref() == Some(&p.target) {
                names.push(&head);
            }
            for name in names {
                if tx.create_reflog || autocreates(options.log_updates, name.as_bytes()) {
                    log_line(&mut log, name, &old_or_null, &new, options, tx);
                }
            }
        }
        outcome.applied += 1;
    }
    let guards = if writes.is_empty() {
        Vec::new()
    } else {
        reader.guards()
    };
    Ok(Plan {
        guards,
        writes,
        log,
        outcome,
    })
}

/// One reflog line: `<ref> <old> <new> <signature>\t<message>`.
fn log_line(
    out: &mut Vec<u8>,
    name: &RefName,
    old: &ObjectId,
    new: &ObjectId,
    options: &CommitOptions,
    tx: &Transaction,
) {
    out.extend_from_slice(name.as_bytes());
    out.push(b' ');
    old.write_hex(out);
    out.push(b' ');
    new.write_hex(out);
    out.push(b' ');
    out.extend_from_slice(options.signature.as_bytes());
    out.push(b'\t');
    if let Some(message) = &tx.message {
        out.extend_from_slice(message.replace('\n', " ").as_bytes());
    }
    out.push(b'\n');
}
