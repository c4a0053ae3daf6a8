//! `refstore serve` as a command: what only the executable does, with
//! the server it starts as a child process. Flags reach the server and
//! bad ones stop it at startup with the reason; `--print-address`;
//! SIGTERM and SIGHUP; the log's formats; what the process as a whole
//! costs and survives (its memory, a soak with local writers beside it, a
//! kill while it writes); `upload-pack` and `receive-pack` over stdio; and
//! the hidden replication flags. How the server behaves is tested beside
//! its code, in refstore-server's and refstore-replica's tests.

#[path = "../served/mod.rs"]
mod served;
#[path = "../ssh_served/mod.rs"]
mod ssh_served;
#[path = "../support/mod.rs"]
mod support;

mod flags;
mod memory;
mod pack_cache;
mod replicate;
mod signals;
mod soak;
mod stdio;
