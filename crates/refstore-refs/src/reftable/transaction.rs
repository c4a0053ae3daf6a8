//! Committing a transaction in the reftable format: the whole transaction
//! is ONE new table on top of the stack, so it is all-or-nothing even
//! across a crash.
//!
//! Preparing ([`ReftableBackend::prepare`]):
//! 1. Take `tables.list.lock` and read the stack under it: nothing another
//!    writer does can slip in between the checks and the new table.
//! 2. Resolve each update through symbolic refs (unless `no_deref`), reject
//!    duplicates, and run the batched availability check over the stack
//!    (one lookup per distinct prefix, one re-seekable merged iterator).
//! 3. Check old values and build the table's records: new values,
//!    tombstones for deleted refs and for their reflog entries, and the
//!    reflog entries `core.logAllRefUpdates` asks for.
//!
//! Committing ([`Prepared::commit`]) writes the table, makes it durable
//! (one data flush point), then swaps `tables.list` to name it and flushes
//! the directory. Only then is success reported.

use super::backend::{read_in, resolve_in, table_error, to_ref, ReftableBackend};
use super::log_record::{LogRecord, LogValue};
use super::ref_record::{RefRecord, RefValue};
use super::stack::{Records, Stack};
use super::{compaction, reflog, MergedRefs};
use crate::availability::{self, ExistingRefs};
use crate::error::{CommitError, ReadError};
use crate::files::reflog::autocreates;
use crate::files::transaction::CommitOptions;
use crate::observed::CommitClock;
use crate::plan::{self, Planned, ReadRef, Reads};
use crate::transaction::{Change, Outcome, Rejected, Rejection, Transaction};
use crate::value::Target;
use crate::{ObjectId, RefName};
use refstore_fs::flush::FlushBatch;
use refstore_fs::lock::LockFile;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

/// A transaction checked under `tables.list.lock`, its table's records
/// built; nothing is written yet. Dropping it releases the lock.
pub struct Prepared<'a> {
    backend: &'a ReftableBackend,
    stack: Stack,
    lock: LockFile,
    update_index: u64,
    records: Records,
    batch: FlushBatch,
    outcome: Outcome,
    clock: CommitClock,
}

impl Prepared<'_> {
    /// Rejections so far (batch transactions only).
    pub fn rejected(&self) -> &[Rejected] {
        &self.outcome.rejected
    }

    /// Releases the lock; nothing changes.
    pub fn abort(self) -> Result<(), CommitError> {
        self.lock.rollback()?;
        Ok(())
    }

    /// Writes the transaction's table and publishes it, then compacts the
    /// stack if it has grown out of shape.
    pub fn commit(self) -> Result<Outcome, CommitError> {
        let Prepared {
            backend,
            mut stack,
            lock,
            update_index,
            records,
            mut batch,
            outcome,
            clock,
        } = self;
        if records.refs.is_empty() && records.logs.is_empty() {
            lock.rollback()?;
            clock.committed(&outcome);
            return Ok(outcome);
        }
        let options = &backend.options;
        stack.add_locked(lock, options.write, update_index, records, &mut batch)?;
        // Compaction is upkeep after the commit, not part of it.
        clock.committed(&outcome);
        if options.auto_compaction {
            // The transaction is durable already; a compaction that cannot
            // run now (another writer holds a lock) is left to the next one.
            if let Err(e) = compaction::auto_compact(&mut stack, options, &mut batch) {
                tracing::warn!("reftable auto-compaction skipped: {e}");
            }
        }
        Ok(outcome)
    }
}

/// The stack's refs for the availability check; a read error is kept and
/// reported once the check is over (the check's interface cannot fail).
struct Existing<'s> {
    stack: &'s Stack,
    cursor: Option<MergedRefs<'s>>,
    error: Option<ReadError>,
}

impl Existing<'_> {
    fn failed<T>(&mut self, error: super::Error, fallback: T) -> T {
        self.error.get_or_insert(table_error(self.stack, error));
        fallback
    }
}

