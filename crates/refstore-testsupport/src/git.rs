//! Running the machine's git from a test, in the hermetic environment of
//! [`crate::env`].
//!
//! [`Git`] builds one command (home, working directory, fixed dates, extra
//! variables, input) and runs it; [`git`] and [`git_ok`] are its two most
//! common uses.

use crate::env;
use crate::process::{run_with_input, stderr};
use std::path::Path;
use std::process::{Command, Output};

const NO_GIT: &str = "cannot run git: install git (scripts/install-deps does)";

/// One git command in the hermetic environment.
pub struct Git {
    cmd: Command,
}

impl Git {
    /// git with HOME at `home`, working in `cwd`.
    pub fn new(home: &Path, cwd: &Path) -> Git {
        let mut cmd = Command::new("git");
        env::isolate(&mut cmd, home).current_dir(cwd);
        Git { cmd }
    }

    /// git working in `dir`, which is its home too: for a test whose
    /// repository is all the world it needs.
    pub fn at(dir: &Path) -> Git {
        Git::new(dir, dir)
    }

    /// Every author and committer date `date` (git's `<seconds> <zone>`).
    pub fn dated(mut self, date: &str) -> Git {
        env::fixed_dates(&mut self.cmd, date);
        self
    }

    /// Every date [`env::FIXED_DATE`]: the same commands make the same ids
    /// on every run.
    pub fn fixed_dates(self) -> Git {
        self.dated(env::FIXED_DATE)
    }

    /// No global configuration, whatever the home holds.
    pub fn no_global_config(mut self) -> Git {
        env::no_global_config(&mut self.cmd);
        self
    }

    /// One more environment variable.
    pub fn env(mut self, name: &str, value: impl AsRef<std::ffi::OsStr>) -> Git {
        self.cmd.env(name, value);
        self
    }

    /// More environment variables.
    pub fn envs(mut self, vars: &[(&str, &str)]) -> Git {
        self.cmd.envs(vars.iter().copied());
        self
    }

    /// The command itself, for what the builder does not say.
    pub fn command(&mut self) -> &mut Command {
        &mut self.cmd
    }

    /// Runs `git <args>` with nothing on its standard input.
    pub fn run(mut self, args: &[&str]) -> Output {
        self.cmd.args(args).output().expect(NO_GIT)
    }

    /// Runs `git <args>` with `input` on its standard input.
    pub fn run_with(mut self, args: &[&str], input: &[u8]) -> Output {
        run_with_input(self.cmd.args(args), input)
    }

    /// Runs `git <args>`, which must succeed: its standard output.
    pub fn ok(self, args: &[&str]) -> String {
        self.ok_with(args, b"")
    }

    /// Runs `git <args>` with `input`, which must succeed: its standard
    /// output.
    pub fn ok_with(self, args: &[&str], input: &[u8]) -> String {
        String::from_utf8_lossy(&self.ok_bytes(args, input)).into_owned()
    }

    /// Runs `git <args>` with `input`, which must succeed: its standard
    /// output as bytes.
    pub fn ok_bytes(self, args: &[&str], input: &[u8]) -> Vec<u8> {
        let cwd = self.cmd.get_current_dir().map(Path::to_owned);
        let o = if input.is_empty() {
            self.run(args)
        } else {
            self.run_with(args, input)
        };
        // git says some refusals ("nothing to commit") on standard
        // output, so both are shown.
        assert!(
            o.status.success(),
            "git {args:?} in {}: {}{}",
            cwd.as_deref().unwrap_or(Path::new(".")).display(),
            stderr(&o),
            String::from_utf8_lossy(&o.stdout)
        );
        o.stdout
    }
}

/// `git <args>` in `cwd` with HOME at `home`: its output, whatever it is.
pub fn git(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    Git::new(home, cwd).run(args)
}

/// `git <args>` in `cwd` with HOME at `home`, which must succeed: its
/// standard output.
pub fn git_ok(home: &Path, cwd: &Path, args: &[&str]) -> String {
    Git::new(home, cwd).ok(args)
}
