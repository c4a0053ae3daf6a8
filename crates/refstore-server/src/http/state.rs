//! What every connection of the HTTP server shares: the serving options,
//! the filesystem, the turns to run services, the maintenance queue and
//! the throttle of failed logins.

use crate::maintenance::Maintenance;
use crate::options::ServeOptions;
use crate::permits::Permits;
use crate::throttle::Throttle;
use refstore_fs::Vfs;
use std::sync::Arc;

/// What every connection shares.
pub(super) struct State {
    pub options: ServeOptions,
    pub vfs: Arc<dyn Vfs>,
    pub permits: Permits,
    pub maintenance: Arc<Maintenance>,
    pub throttle: Throttle,
}
