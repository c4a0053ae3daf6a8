//! Graceful shutdown: SIGTERM and SIGINT set a flag the server polls, so
//! requests in flight finish before the process exits.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A flag that SIGTERM or SIGINT sets.
pub fn on_signals() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, flag.clone())?;
    }
    Ok(flag)
}
