//! What a ref store may ask of the object database: the object an
//! annotated tag peels to. The reftable format records it beside a ref's
//! value, so readers (a fetch's advertisement, `show-ref -d`) need no
//! object lookup; the store itself cannot read objects, so the caller that
//! has the object database lends it this way.

use crate::ObjectId;

/// Peels annotated tags for a ref store that records peeled values.
pub trait PeelObjects: Send + Sync + std::fmt::Debug {
    /// The first object that is not a tag, when `id` names an annotated
    /// tag; `None` for any other object, and for objects that cannot be
    /// read (a ref may name an object the repository lacks).
    fn peel(&self, id: &ObjectId) -> Option<ObjectId>;
}
