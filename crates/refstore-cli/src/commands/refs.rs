//! `refstore refs`: operations on the ref store as a whole.

use super::update_ref::ref_store;
use crate::context::{Fatal, Globals};
use refstore_refs::files::verify::Severity;

/// Arguments of `refs`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: RefsCommand,
}

/// The subcommands of `refs`.
#[derive(Debug, clap::Subcommand)]
enum RefsCommand {
    /// Check the ref store for damage: unreadable loose refs, bad
    /// packed-refs lines, directory/file conflicts, damaged reftables (like
    /// `git refs verify`).
    Verify(VerifyArgs),
}

/// Arguments of `refs verify`.
#[derive(Debug, clap::Args)]
struct VerifyArgs {
    /// Treat warnings as errors.
    #[arg(long)]
    strict: bool,
    /// Say what is being checked.
    #[arg(long)]
    verbose: bool,
}

/// Runs `refs`.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    match args.command {
        RefsCommand::Verify(args) => verify(args, globals),
    }
}

/// Prints one line per finding on standard error; exits 1 if any is an
/// error (or, with `--strict`, a warning).
fn verify(args: VerifyArgs, globals: &Globals) -> Result<u8, Fatal> {
    let repo = globals.open_repo()?;
    let store = ref_store(&repo, globals)?;
    if args.verbose {
        eprintln!("Checking references consistency");
    }
    let findings = match (store.as_files(), store.as_reftable()) {
        (Some(files), _) => files.verify(),
        (None, Some(reftable)) => reftable.verify(),
        (None, None) => unreachable!("a store is files or reftable"),
    }
    .map_err(Fatal::new)?;
    let mut failed = false;
    for finding in &findings {
        eprintln!("{finding}");
        failed |= finding.severity == Severity::Error || args.strict;
    }
    Ok(u8::from(failed))
}
