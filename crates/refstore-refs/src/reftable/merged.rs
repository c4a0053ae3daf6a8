//! A stack of tables seen as one: for each key the newest table's record
//! wins, and deletions (tombstones) hide older records without being
//! yielded themselves.

use super::error::Result;
use super::log_record::{LogRecord, LogValue};
use super::reader::{LogIter, RefIter, Table};
use super::ref_record::{RefRecord, RefValue};
use crate::ObjectId;

/// Tables ordered oldest first, as `tables.list` lists them.
#[derive(Debug, Clone, Copy)]
pub struct Merged<'t> {
    tables: &'t [Table],
}

impl<'t> Merged<'t> {
    /// Views `tables` (oldest first) as one.
    pub fn new(tables: &'t [Table]) -> Self {
        Merged { tables }
    }

    /// Live refs in name order.
    pub fn refs(&self) -> Result<MergedRefs<'t>> {
        self.merge_refs(false)
    }

    /// Every key's newest ref record, tombstones included: what a table
    /// replacing these tables must hold while older tables remain below it.
    pub fn refs_with_tombstones(&self) -> Result<MergedRefs<'t>> {
        self.merge_refs(true)
    }

    fn merge_refs(&self, keep_deletions: bool) -> Result<MergedRefs<'t>> {
        let iters = self.tables.iter().map(Table::refs).collect::<Result<_>>()?;
        Ok(MergedRefs {
            inner: Merge::new(iters, keep_deletions)?,
        })
    }

    /// Live refs from the first whose name is `>= name`.
    pub fn seek_refs(&self, name: &[u8]) -> Result<MergedRefs<'t>> {
        let mut refs = self.refs()?;
        refs.seek(name)?;
        Ok(refs)
    }

    /// The live ref `name`, if any.
    pub fn ref_record(&self, name: &[u8]) -> Result<Option<RefRecord>> {
        for table in self.tables.iter().rev() {
            if let Some(record) = table.ref_record(name)? {
                return Ok((record.value != RefValue::Deletion).then_some(record));
            }
        }
        Ok(None)
    }

    /// Lookups of many names: faster than [`ref_record`](Self::ref_record)
    /// for each when the names come in ascending order.
    pub fn lookup(&self) -> Result<RefLookup<'t>> {
        let iters = self
            .tables
            .iter()
            .rev()
            .map(Table::refs)
            .collect::<Result<_>>()?;
        Ok(RefLookup {
            newest_first: iters,
        })
    }

    /// Live log entries: by name, newest first.
    pub fn logs(&self) -> Result<MergedLogs<'t>> {
        self.merge_logs(false)
    }

    /// Every key's newest log record, tombstones included (see
    /// [`refs_with_tombstones`](Self::refs_with_tombstones)).
    pub fn logs_with_tombstones(&self) -> Result<MergedLogs<'t>> {
        self.merge_logs(true)
    }

    fn merge_logs(&self, keep_deletions: bool) -> Result<MergedLogs<'t>> {
        let iters = self.tables.iter().map(Table::logs).collect::<Result<_>>()?;
        Ok(MergedLogs {
            inner: Merge::new(iters, keep_deletions)?,
        })
    }

    /// The live log entries of `name`, newest first.
    pub fn logs_for(&self, name: &'t [u8]) -> Result<impl Iterator<Item = Result<LogRecord>> + 't> {
        let mut logs = self.logs()?;
        logs.seek(name)?;
        Ok(logs.take_while(move |r| r.as_ref().map_or(true, |r| r.name == name)))
    }

    /// The live refs whose value or peeled value is `id`, in name order.
    pub fn refs_for_object(&self, id: &ObjectId) -> Result<Vec<RefRecord>> {
        let mut names = std::collections::BTreeSet::new();
        for table in self.tables {
            names.extend(table.refs_for_object(id)?.into_iter().map(|r| r.name));
        }
        let mut found = Vec::new();
        for name in names {
            if let Some(record) = self.ref_record(&name)? {
                if record.value.object_ids().any(|x| x == id) {
                    found.push(record);
                }
            }
        }
        Ok(found)
    }
}

/// One iterator per table, kept between lookups so that each lookup of
/// an ascending sequence of names continues where the previous one left.
pub struct RefLookup<'t> {
    newest_first: Vec<RefIter<'t>>,
}

impl RefLookup<'_> {
    /// The live ref `name`, if any: the newest table's record of it, unless
    /// that is a deletion.
    pub fn get(&mut self, name: &[u8]) -> Result<Option<RefRecord>> {
        for table in &mut self.newest_first {
            if let Some(record) = table.find(name)? {
                return Ok((record.value != RefValue::Deletion).then_some(record));
            }
        }
        Ok(None)
    }
}

/// What the merge needs of a table iterator.
trait Source: Iterator<Item = Result<Self::Record>> {
    type Record;
    fn seek_to(&mut self, key: &[u8]) -> Result<()>;
    fn key(record: &Self::Record) -> Vec<u8>;
    fn is_deletion(record: &Self::Record) -> bool;
}

