//! What the transports of one `refstore serve` share: the turns to run a
//! service (`--workers`, half of them at most for one client address) and
//! the background maintenance after pushes, so that HTTP and SSH together
//! run no more services, and no more maintenance, than asked for.

use crate::maintenance::Maintenance;
use crate::options::ServeOptions;
use crate::permits::Permits;
use refstore_fs::Vfs;
use std::sync::Arc;

/// The shared turns and maintenance queue; clones share them.
#[derive(Clone)]
pub struct Capacity {
    pub(crate) permits: Permits,
    pub(crate) maintenance: Arc<Maintenance>,
}

impl std::fmt::Debug for Capacity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capacity").finish_non_exhaustive()
    }
}

impl Capacity {
    /// `options.workers` turns and `options.maintenance_workers`
    /// maintenance threads (started now) for the repositories of `vfs`.
    pub fn new(options: &ServeOptions, vfs: Arc<dyn Vfs>) -> Capacity {
        Capacity {
            permits: Permits::new(options.workers),
            maintenance: Arc::new(Maintenance::start(
                options.maintenance_workers,
                vfs,
                options.config_overrides.clone(),
                options.ref_source.clone(),
            )),
        }
    }
}
