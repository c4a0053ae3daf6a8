//! `refstore-server`: the smart-protocol server (`serve`) and the cluster's
//! commands, which `refstore serve` and `refstore cluster` run.

/// The process's entry point, after Rust's runtime start-up.
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(refstore_cli::server_main())
}