impl ExistingRefs for Existing<'_> {
    fn contains(&mut self, name: &[u8]) -> bool {
        match self.stack.merged().ref_record(name) {
            Ok(found) => found.is_some(),
            Err(e) => self.failed(e, false),
        }
    }

    /// The first live name `>= from` that starts with `from`, which is all
    /// the check asks ("is any ref below this directory?"). Tombstones are
    /// walked only within that range: after many deletions the stack holds
    /// long runs of them, and skipping past the range would cost a scan of
    /// every tombstone per name.
    fn seek(&mut self, from: &[u8]) -> Option<Vec<u8>> {
        if self.cursor.is_none() {
            match self.stack.merged().refs_with_tombstones() {
                Ok(cursor) => self.cursor = Some(cursor),
                Err(e) => return self.failed(e, None),
            }
        }
        let cursor = self.cursor.as_mut()?;
        if let Err(e) = cursor.seek(from) {
            return self.failed(e, None);
        }
        loop {
            match cursor.next()? {
                Ok(record) if !record.name.starts_with(from) => return None,
                Ok(record) if record.value == RefValue::Deletion => continue,
                Ok(record) => return Some(record.name),
                Err(e) => return self.failed(e, None),
            }
        }
    }
}

/// The records a transaction adds, keyed so that each ref and each log
/// entry appears once.
#[derive(Default)]
struct Builder {
    refs: BTreeMap<Vec<u8>, RefRecord>,
    logs: BTreeMap<(Vec<u8>, u64), LogRecord>,
}

impl ReftableBackend {
    /// Commits `tx`. Atomic transactions fail as a whole with the first
    /// rejection; batch transactions report rejections in the outcome.
    pub fn commit(
        &self,
        tx: &Transaction,
        options: &CommitOptions,
    ) -> Result<Outcome, CommitError> {
        self.prepare(Cow::Borrowed(tx), options)?.commit()
    }

    /// Locks the stack, checks every update of `tx` and builds the new
    /// table's records, without writing anything. The stack stays locked
    /// until the prepared transaction is committed or aborted (or dropped).
    pub fn prepare<'a>(
        &'a self,
        tx: Cow<'a, Transaction>,
        options: &'a CommitOptions,
    ) -> Result<Prepared<'a>, CommitError> {
        let clock = CommitClock::start();
        let mut stack = self.stack()?;
        let lock = stack.lock(self.options.lock_timeout)?;
        let update_index = stack.next_update_index();
        let (records, outcome) = self.plan(&stack, &tx, options, update_index)?;
        Ok(Prepared {
            backend: self,
            stack,
            lock,
            update_index,
            records,
            batch: self.flush_batch(options.flush),
            outcome,
            clock,
        })
    }

    /// Checks `tx` against `stack` and returns the records of its table.
    fn plan(
        &self,
        stack: &Stack,
        tx: &Transaction,
        options: &CommitOptions,
        update_index: u64,
    ) -> Result<(Records, Outcome), CommitError> {
        let mut outcome = Outcome::default();

        // Resolve symbolic refs and reject duplicates.
        let mut reads = reads(stack, tx)?;
        let planned = plan::follow_symrefs(tx, &mut outcome, |name| reads.deref_target(name))?;
        let mut blocked = unavailable(stack, &planned, &mut reads)?;

        // Check old values and build the records.
        let head = RefName::new("HEAD").expect("valid");
        let head_target = match read_in(stack, &head)? {
            Some(r) => r.target.symbolic().cloned(),
            None => None,
        };
        let log = LogWriter {
            stack,
            options,
            tx,
            update_index,
            head_target,
            null: self.format.null_id(),
        };
        let mut builder = Builder::default();
        for p in planned {
            let update = &tx.updates[p.index];
            if let Some(reason) = blocked.remove(&p.target) {
                plan::reject(tx, &mut outcome, &p.target, reason)?;
                continue;
            }
            let old = reads.get(&p.target)?.map(|r| r.target);
            // A symbolic ref changed in place is compared and logged by the
            // object it resolves to, as git does.
            let old_id = match &old {
                Some(Target::Object(id)) => Some(*id),
                Some(Target::Symbolic(to)) => resolve_in(stack, to)?.and_then(|r| r.id),
                None => None,
            };
            if let Err(reason) = update.expected.check(&old, old_id) {
                plan::reject(tx, &mut outcome, &p.target, reason)?;
                continue;
            }
            self.record_change(&log, &p, old.as_ref(), old_id, &mut builder)?;
            outcome.applied += 1;
        }
        let records = Records {
            refs: builder.refs.into_values().collect(),
            logs: builder.logs.into_values().collect(),
        };
        Ok((records, outcome))
    }

    /// Adds to `builder` the records of the planned update `p`, whose ref
    /// holds `old` (resolving to `old_id`), its old value checked: the
    /// ref's new value and the reflog entries the change makes.
    fn record_change(
        &self,
        log: &LogWriter,
        p: &Planned,
        old: Option<&Target>,
        old_id: Option<ObjectId>,
        builder: &mut Builder,
    ) -> Result<(), CommitError> {
        let tx = log.tx;
        let old_or_null = old_id.unwrap_or(log.null);
        let set = |builder: &mut Builder, value: RefValue| {
            builder.refs.insert(
                p.target.as_bytes().to_vec(),
                RefRecord {
                    name: p.target.as_bytes().to_vec(),
                    update_index: log.update_index,
                    value,
                },
            );
        };
        match &tx.updates[p.index].change {
            // Setting a ref to the value it has writes nothing and logs
            // nothing for the ref; HEAD's reflog still records it when
            // HEAD is involved, as in git.
            Change::Set(target) if old == Some(target) => {
                if let Some(id) = target.object_id() {
                    log.head_only(p, id, id, tx.message.as_deref(), builder)?;
                }
            }
            // A symbolic ref set in place is logged only with a message
            // and when its new target resolves.
            Change::Set(Target::Symbolic(to)) => {
                set(builder, RefValue::Symbolic(to.as_bytes().to_vec()));
                let new = resolve_in(log.stack, to)?.and_then(|r| r.id);
                if let (Some(new), Some(_)) = (new, tx.message.as_deref()) {
                    log.append(&p.target, old_or_null, new, tx.create_reflog, builder)?;
                }
            }
            Change::Set(Target::Object(id)) => {
                set(builder, self.object_value(*id));
                log.update(p, old_or_null, *id, builder)?;
            }
            Change::Delete => {
                if old.is_some() {
                    set(builder, RefValue::Deletion);
                }
                log.drop_reflog(&p.target, builder)?;
                log.update(p, old_or_null, log.null, builder)?;
            }
            // git records a verify that goes through HEAD in HEAD's
            // reflog, as an entry without message towards the null id.
            Change::Verify => {
                log.head_only(p, &old_or_null, &log.null, None, builder)?;
            }
        }
        Ok(())
    }
}

