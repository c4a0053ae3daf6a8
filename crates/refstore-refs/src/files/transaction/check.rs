//! The checks of a transaction's refs: the availability of the names it
//! creates (no ref in the way, in the store or in the transaction), and,
//! under the locks, each ref's old value against what the update expects
//! (step 3 of [`prepare`](super::prepare)).

use super::prepared::Locked;
use super::CommitError;
use crate::availability::{self, ExistingRefs};
use crate::files::packed::PackedSnapshot;
use crate::files::{FilesBackend, ReadError};
use crate::plan::{self, Planned};
use crate::transaction::{Outcome, Rejection, Transaction};
use crate::value::Target;
use crate::RefName;
use refstore_fs::lock::LockFile;
use refstore_fs::FileKind;
use std::collections::{BTreeMap, BTreeSet};

/// Names existing in the store, for the availability check: packed refs by
/// binary search, loose refs by looking at the file or walking the directory.
struct Existing<'a> {
    backend: &'a FilesBackend,
    packed: &'a PackedSnapshot,
    loose_dirs: BTreeMap<Vec<u8>, Vec<Vec<u8>>>,
    /// The first read error, reported once the check is over (the check's
    /// interface cannot fail).
    error: Option<ReadError>,
}

impl ExistingRefs for Existing<'_> {
    fn contains(&mut self, name: &[u8]) -> bool {
        let Ok(ref_name) = RefName::new(name) else {
            return false;
        };
        let loose = match self.backend.vfs.stat(&self.backend.loose_path(&ref_name)) {
            Ok(m) => m.kind == FileKind::File,
            // A prefix of the name being a file, or a name too long for the
            // filesystem, is "no such ref" too (locking it reports why).
            Err(e) if e.is_not_found() || matches!(e.raw_os_error(), Some(20 | 36)) => false,
            Err(e) => {
                self.error.get_or_insert(e.into());
                false
            }
        };
        loose
            || match self.packed.find(name) {
                Ok(found) => found.is_some(),
                Err(e) => {
                    self.error.get_or_insert(self.backend.packed_error(e));
                    false
                }
            }
    }

    fn seek(&mut self, from: &[u8]) -> Option<Vec<u8>> {
        // Only names below `from` matter to the check (see
        // `ExistingRefs::seek`): packed ones are looked up by that prefix.
        let packed = match self.packed.first_with_prefix(from) {
            Ok(found) => found,
            Err(e) => {
                self.error.get_or_insert(self.backend.packed_error(e));
                None
            }
        };
        let dir_len = from.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
        let dir = from[..dir_len].to_vec();
        let backend = self.backend;
        let error = &mut self.error;
        let names = self.loose_dirs.entry(dir.clone()).or_insert_with(|| {
            // Packed refs are searched separately; only loose names here.
            match backend.loose_names(&dir) {
                Ok(names) => names.into_iter().map(|n| n.as_bytes().to_vec()).collect(),
                Err(e) => {
                    error.get_or_insert(e);
                    Vec::new()
                }
            }
        });
        let i = names.partition_point(|n| n.as_slice() < from);
        let loose = names.get(i).cloned();
        match (packed, loose) {
            (Some(p), Some(l)) => Some(p.min(l)),
            (p, l) => p.or(l),
        }
    }
}

impl FilesBackend {
    /// The refs of `missing` (to be created) that another ref is in the
    /// way of, in the store (`packed` and the loose files) or among
    /// `affected`, with the reason each is rejected.
    pub(super) fn unavailable(
        &self,
        missing: &[RefName],
        affected: &BTreeSet<RefName>,
        packed: &PackedSnapshot,
    ) -> Result<BTreeMap<RefName, Rejection>, CommitError> {
        let mut existing = Existing {
            backend: self,
            packed,
            loose_dirs: BTreeMap::new(),
            error: None,
        };
        let conflicts = availability::check(missing, affected, &mut existing);
        if let Some(e) = existing.error {
            return Err(e.into());
        }
        Ok(availability::rejections(conflicts))
    }

    /// Step 3: checks each locked ref's value, read now that it is locked
    /// (a loose file, else `packed`), against what its update expects.
    /// Refs rejected here or by `blocked` (or when their lock failed) are
    /// reported in the order of the updates and their locks rolled back.
    pub(super) fn check_old_values(
        &self,
        tx: &Transaction,
        held: Vec<(Planned, Result<LockFile, Rejection>)>,
        blocked: &mut BTreeMap<RefName, Rejection>,
        packed: &PackedSnapshot,
        outcome: &mut Outcome,
    ) -> Result<Vec<Locked>, CommitError> {
        let mut locked: Vec<Locked> = Vec::with_capacity(held.len());
        for (p, lock) in held {
            let update = &tx.updates[p.index];
            let lock = match lock {
                Ok(lock) => lock,
                Err(reason) => {
                    plan::reject(tx, outcome, &p.target, reason)?;
                    continue;
                }
            };
            if let Some(reason) = blocked.remove(&p.target) {
                lock.rollback()?;
                plan::reject(tx, outcome, &p.target, reason)?;
                continue;
            }
            // Root refs are never packed.
            let packed_value = match p.target.is_root_ref() {
                true => None,
                false => packed
                    .find(p.target.as_bytes())
                    .map_err(|e| self.packed_error(e))?
                    .map(|r| r.target),
            };
            let in_packed = packed_value.is_some();
            let current = match self.read_loose(&p.target) {
                Ok(Some(t)) => Some(t),
                Ok(None) => packed_value,
                Err(ReadError::BrokenRef { .. }) => {
                    lock.rollback()?;
                    plan::reject(tx, outcome, &update.name, Rejection::Broken)?;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let old = current;
            // A symbolic ref changed in place is compared and logged by the
            // object it resolves to, as git does.
            let old_id = match &old {
                Some(Target::Object(id)) => Some(*id),
                Some(Target::Symbolic(to)) => self.resolve_in(to, packed)?.and_then(|r| r.id),
                None => None,
            };
            let check = update.expected.check(&old, old_id);
            if let Err(reason) = check {
                // A lock left behind would block every later update of the
                // ref: one that cannot be removed fails the transaction
                // (nothing is changed yet), naming the file to remove.
                lock.rollback()?;
                plan::reject(tx, outcome, &p.target, reason)?;
                continue;
            }
            locked.push(Locked {
                planned: p,
                lock,
                old,
                old_id,
                in_packed,
            });
        }
        Ok(locked)
    }
}