impl Source for RefIter<'_> {
    type Record = RefRecord;
    fn seek_to(&mut self, key: &[u8]) -> Result<()> {
        self.seek(key)
    }
    fn key(record: &RefRecord) -> Vec<u8> {
        record.name.clone()
    }
    fn is_deletion(record: &RefRecord) -> bool {
        record.value == RefValue::Deletion
    }
}

impl Source for LogIter<'_> {
    type Record = LogRecord;
    fn seek_to(&mut self, key: &[u8]) -> Result<()> {
        self.seek_key(key)
    }
    fn key(record: &LogRecord) -> Vec<u8> {
        super::log_record::log_key(&record.name, record.update_index)
    }
    fn is_deletion(record: &LogRecord) -> bool {
        record.value == LogValue::Deletion
    }
}

/// A k-way merge keeping, for each key, the record of the newest table.
/// Stacks are short (compaction keeps them logarithmic), so the smallest
/// head is found by a linear pass.
struct Merge<I: Source> {
    iters: Vec<I>,
    /// The next record of each table (`None` when it is exhausted) and its
    /// key.
    heads: Vec<Option<(Vec<u8>, I::Record)>>,
    /// Tables whose head was used up and must be read again before the
    /// next record is chosen. Reading them only then keeps each table's
    /// cursor just past the record returned last, so a seek to a key
    /// after it (the next of an ascending series) is a short forward scan.
    stale: Vec<bool>,
    failed: bool,
    /// Yield tombstones too (compacting part of a stack, where they must
    /// keep hiding records of older tables).
    keep_deletions: bool,
}

impl<I: Source> Merge<I> {
    fn new(iters: Vec<I>, keep_deletions: bool) -> Result<Self> {
        let mut merge = Merge {
            heads: Vec::with_capacity(iters.len()),
            stale: vec![false; iters.len()],
            iters,
            failed: false,
            keep_deletions,
        };
        merge.fill_heads()?;
        Ok(merge)
    }

    fn fill_heads(&mut self) -> Result<()> {
        self.heads.clear();
        self.stale.iter_mut().for_each(|s| *s = false);
        for iter in &mut self.iters {
            let head = iter.next().transpose()?.map(|r| (I::key(&r), r));
            self.heads.push(head);
        }
        Ok(())
    }

    fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.failed = false;
        for iter in &mut self.iters {
            iter.seek_to(key)?;
        }
        self.fill_heads()
    }

    fn advance(&mut self, i: usize) -> Result<()> {
        self.heads[i] = self.iters[i].next().transpose()?.map(|r| (I::key(&r), r));
        Ok(())
    }

    fn next_live(&mut self) -> Result<Option<I::Record>> {
        loop {
            for i in 0..self.iters.len() {
                if std::mem::take(&mut self.stale[i]) {
                    self.advance(i)?;
                }
            }
            // Newest table first, so on equal keys the newest wins.
            let mut best: Option<usize> = None;
            for i in (0..self.heads.len()).rev() {
                if let Some((key, _)) = &self.heads[i] {
                    let better = match best {
                        None => true,
                        Some(b) => key < &self.heads[b].as_ref().expect("best is set").0,
                    };
                    if better {
                        best = Some(i);
                    }
                }
            }
            let Some(best) = best else {
                return Ok(None);
            };
            let (key, record) = self.heads[best].take().expect("best is set");
            self.stale[best] = true;
            for i in 0..self.heads.len() {
                if matches!(&self.heads[i], Some((k, _)) if *k == key) {
                    self.heads[i] = None;
                    self.stale[i] = true;
                }
            }
            if self.keep_deletions || !I::is_deletion(&record) {
                return Ok(Some(record));
            }
        }
    }

    fn next_item(&mut self) -> Option<Result<I::Record>> {
        if self.failed {
            return None;
        }
        match self.next_live() {
            Ok(record) => record.map(Ok),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Live refs of a stack, in name order; re-seekable.
pub struct MergedRefs<'t> {
    inner: Merge<RefIter<'t>>,
}

impl MergedRefs<'_> {
    /// Moves to the first live ref whose name is `>= name`.
    pub fn seek(&mut self, name: &[u8]) -> Result<()> {
        self.inner.seek(name)
    }
}

impl Iterator for MergedRefs<'_> {
    type Item = Result<RefRecord>;
    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next_item()
    }
}

/// Live log entries of a stack: by name, newest first; re-seekable.
pub struct MergedLogs<'t> {
    inner: Merge<LogIter<'t>>,
}

impl MergedLogs<'_> {
    /// Moves to the newest entry of the first name `>= name`.
    pub fn seek(&mut self, name: &[u8]) -> Result<()> {
        self.inner.seek(&super::log_record::log_key(name, u64::MAX))
    }
}

impl Iterator for MergedLogs<'_> {
    type Item = Result<LogRecord>;
    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next_item()
    }
}
