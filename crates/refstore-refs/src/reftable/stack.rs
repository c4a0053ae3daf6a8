//! A reftable stack on disk: `reftable/tables.list` and the tables it names,
//! read and extended through the [`Vfs`].
//!
//! Adding a table is crash-atomic for the whole transaction: the new table
//! is written under a fresh name, its data and directory entry are made
//! durable, and only then is `tables.list` replaced (through
//! `tables.list.lock`, the lock git and JGit take too) and its directory
//! flushed. A crash at any point leaves `tables.list` naming either the old
//! stack or the new one, each table of it complete. Full compaction
//! ([`Stack::compact_all`]) publishes its one table the same way.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use refstore_fs::flush::FlushBatch;
use refstore_fs::lock::{LockError, LockFile};
use refstore_fs::Vfs;

use super::error::Error;
use super::log_record::LogRecord;
use super::merged::Merged;
use super::reader::Table;
use super::ref_record::RefRecord;
use super::tables_list;
use super::writer::{WriteOptions, Writer};

/// Attempts at reading a consistent stack while other processes compact it
/// (a table listed one moment may be gone the next).
const READ_ATTEMPTS: usize = 5;

/// What can go wrong reading or extending a stack.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    /// A filesystem operation failed.
    #[error(transparent)]
    Io(#[from] refstore_fs::Error),
    /// `tables.list.lock` could not be taken.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// A table (or `tables.list`) is malformed.
    #[error("{}: {source}", path.display())]
    Table {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong with it.
        source: Error,
    },
}

/// The records of one transaction, built under the stack's lock.
#[derive(Debug, Clone, Default)]
pub struct Records {
    /// Ref records, any order; their update index should be the one given
    /// to the builder.
    pub refs: Vec<RefRecord>,
    /// Log records, any order.
    pub logs: Vec<LogRecord>,
}

/// The tables of a stack, oldest first, as last read from disk.
#[derive(Debug)]
pub struct Stack {
    vfs: Arc<dyn Vfs>,
    dir: PathBuf,
    names: Vec<String>,
    tables: Vec<Table>,
}

impl Stack {
    /// Reads the stack in `dir` (`$GIT_DIR/reftable`). A missing
    /// `tables.list` is an empty stack.
    pub fn open(vfs: Arc<dyn Vfs>, dir: impl Into<PathBuf>) -> Result<Stack, StackError> {
        let mut stack = Stack {
            vfs,
            dir: dir.into(),
            names: Vec::new(),
            tables: Vec::new(),
        };
        stack.reload()?;
        Ok(stack)
    }

