//! The refstore commands, built as two executables:
//!
//! - `refstore`, the git-compatible plumbing (`update-ref`, `show-ref`,
//!   `upload-pack`, `maintenance`, ...): one short process per command,
//!   so it holds none of the network server's code and starts as fast as
//!   git's own commands;
//! - `refstore-server`, which runs `serve` (HTTP, HTTPS, SSH, the cluster)
//!   and `cluster`, and every other command too. `refstore serve` and
//!   `refstore cluster` replace their process with it, as `git daemon`
//!   runs `git-daemon`, so users name one command either way.

mod allocator;
mod commands;
mod context;
mod entry;
mod progress;

pub use entry::{plumbing_main, server_main, SERVER_EXECUTABLE};
