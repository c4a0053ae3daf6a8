//! The object database lent to a ref store so that the refs it writes
//! record the peeled values of annotated tags (reftable keeps them beside
//! each ref, as git's and JGit's writers do).

use crate::Odb;
use refstore_refs::{ObjectFormat, ObjectId, PeelObjects};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// Peels tags through an object database opened on first use: most
/// commands that open a ref store never write a ref, and they should not
/// pay for opening the objects.
#[derive(Debug)]
pub struct TagPeeler {
    objects_dir: PathBuf,
    format: ObjectFormat,
    /// `None` once opening failed: nothing can be peeled then, and a ref
    /// is written without a peeled value, which readers handle by asking
    /// the object database themselves.
    odb: OnceLock<Option<Mutex<Odb>>>,
}

impl TagPeeler {
    /// A peeler for the objects in `objects_dir`.
    pub fn new(objects_dir: PathBuf, format: ObjectFormat) -> Self {
        TagPeeler {
            objects_dir,
            format,
            odb: OnceLock::new(),
        }
    }
}

impl PeelObjects for TagPeeler {
    fn peel(&self, id: &ObjectId) -> Option<ObjectId> {
        let odb = self
            .odb
            .get_or_init(|| {
                Odb::open(&self.objects_dir, self.format)
                    .ok()
                    .map(Mutex::new)
            })
            .as_ref()?;
        let odb = odb.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        odb.peel(id).ok().flatten()
    }
}
