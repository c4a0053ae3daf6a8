//! `refstore check-ref-format`.

/// Arguments of `check-ref-format`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The name to check.
    name: String,
}

/// Runs the command.
pub fn run(_args: Args) -> u8 {
    1
}
