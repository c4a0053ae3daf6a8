//! Signals: SIGTERM and SIGINT set a flag the server polls, so requests in
//! flight finish before the process exits (graceful shutdown); SIGHUP sets
//! another that asks for configuration files to be read again.

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

/// A flag that SIGHUP sets (whoever reloads clears it).
pub fn on_hangup() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, flag.clone())?;
    Ok(flag)
}
