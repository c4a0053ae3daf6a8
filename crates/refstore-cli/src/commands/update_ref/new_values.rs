//! The check git makes of every new value `update-ref` writes: the object
//! must be in the repository, and a branch (`refs/heads/…`) must name a
//! commit. A ref naming a missing object breaks every command that reads it
//! (fetch, log, gc), so the value is refused before any lock is taken.
//!
//! The check names the ref that would really change: the end of the
//! symbolic-ref chain, unless the update does not dereference, as git's
//! messages do ("cannot update ref 'refs/heads/main'" for an update of
//! `HEAD`).

use refstore_odb::{loose_kind, ObjectKind, Odb};
use refstore_refs::backend::Backend;
use refstore_refs::transaction::{Change, Rejected, Rejection, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{ObjectId, RefName};
use refstore_repo::Repository;
use std::collections::HashMap;

/// Symbolic refs followed at most, as in git.
const MAX_SYMREF_DEPTH: usize = 5;

/// Looks up the kinds of new values, each distinct object once: from its
/// loose file when it has one, else from the repository's object database,
/// opened on first need (most new values are loose objects just written,
/// and a one-ref update should not pay for opening the packs).
pub(crate) struct NewValueCheck<'r> {
    repo: &'r Repository,
    odb: Option<Odb>,
    kinds: HashMap<ObjectId, Option<ObjectKind>>,
}

impl<'r> NewValueCheck<'r> {
    /// A check against the objects of `repo`.
    pub(crate) fn new(repo: &'r Repository) -> Self {
        NewValueCheck {
            repo,
            odb: None,
            kinds: HashMap::new(),
        }
    }

    /// The kind of `id`, `None` if the repository does not have it.
    fn kind(&mut self, id: &ObjectId) -> Result<Option<ObjectKind>, String> {
        if id.format() == self.repo.object_format() {
            if let Some(kind) = loose_kind(self.repo.objects_dir(), id) {
                return Ok(Some(kind));
            }
        }
        let odb = match &mut self.odb {
            Some(odb) => odb,
            empty => empty.insert(self.repo.objects().map_err(|e| e.to_string())?),
        };
        odb.kind(id).map_err(|e| e.to_string())
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
                let kind = self.kind(id).map_err(CheckError::Read)?;
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
