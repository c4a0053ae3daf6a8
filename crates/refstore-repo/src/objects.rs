//! The object database of an opened repository: one gix store, taken on
//! first use from those the process shares while a pack directory is
//! unchanged ([`refstore_odb::shared`]), and shared by every handle made
//! on it.

use refstore_odb::{Odb, OdbError};
use refstore_refs::ObjectFormat;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The repository's `objects` directory and, once something read an
/// object, the store opened on it.
pub(crate) struct SharedObjects {
    objects_dir: PathBuf,
    format: ObjectFormat,
    /// Opened on first use: most plumbing commands never read an object.
    store: OnceLock<Arc<gix_odb::Store>>,
}

impl std::fmt::Debug for SharedObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedObjects")
            .field("objects_dir", &self.objects_dir)
            .field("format", &self.format)
            .field("opened", &self.store.get().is_some())
            .finish()
    }
}

impl SharedObjects {
    pub(crate) fn new(objects_dir: PathBuf, format: ObjectFormat) -> Self {
        SharedObjects {
            objects_dir,
            format,
            store: OnceLock::new(),
        }
    }

    pub(crate) fn objects_dir(&self) -> &Path {
        &self.objects_dir
    }

    /// A handle on the shared store, which is opened now if it is not yet.
    /// A failed opening is not remembered: the next call tries again.
    pub(crate) fn odb(&self) -> Result<Odb, OdbError> {
        let store = match self.store.get() {
            Some(store) => store.clone(),
            None => {
                let opened = refstore_odb::shared::shared_store(&self.objects_dir, self.format)?;
                // Two threads may open it at once; both use the first.
                self.store.get_or_init(|| opened).clone()
            }
        };
        Ok(Odb::on_store(store, &self.objects_dir, self.format))
    }
}
