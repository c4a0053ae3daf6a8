//! The command line of both executables: global options, subcommands,
//! and which executable runs what.
//!
//! Global options (`-C`, `--git-dir`, `-c`) and repository discovery follow
//! git, and so do exit codes: 0 success, 1 a negative answer, 128 a fatal
//! error (`fatal: ...`), 129 a usage error.

use crate::commands::{self, Command};
use crate::context::{self, Fatal};
use clap::{Args, FromArgMatches};
use std::ffi::OsString;
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

/// The name of the server's executable, beside `refstore`.
pub const SERVER_EXECUTABLE: &str = "refstore-server";

/// `refstore`: runs every plumbing command itself, and hands `serve` and
/// `cluster` to [`SERVER_EXECUTABLE`]; the exit code.
pub fn plumbing_main() -> u8 {
    run(Hand::ServerCommandsOver, commands::run_local)
}

/// `refstore-server`: runs every command, `serve` and `cluster` included;
/// the exit code.
pub fn server_main() -> u8 {
    run(Hand::Nothing, commands::run)
}

/// What an executable leaves to the server's.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hand {
    /// `serve` and `cluster` run in the server's executable.
    ServerCommandsOver,
    /// Everything runs here.
    Nothing,
}

/// Replaces this process with the server's executable, given the same
/// arguments (so the process id, which service managers and `kill` know,
/// stays the same). Returns only on failure.
fn exec_server() -> Fatal {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().ok();
    let server = exe
        .as_deref()
        .and_then(|exe| exe.parent())
        .map(|dir| dir.join(SERVER_EXECUTABLE))
        .unwrap_or_else(|| PathBuf::from(SERVER_EXECUTABLE));
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let error = std::process::Command::new(&server).args(args).exec();
    Fatal::new(format!(
        "cannot run '{}': {error}; `refstore serve` and `refstore cluster` run the server's \
         executable, installed beside `refstore` (`cargo install --path crates/refstore-cli` \
         installs both)",
        server.display()
    ))
}

/// Parses the command line and runs the command with `dispatch`, or hands
/// it over; the exit code. `dispatch` decides what code each executable
/// holds: the linker keeps only what the one passed reaches.
fn run(hand: Hand, dispatch: fn(Command, &context::Globals) -> Result<u8, Fatal>) -> u8 {
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
    // Handed over before `Globals` is built, which applies `-C`.
    // `maintenance --cluster` reads etcd, whose client only the server's
    // executable holds.
    let server_command = match &command {
        Command::Serve(_) | Command::Cluster(_) => true,
        Command::Maintenance(args) => args.is_for_cluster(),
        _ => false,
    };
    if hand == Hand::ServerCommandsOver && server_command {
        return exec_server().exit();
    }
    let globals = match context::Globals::new(global.chdir, global.git_dir, &global.config) {
        Ok(g) => g,
        Err(fatal) => return fatal.exit(),
    };
    match dispatch(command, &globals) {
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
