//! The reftable ref backend: the refs and reflogs of a repository kept in
//! the stack at `$GIT_DIR/reftable`, read through the same operations as
//! the files backend.
//!
//! Every ref, root refs such as `HEAD` included, lives in the stack; the
//! `HEAD` file and `refs/heads` in the git directory are stubs that only
//! make the directory look like a repository to older tools. A read opens
//! the stack as `tables.list` names it at that moment, so readers never see
//! part of a transaction. Writing is in [`transaction`](super::transaction).

use super::error::Error;
use super::reader::Table;
use super::ref_record::{RefRecord, RefValue};
use super::stack::{Stack, StackError};
use super::tables_list;
use super::writer::WriteOptions;
use super::Version;
use crate::error::ReadError;
use crate::files::{Listing, Resolved};
use crate::value::{Ref, Target};
use crate::{ObjectFormat, ObjectId, PeelObjects, RefName};
use refstore_fs::config::ReftableSettings;
use refstore_fs::flush::{BatchMechanism, FlushBatch, FlushMethod};
use refstore_fs::Vfs;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// How the backend writes and compacts tables (git's `reftable.*` keys).
#[derive(Debug, Clone, Copy)]
pub struct ReftableOptions {
    /// Block size, restart interval, object index; the version follows the
    /// object format.
    pub write: WriteOptions,
    /// `reftable.lockTimeout`: how long to wait for `tables.list.lock`.
    pub lock_timeout: Duration,
    /// `reftable.autoCompaction`: compact after each transaction.
    pub auto_compaction: bool,
    /// `reftable.geometricFactor`: each table at least this many times
    /// larger than the next newer one after auto-compaction.
    pub geometric_factor: u32,
    /// How the flush points of the `batch` flush method are carried out.
    pub batch_mechanism: BatchMechanism,
}

impl ReftableOptions {
    /// Git's defaults for a repository of `format`.
    pub fn new(format: ObjectFormat) -> Self {
        ReftableOptions {
            write: WriteOptions {
                version: Version::for_format(format),
                ..WriteOptions::default()
            },
            lock_timeout: Duration::from_millis(100),
            auto_compaction: true,
            geometric_factor: 2,
            batch_mechanism: BatchMechanism::default(),
        }
    }

    /// The options `settings` (read from configuration) give for a
    /// repository of `format`.
    pub fn from_settings(settings: &ReftableSettings, format: ObjectFormat) -> Self {
        let mut options = ReftableOptions::new(format);
        options.write.block_size = settings.block_size;
        options.write.restart_interval = settings.restart_interval;
        options.write.index_objects = settings.index_objects;
        options.lock_timeout = settings.lock_timeout;
        options.auto_compaction = settings.auto_compaction;
        options.geometric_factor = settings.geometric_factor.max(2);
        options
    }
}

/// A reftable-format ref store.
#[derive(Debug, Clone)]
pub struct ReftableBackend {
    pub(super) vfs: Arc<dyn Vfs>,
    pub(super) dir: PathBuf,
    pub(super) format: ObjectFormat,
    pub(super) options: ReftableOptions,
    /// The stack as last read, reused while `tables.list` names the same
    /// tables (table names never repeat, so the same names mean the same
    /// bytes): a lookup then costs one read of `tables.list`.
    snapshot: Arc<Mutex<Option<Arc<Stack>>>>,
    /// Peels the tags written refs name, so their records carry the
    /// peeled value as git's and JGit's writers record it.
    peeler: Arc<OnceLock<Arc<dyn PeelObjects>>>,
}

impl ReftableBackend {
    /// The store of the repository whose common directory is `common_dir`.
    pub fn new(
        vfs: Arc<dyn Vfs>,
        common_dir: &Path,
        format: ObjectFormat,
        options: ReftableOptions,
    ) -> Self {
        ReftableBackend {
            vfs,
            dir: common_dir.join("reftable"),
            format,
            options,
            snapshot: Arc::default(),
            peeler: Arc::default(),
        }
    }

    /// Lends the store a way to peel tags: refs written from then on that
    /// name an annotated tag are recorded with its peeled value. The first
    /// peeler given stays.
    pub fn set_peeler(&self, peeler: Arc<dyn PeelObjects>) {
        let _ = self.peeler.set(peeler);
    }

    /// The record value of a ref set to `id`: with the peeled object when
    /// `id` is an annotated tag and a peeler can tell.
    pub(super) fn object_value(&self, id: ObjectId) -> RefValue {
        match self.peeler.get().and_then(|peeler| peeler.peel(&id)) {
            Some(peeled) if peeled != id => RefValue::Peeled { target: id, peeled },
            _ => RefValue::Object(id),
        }
    }

    /// The repository's object format.
    pub fn object_format(&self) -> ObjectFormat {
        self.format
    }

    /// The stack's directory (`$GIT_DIR/reftable`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The writing options in use.
    pub fn options(&self) -> &ReftableOptions {
        &self.options
    }

    /// The filesystem the store uses.
    pub fn vfs(&self) -> &Arc<dyn Vfs> {
        &self.vfs
    }

    /// A flush batch for the stack's files.
    pub(super) fn flush_batch(&self, method: FlushMethod) -> FlushBatch {
        FlushBatch::new(self.vfs.clone(), method, &self.dir)
            .with_mechanism(self.options.batch_mechanism)
    }

    /// The stack as `tables.list` names it now, read afresh.
    pub fn stack(&self) -> Result<Stack, StackError> {
        Stack::open(self.vfs.clone(), self.dir.clone())
    }

