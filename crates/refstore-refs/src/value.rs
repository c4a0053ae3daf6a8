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

/// What a store knows about the object a reference's tag peels to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peeled {
    /// The store does not record it: ask the object database.
    Unknown,
    /// The store records that the reference does not name an annotated
    /// tag (a `packed-refs` line without `^` under `fully-peeled`, a
    /// reftable record with one id).
    NotATag,
    /// The reference names an annotated tag that peels to this object.
    Tag(ObjectId),
}

impl Peeled {
    /// The peeled object, when known to exist.
    pub fn id(self) -> Option<ObjectId> {
        match self {
            Peeled::Tag(id) => Some(id),
            Peeled::Unknown | Peeled::NotATag => None,
        }
    }
}

/// The value of a reference seen while visiting a store, borrowing from the
/// store's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetView<'a> {
    /// A direct reference to an object.
    Object(ObjectId),
    /// A symbolic reference to the named reference.
    Symbolic(&'a RefName),
}

/// A reference seen while visiting a store: nothing is copied, so a
/// visitor pays only for what it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefView<'a> {
    /// The full name, valid by [`RefName`]'s rules.
    pub name: &'a [u8],
    /// The stored value.
    pub target: TargetView<'a>,
    /// What the store knows about its peeled value.
    pub peeled: Peeled,
}

impl<'a> RefView<'a> {
    /// A view of `r`. A ref without a peeled value is [`Peeled::Unknown`]:
    /// [`Ref`] cannot tell "not a tag" from "not recorded".
    pub fn of(r: &'a Ref) -> Self {
        RefView {
            name: r.name.as_bytes(),
            target: match &r.target {
                Target::Object(id) => TargetView::Object(*id),
                Target::Symbolic(name) => TargetView::Symbolic(name),
            },
            peeled: r.peeled.map_or(Peeled::Unknown, Peeled::Tag),
        }
    }

    /// An owned copy.
    pub fn to_ref(&self) -> Ref {
        Ref {
            name: RefName::from_trusted(self.name),
            target: match self.target {
                TargetView::Object(id) => Target::Object(id),
                TargetView::Symbolic(name) => Target::Symbolic(name.clone()),
            },
            peeled: self.peeled.id(),
        }
    }
}