/// The planned refs that cannot be created, with why: the availability of
/// every touched ref that does not exist yet, against the stack and the
/// transaction's other refs, in input order.
fn unavailable<R: ReadRef>(
    stack: &Stack,
    planned: &[Planned],
    reads: &mut Reads<R>,
) -> Result<BTreeMap<RefName, Rejection>, CommitError> {
    let mut missing = Vec::new();
    let affected: BTreeSet<RefName> = planned.iter().map(|p| p.target.clone()).collect();
    for p in planned {
        if !p.target.is_root_ref() && reads.get(&p.target)?.is_none() {
            missing.push(p.target.clone());
        }
    }
    let mut existing = Existing {
        stack,
        cursor: None,
        error: None,
    };
    let conflicts = availability::check(&missing, &affected, &mut existing);
    if let Some(error) = existing.error {
        return Err(error.into());
    }
    Ok(availability::rejections(conflicts))
}

/// The reads of `tx`'s planning, the names of its updates read first in
/// ascending order, so the lookups walk each table forward once.
fn reads<'s>(stack: &'s Stack, tx: &Transaction) -> Result<Reads<impl ReadRef + 's>, ReadError> {
    let mut lookup = stack.merged().lookup().map_err(|e| table_error(stack, e))?;
    let mut reads = Reads::new(tx.updates.len(), move |name: &RefName| {
        match lookup
            .get(name.as_bytes())
            .map_err(|e| table_error(stack, e))?
        {
            Some(record) => Ok(Some(to_ref(stack, record)?)),
            None => Ok(None),
        }
    });
    let mut names: Vec<&RefName> = tx.updates.iter().map(|u| &u.name).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        reads.get(name)?;
    }
    Ok(reads)
}

