//! `refstore refs`: operations on the ref store as a whole.

use crate::context::{Fatal, Globals};
use crate::progress::ProgressBar;
use refstore_fs::config::{Component, RefStorage};
use refstore_refs::files::verify::Severity;
use refstore_refs::reftable::{migrate, ReftableOptions};

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
    /// Move the refs and reflogs into the other ref format.
    Migrate(MigrateArgs),
}

/// Arguments of `refs migrate`.
#[derive(Debug, clap::Args)]
struct MigrateArgs {
    /// The format to migrate to.
    #[arg(long = "ref-format", value_name = "format")]
    ref_format: String,
    /// Count what would be migrated without changing anything.
    #[arg(long)]
    dry_run: bool,
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
        RefsCommand::Migrate(args) => migrate(args, globals),
    }
}

/// Migrates the refs and reflogs into the other format.
fn migrate(args: MigrateArgs, globals: &Globals) -> Result<u8, Fatal> {
    let target = RefStorage::from_name(&args.ref_format)
        .ok_or_else(|| Fatal::new(format!("unknown ref storage format '{}'", args.ref_format)))?;
    let repo = globals.open_repo()?;
    if repo.settings.ref_storage == target {
        return Err(Fatal::new(format!(
            "repository already uses '{}' format",
            target.name()
        )));
    }
    if repo.location.git_dir != repo.location.common_dir {
        return Err(Fatal::new(
            "migrating repositories with worktrees is not supported",
        ));
    }
    let store = repo.refs().map_err(Fatal::new)?;
    let flush = repo.settings.fsync.method_for(Component::Reference);
    let git_dir = &repo.location.git_dir;
    let bar = ProgressBar::new("migrating refs");
    let migrated = match (store.as_files(), store.as_reftable()) {
        (Some(files), _) => {
            let format = files.object_format();
            let mut options = ReftableOptions::from_settings(&repo.settings.reftable, format);
            options.batch_mechanism = repo.settings.fsync.batch_mechanism();
            migrate::files_to_reftable(files, git_dir, &options, flush, args.dry_run, &bar)
        }
        (None, Some(reftable)) => {
            migrate::reftable_to_files(reftable, git_dir, flush, args.dry_run, &bar)
        }
        (None, None) => unreachable!("a store is files or reftable"),
    }
    .map_err(Fatal::new)?;
    bar.finish();
    let verb = if args.dry_run {
        "would migrate"
    } else {
        "migrated"
    };
    eprintln!(
        "{verb} {} refs and {} reflog entries to the {} format",
        migrated.refs,
        migrated.log_entries,
        target.name()
    );
    Ok(0)
}

/// Prints one line per finding on standard error; exits 1 if any is an
/// error (or, with `--strict`, a warning).
fn verify(args: VerifyArgs, globals: &Globals) -> Result<u8, Fatal> {
    let repo = globals.open_repo()?;
    let store = repo.refs().map_err(Fatal::new)?;
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
