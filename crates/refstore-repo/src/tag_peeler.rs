//! The object database lent to a ref store so that the refs it writes
//! record the peeled values of annotated tags (reftable keeps them beside
//! each ref, as git's and JGit's writers do).

use crate::objects::SharedObjects;
use refstore_odb::{ObjectKind, Odb};
use refstore_refs::{ObjectId, PeelObjects};
use std::sync::{Arc, Mutex, OnceLock};

/// Peels tags through the repository's shared object database, opened on
/// first use: most commands that open a ref store never write a ref, and
/// they should not pay for opening the objects.
#[derive(Debug)]
pub struct TagPeeler {
    objects: Arc<SharedObjects>,
    /// `None` once opening failed: nothing can be peeled then, and a ref
    /// is written without a peeled value, which readers handle by asking
    /// the object database themselves.
    odb: OnceLock<Option<Mutex<Peeling>>>,
}

/// The open database and the last answer: a transaction often sets many
/// refs to one object.
#[derive(Debug)]
struct Peeling {
    odb: Odb,
    last: Option<(ObjectId, Option<ObjectId>)>,
}

impl TagPeeler {
    /// A peeler for the repository's objects.
    pub(crate) fn new(objects: Arc<SharedObjects>) -> Self {
        TagPeeler {
            objects,
            odb: OnceLock::new(),
        }
    }
}

impl PeelObjects for TagPeeler {
    fn peel(&self, id: &ObjectId) -> Option<ObjectId> {
        let peeling = self
            .odb
            .get_or_init(|| {
                let odb = self.objects.odb().ok()?;
                Some(Mutex::new(Peeling { odb, last: None }))
            })
            .as_ref()?;
        let mut peeling = peeling
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((last, answer)) = peeling.last {
            if last == *id {
                return answer;
            }
        }
        // Only a tag is read whole; for anything else its header says so.
        let answer = match peeling.odb.kind(id) {
            Ok(Some(ObjectKind::Tag)) => peeling.odb.peel(id).ok().flatten(),
            _ => None,
        };
        peeling.last = Some((*id, answer));
        answer
    }
}
