//! Following symbolic refs, the same way for every format: from a name,
//! through at most [`SYMREF_MAX_DEPTH`] symbolic refs, to the ref that
//! holds an object id or to the missing ref a dangling chain ends at.
//! Each backend supplies only how one stored value is read.

use crate::error::ReadError;
use crate::value::{Ref, Target};
use crate::{ObjectId, RefName};

/// How deep git follows symbolic refs before giving up.
pub const SYMREF_MAX_DEPTH: usize = 5;

/// A symbolic ref chain followed to its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The last name of the chain (the ref that holds an object id, or the
    /// missing ref a dangling symref points to).
    pub name: RefName,
    /// Its object id; `None` if it does not exist (an unborn branch).
    pub id: Option<ObjectId>,
}

/// Follows `name` with `read`, which gives a name's stored value without
/// following it. `None` if `name` itself does not exist; an error if the
/// chain is longer than git follows (or loops).
pub fn follow(
    name: &RefName,
    mut read: impl FnMut(&RefName) -> Result<Option<Ref>, ReadError>,
) -> Result<Option<Resolved>, ReadError> {
    let mut current = name.clone();
    for depth in 0..=SYMREF_MAX_DEPTH {
        match read(&current)?.map(|r| r.target) {
            None if depth == 0 => return Ok(None),
            None => {
                return Ok(Some(Resolved {
                    name: current,
                    id: None,
                }))
            }
            Some(Target::Object(id)) => {
                return Ok(Some(Resolved {
                    name: current,
                    id: Some(id),
                }))
            }
            Some(Target::Symbolic(next)) => current = next,
        }
    }
    Err(ReadError::SymrefTooDeep(name.clone()))
}