    /// Reads the stack again.
    pub fn reload(&mut self) -> Result<(), StackError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.read_once() {
                Err(StackError::Io(e)) if e.is_not_found() && attempt < READ_ATTEMPTS => continue,
                result => return result,
            }
        }
    }

    fn read_once(&mut self) -> Result<(), StackError> {
        let list_path = self.list_path();
        let names = match self.vfs.read(&list_path) {
            Ok(content) => tables_list::parse(&content).map_err(|source| StackError::Table {
                path: list_path.clone(),
                source,
            })?,
            Err(e) if e.is_not_found() => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let mut tables = Vec::with_capacity(names.len());
        for name in &names {
            // A table's file is never changed once named, so a table already
            // open under the same name (a reload under the lock, after the
            // read that planned the transaction) is the same table.
            if self.names.len() == self.tables.len() {
                if let Some(i) = self.names.iter().position(|open| open == name) {
                    tables.push(self.tables[i].clone());
                    continue;
                }
            }
            let path = self.dir.join(name);
            let bytes = self.vfs.read_mapped(&path)?;
            tables.push(Table::new(bytes).map_err(|source| StackError::Table { path, source })?);
        }
        self.names = names;
        self.tables = tables;
        Ok(())
    }

    fn list_path(&self) -> PathBuf {
        self.dir.join("tables.list")
    }

    /// The directory of the stack.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The tables' file names, oldest first.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The tables, oldest first.
    pub fn tables(&self) -> &[Table] {
        &self.tables
    }

    /// The stack read as one table.
    pub fn merged(&self) -> Merged<'_> {
        Merged::new(&self.tables)
    }

    /// The update index the next transaction gets.
    pub fn next_update_index(&self) -> u64 {
        self.tables
            .iter()
            .map(Table::max_update_index)
            .max()
            .map_or(1, |max| max + 1)
    }

    /// Adds one table holding the records `build` returns. `build` runs
    /// under `tables.list.lock`, on the stack as it is then, and is given
    /// the transaction's update index: it is where old values are checked.
    /// Returns the new table's name once it is durable and listed.
    pub fn add<E>(
        &mut self,
        options: WriteOptions,
        lock_timeout: Duration,
        batch: &mut FlushBatch,
        build: impl FnOnce(&Stack, u64) -> Result<Records, E>,
    ) -> Result<String, AddError<E>> {
        let lock = self.lock(lock_timeout)?;
        let update_index = self.next_update_index();
        let records = build(self, update_index).map_err(AddError::Rejected)?;
        Ok(self.add_locked(lock, options, update_index, records, batch)?)
    }

    /// Takes `tables.list.lock` and reads the stack again under it, so that
    /// what is read next is what a new table will be stacked on. Dropping
    /// the lock releases it.
    pub fn lock(&mut self, lock_timeout: Duration) -> Result<LockFile, StackError> {
        let lock = LockFile::acquire(&self.vfs, self.list_path(), lock_timeout)?;
        self.reload()?;
        Ok(lock)
    }

    /// Writes `records` as a new table of `update_index` on top of the
    /// stack and publishes it; `lock` is the one [`lock`](Self::lock) took.
    /// Returns the new table's name once it is durable and listed.
    pub fn add_locked(
        &mut self,
        lock: LockFile,
        options: WriteOptions,
        update_index: u64,
        records: Records,
        batch: &mut FlushBatch,
    ) -> Result<String, StackError> {
        let Records { mut refs, mut logs } = records;
        refs.sort_by(|a, b| a.name.cmp(&b.name));
        logs.sort_by(|a, b| {
            (&a.name, u64::MAX - a.update_index).cmp(&(&b.name, u64::MAX - b.update_index))
        });
        let min = refs
            .iter()
            .map(|r| r.update_index)
            .chain(logs.iter().map(|l| l.update_index))
            .min()
            .unwrap_or(update_index)
            .min(update_index);
        let table_error = |source| StackError::Table {
            path: self.dir.clone(),
            source,
        };
        let mut writer = Writer::new(options, min, update_index).map_err(table_error)?;
        for record in &refs {
            writer.add_ref(record).map_err(table_error)?;
        }
        for record in &logs {
            writer.add_log(record).map_err(table_error)?;
        }
        let bytes = writer.finish().map_err(table_error)?;

        let name = tables_list::table_name(min, update_index, random_suffix());
        let mut names = self.names.clone();
        names.push(name.clone());
        self.publish(lock, &name, &bytes, &names, batch)?;
        let path = self.dir.join(&name);
        self.names.push(name.clone());
        self.tables
            .push(Table::new(bytes).map_err(|source| StackError::Table { path, source })?);
        Ok(name)
    }

    /// Replaces every table with one holding the live records of the stack
    /// (tombstones are dropped: nothing older remains for them to hide).
    /// The new table is durable before `tables.list` names it; the old
    /// tables are removed afterwards.
    pub fn compact_all(
        &mut self,
        options: WriteOptions,
        lock_timeout: Duration,
        batch: &mut FlushBatch,
    ) -> Result<(), StackError> {
        self.compact(options, lock_timeout, batch, |tables| Some(0..tables.len()))
            .map(|_| ())
    }

    /// Replaces the tables `choose` picks (given the stack as read under
    /// `tables.list.lock`; a range of at least two tables, oldest first)
    /// with one table. Tombstones are kept unless the range starts at the
    /// oldest table, since older tables below could still hold what they
    /// hide. Returns whether anything was compacted.
    pub fn compact(
        &mut self,
        options: WriteOptions,
        lock_timeout: Duration,
        batch: &mut FlushBatch,
        choose: impl FnOnce(&[Table]) -> Option<Range<usize>>,
    ) -> Result<bool, StackError> {
        let lock = self.lock(lock_timeout)?;
        let range = match choose(&self.tables) {
            Some(range) if range.len() >= 2 && range.end <= self.tables.len() => range,
            _ => return Ok(false),
        };
        let table_error = |source| StackError::Table {
            path: self.dir.clone(),
            source,
        };
        let segment = &self.tables[range.clone()];
        let keep_tombstones = range.start > 0;
        let min = segment.iter().map(Table::min_update_index).min();
        let max = segment.iter().map(Table::max_update_index).max();
        let (min, max) = (min.unwrap_or(1), max.unwrap_or(1));
        let mut writer = Writer::new(options, min, max).map_err(table_error)?;
        let merged = Merged::new(segment);
        let refs = if keep_tombstones {
            merged.refs_with_tombstones()
        } else {
            merged.refs()
        };
        for record in refs.map_err(table_error)? {
            writer
                .add_ref(&record.map_err(table_error)?)
                .map_err(table_error)?;
        }
        let logs = if keep_tombstones {
            merged.logs_with_tombstones()
        } else {
            merged.logs()
        };
        for record in logs.map_err(table_error)? {
            writer
                .add_log(&record.map_err(table_error)?)
                .map_err(table_error)?;
        }
        let bytes = writer.finish().map_err(table_error)?;
        let name = tables_list::table_name(min, max, random_suffix());
        let path = self.dir.join(&name);
        let mut names = self.names[..range.start].to_vec();
        names.push(name.clone());
        names.extend_from_slice(&self.names[range.end..]);
        // Tables unlisted while the lock is held are left by crashed
        // writers (git and JGit give a new table its `.ref` name only under
        // the lock, just before listing it), or are the tables a compaction
        // elsewhere has just replaced, which it still holds locked and
        // removes itself (see `unlisted_tables`). JGit also writes a
        // compaction's table under a `.ref` name before it relocks; removed,
        // that compaction gives up as the stack changed under it anyway.
        let stale = self.unlisted_tables()?;
        self.publish(lock, &name, &bytes, &names, batch)?;
        for stale in stale {
            let _ = self.vfs.unlink(&self.dir.join(stale));
        }
        // Readers that listed the old tables retry when one is gone; a
        // table left behind by a crash here is merely unlisted.
        let old: Vec<String> = self.names.splice(range.clone(), [name]).collect();
        for old in old {
            let _ = self.vfs.unlink(&self.dir.join(old));
        }
        let table = Table::new(bytes).map_err(|source| StackError::Table { path, source })?;
        self.tables.splice(range, [table]);
        Ok(true)
    }

    /// The `.ref` files of the directory that `tables.list` does not name
    /// and no other process holds locked.
    ///
    /// A compaction (git's and JGit's) locks each table it replaces with
    /// `<table>.lock`, lists its result, releases `tables.list.lock`, and
    /// only then removes the replaced tables and their locks; JGit fails
    /// the whole operation if one is already gone, and a JGit write whose
    /// automatic compaction fails so is reported failed though it was
    /// listed. Such a table is that process's to remove.
    fn unlisted_tables(&self) -> Result<Vec<std::ffi::OsString>, StackError> {
        let entries: Vec<String> = self
            .vfs
            .read_dir(&self.dir)?
            .into_iter()
            .map(|e| e.name.to_string_lossy().into_owned())
            .collect();
        Ok(entries
            .iter()
            .filter(|name| {
                name.ends_with(".ref")
                    && !self.names.iter().any(|listed| listed == *name)
                    && !entries.iter().any(|e| *e == format!("{name}.lock"))
            })
            .map(std::ffi::OsString::from)
            .collect())
    }

    /// Writes `bytes` as the new table `name`, makes its data and directory
    /// entry durable, and only then replaces `tables.list` (held by `lock`)
    /// with `names` and flushes the directory again. On failure before
    /// `tables.list` is replaced the new table is removed and the lock
    /// released; a failure of the last flush leaves the new stack listed.
    fn publish(
        &self,
        mut lock: LockFile,
        name: &str,
        bytes: &[u8],
        names: &[String],
        batch: &mut FlushBatch,
    ) -> Result<(), StackError> {
        let path = self.dir.join(name);
        let written = (|| -> Result<(), StackError> {
            let mut file = self.vfs.create_exclusive(&path)?;
            file.write_all(bytes)?;
            batch.stage(file)?;
            lock.write_all(&tables_list::format(names))?;
            lock.stage(batch)?;
            // The table's content and its name are durable before
            // tables.list names it: one flush point for both.
            batch.dir_changed(&self.dir);
            batch.flush_files_and_dirs()?;
            Ok(())
        })();
        if let Err(e) = written {
            let _ = self.vfs.unlink(&path);
            return Err(e);
        }
        if let Err(e) = lock.commit(batch) {
            // tables.list still names the old stack: the new table is
            // garbage, and the lock was released.
            let _ = self.vfs.unlink(&path);
            return Err(e.into());
        }
        batch.flush_dirs()?;
        Ok(())
    }
}

/// Why [`Stack::add`] added nothing.
#[derive(Debug, thiserror::Error)]
pub enum AddError<E> {
    /// The builder refused the transaction (e.g. an old value did not
    /// match).
    #[error("transaction rejected: {0}")]
    Rejected(E),
    /// Reading or writing the stack failed.
    #[error(transparent)]
    Stack(#[from] StackError),
}

/// Eight random hex digits for a table name, so that names never repeat.
fn random_suffix() -> u32 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish() as u32
}
