//! Ref transactions: a list of updates applied together, with expected old
//! values, in one of two modes.
//!
//! - **Atomic** (the default, like `git update-ref --stdin`): every update is
//!   applied or none is.
//! - **Batch** (like git's `update-ref --batch-updates`): an update that
//!   cannot be applied is rejected with its reason and the rest are still
//!   committed, with one flush point.

use crate::value::Target;
use crate::{ObjectId, RefName};
use std::fmt;

/// What an update does to its ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Point the ref at an object or another ref, creating it if needed.
    Set(Target),
    /// Remove the ref.
    Delete,
    /// Change nothing; only check the expected old value.
    Verify,
}

/// What the ref must hold before the update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// Anything, or nothing.
    Any,
    /// The ref must not exist.
    Absent,
    /// The ref must exist, with any value.
    Present,
    /// The ref must hold exactly this value.
    Value(Target),
}

impl Expected {
    /// git's convention: the null id means "must not exist".
    pub fn object(id: ObjectId) -> Self {
        if id.is_null() {
            Expected::Absent
        } else {
            Expected::Value(Target::Object(id))
        }
    }

    /// Checks this expectation against what the ref holds (`old`) and the
    /// object it resolves to (`old_id`): a dangling symbolic ref counts as
    /// absent, as in git.
    pub fn check(&self, old: &Option<Target>, old_id: Option<ObjectId>) -> Result<(), Rejection> {
        match self {
            Expected::Any => Ok(()),
            Expected::Absent if old_id.is_none() => Ok(()),
            Expected::Absent => Err(Rejection::AlreadyExists),
            Expected::Present if old_id.is_some() => Ok(()),
            Expected::Present => Err(Rejection::Missing),
            Expected::Value(Target::Object(want)) => match old_id {
                None => Err(Rejection::Missing),
                Some(have) if have == *want => Ok(()),
                Some(have) => Err(Rejection::IncorrectOldValue {
                    actual: Target::Object(have),
                    expected: Target::Object(*want),
                }),
            },
            Expected::Value(want) => match old {
                None => Err(Rejection::Missing),
                Some(have) if have == want => Ok(()),
                Some(have) => Err(Rejection::IncorrectOldValue {
                    actual: have.clone(),
                    expected: want.clone(),
                }),
            },
        }
    }
}

/// One update of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    /// The ref named by the user.
    pub name: RefName,
    /// The change.
    pub change: Change,
    /// The required old value.
    pub expected: Expected,
    /// Act on a symbolic ref itself instead of the ref it points to.
    pub no_deref: bool,
}

/// A set of updates to commit together.
#[derive(Debug, Clone, Default)]
pub struct Transaction {
    /// The updates, in the order given.
    pub updates: Vec<Update>,
    /// Reject single updates instead of failing the whole transaction.
    pub batch: bool,
    /// The reflog message of every update.
    pub message: Option<String>,
    /// Create reflogs even where `core.logAllRefUpdates` would not.
    pub create_reflog: bool,
}

/// Why one update cannot be applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// Expected absent, but the ref exists.
    AlreadyExists,
    /// Expected a value, but the ref does not exist.
    Missing,
    /// The ref holds something other than the expected value.
    IncorrectOldValue {
        /// What the ref holds.
        actual: Target,
        /// What the update expected.
        expected: Target,
    },
    /// Another ref is in the way: one named like a directory of this one, or
    /// one below it.
    NameConflict {
        /// The existing (or concurrently created) ref.
        existing: RefName,
    },
    /// Another update of the same transaction creates a ref in the way.
    ConflictInTransaction {
        /// The other ref (the longer name).
        other: RefName,
    },
    /// Two updates of the transaction change the same ref.
    Duplicate,
    /// Two updates change the same ref, one of them through a symbolic ref.
    DuplicateViaSymref {
        /// The symbolic ref one update named.
        symref: RefName,
    },
    /// Another process holds the ref's lock.
    Locked(String),
    /// The ref's file exists but holds no valid value.
    Broken,
    /// The new value names an object the repository does not have.
    NonexistentObject(ObjectId),
    /// The new value of a branch (`refs/heads/…`) is not a commit.
    NonCommitOnBranch(ObjectId),
}

/// A rejected update and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The ref the update named.
    pub name: RefName,
    /// The reason.
    pub reason: Rejection,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = &self.name;
        match &self.reason {
            Rejection::AlreadyExists => write!(f, "cannot lock ref '{name}': reference already exists"),
            Rejection::Missing => write!(f, "cannot lock ref '{name}': unable to resolve reference '{name}'"),
            Rejection::IncorrectOldValue { actual, expected } => write!(
                f,
                "cannot lock ref '{name}': is at {} but expected {}",
                describe(actual),
                describe(expected)
            ),
            Rejection::NameConflict { existing } => {
                write!(f, "cannot lock ref '{name}': '{existing}' exists; cannot create '{name}'")
            }
            Rejection::ConflictInTransaction { other } => write!(
                f,
                "cannot lock ref '{name}': cannot process '{name}' and '{other}' at the same time"
            ),
            Rejection::Duplicate => write!(f, "multiple updates for ref '{name}' not allowed"),
            Rejection::DuplicateViaSymref { symref } => write!(
                f,
                "multiple updates for '{name}' (including one via symref '{symref}') are not allowed"
            ),
            Rejection::Locked(message) => write!(f, "cannot lock ref '{name}': {message}"),
            Rejection::Broken => write!(f, "cannot lock ref '{name}': unable to resolve reference '{name}': reference broken"),
            Rejection::NonexistentObject(id) => write!(
                f,
                "cannot update ref '{name}': trying to write ref '{name}' with nonexistent object {}",
                id.to_hex()
            ),
            Rejection::NonCommitOnBranch(id) => write!(
                f,
                "cannot update ref '{name}': trying to write non-commit object {} to branch '{name}'",
                id.to_hex()
            ),
        }
    }
}

fn describe(target: &Target) -> String {
    match target {
        Target::Object(id) => id.to_hex(),
        Target::Symbolic(name) => name.to_string(),
    }
}

/// What a committed transaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Updates rejected (always empty for an atomic transaction that
    /// committed).
    pub rejected: Vec<Rejected>,
    /// Number of updates applied.
    pub applied: usize,
}
