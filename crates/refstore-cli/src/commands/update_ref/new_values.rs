//! The check git makes of every new value `update-ref` writes: the object
//! must be in the repository, and a branch (`refs/heads/…`) must name a
//! commit. A ref naming a missing object breaks every command that reads it
//! (fetch, log, gc), so the value is refused before any lock is taken.
//!
//! The check names the ref that would really change: the end of the
//! symbolic-ref chain, unless the update does not dereference, as git's
//! messages do ("cannot update ref 'refs/heads/main'" for an update of
//! `HEAD`).

use refstore_odb::{ObjectKind, Odb};
use refstore_refs::backend::Backend;
use refstore_refs::transaction::{Change, Rejected, Rejection, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{ObjectId, RefName};
use std::collections::HashMap;
use std::path::Path;

/// Symbolic refs followed at most, as in git.
const MAX_SYMREF_DEPTH: usize = 5;

/// Looks up the kinds of new values, each distinct object once.
pub(crate) struct NewValueCheck {
    odb: Odb,
    kinds: HashMap<ObjectId, Option<ObjectKind>>,
}

impl NewValueCheck {
    /// A check against the object database at `objects_dir`.
    pub(crate) fn open(objects_dir: &Path, backend: &dyn Backend) -> Result<Self, String> {
        let odb = Odb::open(objects_dir, backend.object_format()).map_err(|e| e.to_string())?;
        Ok(NewValueCheck {
            odb,
            kinds: HashMap::new(),
        })
    }

    /// Checks every update of `tx` that writes an object id. In an atomic
    /// transaction the first bad value is the error; with `--batch-updates`
    /// the bad updates are taken out of `tx` and returned as rejections, as
    /// the backend reports the updates it cannot apply.
    pub(crate) fn check(
        &mut self,
        backend: &dyn Backend,
        tx: &mut Transaction,
    ) -> Result<Vec<Rejected>, CheckError> {
        let mut rejected = Vec::new();
        let mut kept = Vec::with_capacity(tx.updates.len());
        for update in std::mem::take(&mut tx.updates) {
            match self.check_one(backend, &update)? {
                None => kept.push(update),
                Some(refusal) if tx.batch => rejected.push(refusal),
                Some(refusal) => {
                    tx.updates = kept;
                    return Err(CheckError::Refused(refusal));
                }
            }
        }
        tx.updates = kept;
        Ok(rejected)
    }

    fn check_one(
        &mut self,
        backend: &dyn Backend,
        update: &Update,
    ) -> Result<Option<Rejected>, CheckError> {
        let Change::Set(Target::Object(id)) = &update.change else {
            return Ok(None);
        };
        if id.is_null() {
            return Ok(None);
        }
        let kind = match self.kinds.get(id) {
            Some(kind) => *kind,
            None => {
                let kind = self
                    .odb
                    .kind(id)
                    .map_err(|e| CheckError::Read(e.to_string()))?;
                self.kinds.insert(*id, kind);
                kind
            }
        };
        let reason = match kind {
            None => Rejection::NonexistentObject(*id),
            Some(ObjectKind::Commit) => return Ok(None),
            Some(_) => Rejection::NonCommitOnBranch(*id),
        };
        let name = if update.no_deref {
            update.name.clone()
        } else {
            end_of_chain(backend, &update.name)
        };
        if matches!(reason, Rejection::NonCommitOnBranch(_))
            && !name.as_bytes().starts_with(b"refs/heads/")
        {
            return Ok(None);
        }
        Ok(Some(Rejected { name, reason }))
    }
}

/// Why the check could not pass.
pub(crate) enum CheckError {
    /// An update writes a value git would refuse.
    Refused(Rejected),
    /// An object could not be read.
    Read(String),
}

/// The ref an update of `name` changes: the last ref of its symbolic-ref
/// chain (`name` itself when it is not symbolic or cannot be read; the
/// backend reports those cases when it locks).
fn end_of_chain(backend: &dyn Backend, name: &RefName) -> RefName {
    let mut current = name.clone();
    for _ in 0..MAX_SYMREF_DEPTH {
        match backend.read(&current) {
            Ok(Some(r)) => match r.target {
                Target::Symbolic(next) => current = next,
                Target::Object(_) => break,
            },
            _ => break,
        }
    }
    current
}
