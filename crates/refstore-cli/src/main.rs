//! `refstore`: git-compatible reference plumbing; `refstore serve` and
//! `refstore cluster` run `refstore-server` in its place (see the crate's
//! library).

/// The process's entry point, after Rust's runtime start-up (which opens
/// `/dev/null` on closed standard descriptors and ignores SIGPIPE, so that
/// writes to a closed pipe fail with EPIPE).
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(refstore_cli::plumbing_main())
}
