//! The `refstore` command: git-compatible reference plumbing and a
//! smart-protocol server.
//!
//! Global options (`-C`, `--git-dir`, `-c`) and repository discovery follow
//! git, and so do exit codes: 0 success, 1 a negative answer, 128 a fatal
//! error (`fatal: ...`), 129 a usage error.
//!
//! The entry point is the C `main` (`no_main`), not Rust's runtime start-up:
//! that start-up reads all of `/proc/self/maps` to place the main thread's
//! stack guard, about 60 µs of a one-ref `update-ref` that otherwise takes
//! little more than a millisecond. [`main`] does the rest of what it did
//! that refstore relies on.

// Unit tests keep the test harness's own `main`.
#![cfg_attr(not(test), no_main)]

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

/// The process's entry point, called by the C runtime.
#[cfg_attr(not(test), unsafe(no_mangle))]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    sanitize_standard_descriptors();
    // Writes to a closed pipe fail with EPIPE instead of killing the
    // process, as under Rust's runtime.
    // SAFETY: setting a signal's disposition to "ignore" at start-up, with
    // no other thread running.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let code = run();
    // `exit` flushes standard output and runs the C atexit handlers.
    std::process::exit(code.into())
}

/// Opens `/dev/null` on any of descriptors 0, 1 and 2 that is closed, as
/// Rust's runtime does, so a file refstore opens can never become its
/// standard output or error.
fn sanitize_standard_descriptors() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: `fds` is a valid array of three pollfd for the call.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) };
    for pollfd in fds {
        let closed = if polled < 0 {
            // SAFETY: F_GETFD only queries the descriptor.
            (unsafe { libc::fcntl(pollfd.fd, libc::F_GETFD) }) < 0
        } else {
            pollfd.revents & libc::POLLNVAL != 0
        };
        if closed {
            // SAFETY: a NUL-terminated path; the lowest free descriptor,
            // the closed one, is taken.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        }
    }
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
