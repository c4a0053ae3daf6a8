//! One module per subcommand.

mod check_ref_format;

/// The subcommands of `refstore`.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Check that a reference name is well formed (like `git check-ref-format`).
    CheckRefFormat(check_ref_format::Args),
}

/// Runs one subcommand and returns its exit code.
pub fn run(command: Command) -> u8 {
    match command {
        Command::CheckRefFormat(args) => check_ref_format::run(args),
    }
}
