//! What every connection of the SSH server shares: the serving options,
//! the users' keys, the turns to run services, and the count of services
//! running, which shutdown waits on.

use super::keys::AuthorizedKeys;
use crate::access::Reloadable;
use crate::capacity::Capacity;
use crate::options::ServeOptions;
use refstore_fs::Vfs;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

/// What every connection shares.
pub(super) struct Shared {
    pub(super) options: ServeOptions,
    pub(super) vfs: Arc<dyn Vfs>,
    pub(super) keys: Arc<Reloadable<AuthorizedKeys>>,
    pub(super) capacity: Capacity,
    /// Services running now, across connections.
    pub(super) running: AtomicUsize,
}
