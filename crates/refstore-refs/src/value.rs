//! What a reference holds: an object id or the name of another reference.

use crate::{ObjectId, RefName};

/// The value of a reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// A direct reference to an object.
    Object(ObjectId),
    /// A symbolic reference: the name of another reference (`ref: <name>`).
    Symbolic(RefName),
}

impl Target {
    /// The object id, for a direct reference.
    pub fn object_id(&self) -> Option<&ObjectId> {
        match self {
            Target::Object(id) => Some(id),
            Target::Symbolic(_) => None,
        }
    }

    /// The referenced name, for a symbolic reference.
    pub fn symbolic(&self) -> Option<&RefName> {
        match self {
            Target::Object(_) => None,
            Target::Symbolic(name) => Some(name),
        }
    }
}

/// A reference as stored: its name, its value, and, for annotated tags whose
/// peeled value the store records, the object the tag finally points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ref {
    /// The full name.
    pub name: RefName,
    /// The stored value.
    pub target: Target,
    /// The peeled value (`^{}`), when the store knows it.
    pub peeled: Option<ObjectId>,
}