    /// The stack as `tables.list` names it now, for reading: the previous
    /// snapshot if it lists the same tables.
    pub fn snapshot(&self) -> Result<Arc<Stack>, StackError> {
        let list_path = self.dir.join("tables.list");
        let names = match self.vfs.read(&list_path) {
            Ok(content) => tables_list::parse(&content).ok(),
            Err(e) if e.is_not_found() => Some(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut cached = self.snapshot.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some(names), Some(stack)) = (&names, cached.as_ref()) {
            if stack.names() == names.as_slice() {
                return Ok(stack.clone());
            }
        }
        let stack = Arc::new(self.stack()?);
        *cached = Some(stack.clone());
        Ok(stack)
    }

    /// The stored value of `name` without following symbolic refs.
    pub fn read(&self, name: &RefName) -> Result<Option<Ref>, ReadError> {
        read_in(&*self.snapshot()?, name)
    }

    /// Follows symbolic refs from `name` to an object id, as git does (at
    /// most [`crate::resolve::SYMREF_MAX_DEPTH`] levels). `None` if `name` does not exist.
    pub fn resolve(&self, name: &RefName) -> Result<Option<Resolved>, ReadError> {
        resolve_in(&*self.snapshot()?, name)
    }

    /// Replaces every table of the stack with one (what `pack-refs` does to
    /// a reftable repository): one data and one directory flush point
    /// before the new table is listed, the old tables removed afterwards.
    pub fn compact_all(&self, flush: FlushMethod) -> Result<(), StackError> {
        let mut stack = self.stack()?;
        let mut batch = self.flush_batch(flush);
        stack.compact_all(self.options.write, self.options.lock_timeout, &mut batch)
    }

    /// Every ref below `refs/` whose name starts with `prefix`, sorted, with
    /// the peeled values the tables record.
    pub fn list(&self, prefix: &[u8]) -> Result<Listing, ReadError> {
        let stack = self.snapshot()?;
        let mut listing = Listing::default();
        let mut refs = stack
            .merged()
            .seek_refs(prefix)
            .map_err(|e| table_error(&stack, e))?;
        for record in &mut refs {
            let record = record.map_err(|e| table_error(&stack, e))?;
            if !record.name.starts_with(prefix) {
                break;
            }
            if record.name.starts_with(b"refs/") {
                listing.refs.push(to_ref(&stack, record)?);
            }
        }
        Ok(listing)
    }

    /// The names of the refs whose value or recorded peeled value is `id`,
    /// found through the tables' object indexes (tables without one are
    /// scanned). A ref naming a tag whose peeled value its record does not
    /// carry is not found by the peeled value: git's, JGit's and refstore's
    /// writers record it for every tag they can read.
    pub fn names_for_object(&self, id: &ObjectId) -> Result<BTreeSet<Vec<u8>>, ReadError> {
        let stack = self.snapshot()?;
        let records = stack
            .merged()
            .refs_for_object(id)
            .map_err(|e| table_error(&stack, e))?;
        Ok(records.into_iter().map(|record| record.name).collect())
    }
}

/// A damaged record or table found while reading the stack as a whole:
/// the error names the first table that cannot be read through (found by
/// reading each one, which only happens on this error path), or the
/// stack's directory if every table reads.
pub(super) fn table_error(stack: &Stack, error: Error) -> ReadError {
    let damaged = stack
        .names()
        .iter()
        .zip(stack.tables())
        .find(|(_, table)| !reads_through(table));
    let path = match damaged {
        Some((name, _)) => stack.dir().join(name),
        None => stack.dir().to_owned(),
    };
    ReadError::Reftable { path, error }
}

/// Whether every ref and log record of `table` decodes.
pub(super) fn reads_through(table: &Table) -> bool {
    let refs_ok = table.refs().is_ok_and(|mut refs| refs.all(|r| r.is_ok()));
    refs_ok && table.logs().is_ok_and(|mut logs| logs.all(|r| r.is_ok()))
}

/// `name` as `stack` holds it.
pub(super) fn read_in(stack: &Stack, name: &RefName) -> Result<Option<Ref>, ReadError> {
    match stack
        .merged()
        .ref_record(name.as_bytes())
        .map_err(|e| table_error(stack, e))?
    {
        Some(record) => Ok(Some(to_ref(stack, record)?)),
        None => Ok(None),
    }
}

/// Follows `name` through symbolic refs in `stack`.
pub(super) fn resolve_in(stack: &Stack, name: &RefName) -> Result<Option<Resolved>, ReadError> {
    crate::resolve::follow(name, |current| read_in(stack, current))
}

/// A live record as a [`Ref`]; a record that names no valid ref (or
/// points at one) means the table is damaged.
pub(super) fn to_ref(stack: &Stack, record: RefRecord) -> Result<Ref, ReadError> {
    let bad_name = |what: &str, name: &[u8]| {
        table_error(
            stack,
            Error::corrupt(
                0,
                format!(
                    "{what} '{}' is not a valid ref name",
                    String::from_utf8_lossy(name)
                ),
            ),
        )
    };
    let name = RefName::new(&record.name).map_err(|_| bad_name("ref", &record.name))?;
    let (target, peeled) = match record.value {
        RefValue::Object(id) => (Target::Object(id), None),
        RefValue::Peeled { target, peeled } => (Target::Object(target), Some(peeled)),
        RefValue::Symbolic(to) => (
            Target::Symbolic(RefName::new(&to).map_err(|_| bad_name("symbolic ref target", &to))?),
            None,
        ),
        RefValue::Deletion => unreachable!("merged reads never yield tombstones"),
    };
    Ok(Ref {
        name,
        target,
        peeled,
    })
}