/// Reflog entries of one transaction, following the files backend's rules.
struct LogWriter<'a> {
    stack: &'a Stack,
    options: &'a CommitOptions,
    tx: &'a Transaction,
    update_index: u64,
    head_target: Option<RefName>,
    null: ObjectId,
}

impl LogWriter<'_> {
    /// The entries of one update: the changed ref (unless it is deleted),
    /// the symbolic ref it was reached through, and HEAD when HEAD points
    /// at the changed ref.
    fn update(
        &self,
        p: &Planned,
        old: ObjectId,
        new: ObjectId,
        builder: &mut Builder,
    ) -> Result<(), ReadError> {
        let mut names = Vec::new();
        if !new.is_null() {
            names.push(p.target.clone());
        }
        names.extend(p.via.clone());
        if self.head_target.as_ref() == Some(&p.target) && p.via.is_none() {
            names.push(RefName::new("HEAD").expect("valid"));
        }
        for name in names {
            self.append(&name, old, new, self.tx.create_reflog, builder)?;
        }
        Ok(())
    }

    /// An entry in HEAD's reflog only, if the update involves HEAD (names
    /// it, or changes the ref HEAD points at).
    fn head_only(
        &self,
        p: &Planned,
        old: &ObjectId,
        new: &ObjectId,
        message: Option<&str>,
        builder: &mut Builder,
    ) -> Result<(), ReadError> {
        let via_head = p.via.as_ref().is_some_and(|v| v.as_bytes() == b"HEAD");
        let points_at_target = p.via.is_none() && self.head_target.as_ref() == Some(&p.target);
        if !via_head && !points_at_target {
            return Ok(());
        }
        let head = RefName::new("HEAD").expect("valid");
        if !self.logs(&head, false)? {
            return Ok(());
        }
        let record = reflog::record(
            head.as_bytes(),
            self.update_index,
            *old,
            *new,
            &self.options.signature,
            message,
        );
        builder
            .logs
            .entry((record.name.clone(), record.update_index))
            .or_insert(record);
        Ok(())
    }

    /// Adds an entry to `name`'s reflog if the policy (or an existing
    /// reflog) says so.
    fn append(
        &self,
        name: &RefName,
        old: ObjectId,
        new: ObjectId,
        force_create: bool,
        builder: &mut Builder,
    ) -> Result<(), ReadError> {
        if !self.logs(name, force_create)? {
            return Ok(());
        }
        let record = reflog::record(
            name.as_bytes(),
            self.update_index,
            old,
            new,
            &self.options.signature,
            self.tx.message.as_deref(),
        );
        builder
            .logs
            .entry((record.name.clone(), record.update_index))
            .or_insert(record);
        Ok(())
    }

    /// Whether an update of `name` is logged: the policy creates its
    /// reflog, or the reflog exists already.
    fn logs(&self, name: &RefName, force_create: bool) -> Result<bool, ReadError> {
        if force_create || autocreates(self.options.log_updates, name.as_bytes()) {
            return Ok(true);
        }
        let merged = self.stack.merged();
        let mut logs = merged
            .logs()
            .and_then(|mut logs| logs.seek(name.as_bytes()).map(|()| logs))
            .map_err(|e| table_error(self.stack, e))?;
        match logs.next() {
            Some(Ok(record)) => Ok(record.name == name.as_bytes()),
            Some(Err(e)) => Err(table_error(self.stack, e)),
            None => Ok(false),
        }
    }

    /// Tombstones for every entry of `name`'s reflog: a deleted ref loses
    /// its reflog, as in the files backend.
    fn drop_reflog(&self, name: &RefName, builder: &mut Builder) -> Result<(), ReadError> {
        let merged = self.stack.merged();
        let mut logs = merged
            .logs()
            .and_then(|mut logs| logs.seek(name.as_bytes()).map(|()| logs))
            .map_err(|e| table_error(self.stack, e))?;
        for record in &mut logs {
            let record = record.map_err(|e| table_error(self.stack, e))?;
            if record.name != name.as_bytes() {
                break;
            }
            builder.logs.insert(
                (record.name.clone(), record.update_index),
                LogRecord {
                    value: LogValue::Deletion,
                    ..record
                },
            );
        }
        Ok(())
    }
}
