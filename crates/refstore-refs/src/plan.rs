//! The first steps every backend takes with a transaction: follow each
//! update's symbolic ref to the ref it changes, refuse a second update of
//! one ref, and record refusals as the transaction's mode asks (a batch
//! notes them and goes on; an atomic transaction fails with the first).

use crate::error::{CommitError, ReadError};
use crate::files::SYMREF_MAX_DEPTH;
use crate::transaction::{Change, Outcome, Rejected, Rejection, Transaction};
use crate::value::{Ref, Target};
use crate::RefName;
use std::collections::HashMap;

/// One update after symbolic refs were followed.
pub struct Planned {
    /// Its position in the transaction.
    pub index: usize,
    /// The ref actually changed.
    pub target: RefName,
    /// The symbolic ref the user named, if the update went through one.
    pub via: Option<RefName>,
}

/// Refuses the update of `name` for `reason`: noted in `outcome` for a
/// batch transaction, the transaction's error otherwise.
pub fn reject(
    tx: &Transaction,
    outcome: &mut Outcome,
    name: &RefName,
    reason: Rejection,
) -> Result<(), CommitError> {
    let rejected = Rejected {
        name: name.clone(),
        reason,
    };
    if tx.batch {
        outcome.rejected.push(rejected);
        Ok(())
    } else {
        Err(CommitError::Rejected(rejected))
    }
}

/// The ref each update of `tx` changes: its own name with `no-deref` and
/// for a symbolic ref being set, otherwise where `deref` follows it. A
/// second update of one ref, directly or through a symbolic ref, is
/// refused as git refuses it.
pub fn follow_symrefs<E>(
    tx: &Transaction,
    outcome: &mut Outcome,
    mut deref: impl FnMut(&RefName) -> Result<RefName, E>,
) -> Result<Vec<Planned>, CommitError>
where
    CommitError: From<E>,
{
    let mut planned: Vec<Planned> = Vec::new();
    let mut seen: HashMap<RefName, Option<RefName>> = HashMap::with_capacity(tx.updates.len());
    for (index, update) in tx.updates.iter().enumerate() {
        let symbolic_set = matches!(update.change, Change::Set(Target::Symbolic(_)));
        let target = if update.no_deref || symbolic_set {
            update.name.clone()
        } else {
            deref(&update.name)?
        };
        let via = (target != update.name).then(|| update.name.clone());
        if let Some(previous_via) = seen.get(&target) {
            let reason = match via.as_ref().or(previous_via.as_ref()) {
                Some(symref) => Rejection::DuplicateViaSymref {
                    symref: symref.clone(),
                },
                None => Rejection::Duplicate,
            };
            reject(tx, outcome, &target, reason)?;
            continue;
        }
        seen.insert(target.clone(), via.clone());
        planned.push(Planned { index, target, via });
    }
    Ok(planned)
}

/// Reads one ref from a store.
pub(crate) trait ReadRef: FnMut(&RefName) -> Result<Option<Ref>, ReadError> {}

impl<F: FnMut(&RefName) -> Result<Option<Ref>, ReadError>> ReadRef for F {}

/// The refs a transaction's planning reads, each read from the store once
/// however many steps ask for it (resolving symbolic refs, finding the
/// refs that do not exist yet). The values are those seen before the locks
/// are taken; old values are checked again under the locks.
pub(crate) struct Reads<F> {
    read: F,
    seen: HashMap<RefName, Option<Ref>>,
}

impl<F: ReadRef> Reads<F> {
    /// A cache over `read`, for a transaction of `updates` updates.
    pub fn new(updates: usize, read: F) -> Self {
        Reads {
            read,
            seen: HashMap::with_capacity(updates),
        }
    }

    /// The ref `name`, read once.
    pub fn get(&mut self, name: &RefName) -> Result<Option<Ref>, ReadError> {
        if let Some(found) = self.seen.get(name) {
            return Ok(found.clone());
        }
        let found = (self.read)(name)?;
        self.seen.insert(name.clone(), found.clone());
        Ok(found)
    }

    /// Follows `name` through symbolic refs to the ref an update changes.
    pub fn deref_target(&mut self, name: &RefName) -> Result<RefName, ReadError> {
        let mut current = name.clone();
        for _ in 0..=SYMREF_MAX_DEPTH {
            match self.get(&current)? {
                Some(r) => match r.target {
                    Target::Symbolic(next) => current = next,
                    Target::Object(_) => return Ok(current),
                },
                None => return Ok(current),
            }
        }
        Err(ReadError::SymrefTooDeep(name.clone()))
    }
}
