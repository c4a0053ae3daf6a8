//! The `refstore` command: git-compatible reference plumbing and a
//! smart-protocol server.
//!
//! Global options (`-C`, `--git-dir`, `-c`) and repository discovery follow
//! git, and so do exit codes: 0 success, 1 a negative answer, 128 a fatal
//! error (`fatal: ...`), 129 a usage error.

mod allocator;
mod commands;
mod context;
mod progress;

use clap::{Args, FromArgMatches};
use std::path::PathBuf;

/// The options that come before the subcommand.
#[derive(Debug, Args)]
struct GlobalArgs {
    /// Run as if refstore was started in <path> (may be given several times).
    #[arg(short = 'C', value_name = "path", action = clap::ArgAction::Append)]
    chdir: Vec<PathBuf>,
    /// Use <path> as the repository's git directory.
    #[arg(long = "git-dir", value_name = "path")]
    git_dir: Option<PathBuf>,
    /// Set a configuration value for this invocation (`name=value`; `name`
    /// alone means true).
    #[arg(short = 'c', value_name = "name=value", action = clap::ArgAction::Append)]
    config: Vec<String>,
    /// Print refstore's version.
    #[arg(long)]
    version: bool,
}

/// The command line: global options, and the subcommands, whose arguments
/// are built only for the one being run.
fn cli() -> clap::Command {
    let root = clap::Command::new("refstore").disable_version_flag(true);
    GlobalArgs::augment_args(root)
        .about(env!("CARGO_PKG_DESCRIPTION"))
        .long_about(None)
        .subcommands(commands::subcommands())
}

/// The process's entry point, after Rust's runtime start-up (which opens
/// `/dev/null` on closed standard descriptors and ignores SIGPIPE, so that
/// writes to a closed pipe fail with EPIPE).
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(run())
}

/// Parses the command line and runs the command; the exit code.
fn run() -> u8 {
    let parsed = cli().try_get_matches().and_then(|matches| {
        let global = GlobalArgs::from_arg_matches(&matches)?;
        let command = match matches.subcommand_name() {
            Some(_) => Some(commands::Command::from_arg_matches(&matches)?),
            None => None,
        };
        Ok((global, command))
    });
    let (global, command) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            let code = if e.use_stderr() { 129 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    if global.version {
        println!("refstore version {}", env!("CARGO_PKG_VERSION"));
        return 0;
    }
    let Some(command) = command else {
        let _ = cli().print_help();
        return 1;
    };
    let globals = match context::Globals::new(global.chdir, global.git_dir, &global.config) {
        Ok(g) => g,
        Err(fatal) => return fatal.exit(),
    };
    match commands::run(command, &globals) {
        Ok(code) => code,
        Err(fatal) => fatal.exit(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Subcommand;

    /// The deferred subcommands must be the derived ones: same names, same
    /// descriptions, same arguments, so help and parsing cannot drift.
    #[test]
    fn deferred_subcommands_render_as_the_derived_ones() {
        let mut derived = commands::Command::augment_subcommands(clap::Command::new("refstore"));
        let mut deferred = clap::Command::new("refstore").subcommands(commands::subcommands());
        let names: Vec<String> = derived
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .collect();
        let deferred_names: Vec<String> = deferred
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .collect();
        assert_eq!(names, deferred_names);
        derived.build();
        deferred.build();
        for name in &names {
            let mut a = derived.find_subcommand_mut(name).unwrap().clone();
            let mut b = deferred.find_subcommand_mut(name).unwrap().clone();
            assert_eq!(
                a.render_long_help().to_string(),
                b.render_long_help().to_string(),
                "help of {name}"
            );
            assert_eq!(
                a.get_about().map(|s| s.to_string()),
                b.get_about().map(|s| s.to_string())
            );
        }
    }
}
