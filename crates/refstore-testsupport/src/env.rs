//! The hermetic environment tests run git (and JGit) in: a home of the
//! test's own, no system configuration, no `GIT_*` variable of the
//! developer's shell, and fixed identities, so that a test sees the same
//! git on every machine. Fixed dates are an option: with them the same
//! commands make the same object ids on every run.

use std::path::Path;
use std::process::Command;

/// The author of every commit a test makes.
pub const AUTHOR: (&str, &str) = ("A U Thor", "author@example.com");

/// The committer of every commit a test makes.
pub const COMMITTER: (&str, &str) = ("C O Mitter", "committer@example.com");

/// The date [`fixed_dates`] gives when a test has no reason to pick
/// another: 2023-11-14, in UTC.
pub const FIXED_DATE: &str = "1700000000 +0000";

/// Variables of the developer's shell that would point git elsewhere or
/// add configuration.
const INHERITED: [&str; 5] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_CEILING_DIRECTORIES",
];

/// `cmd` isolated from the developer's configuration: HOME is `home`, no
/// system configuration, none of the shell's `GIT_*` variables, and the
/// fixed [`AUTHOR`] and [`COMMITTER`].
pub fn isolate<'a>(cmd: &'a mut Command, home: &Path) -> &'a mut Command {
    cmd.env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CONFIG_NOSYSTEM", "1");
    for name in INHERITED {
        cmd.env_remove(name);
    }
    cmd.env("GIT_AUTHOR_NAME", AUTHOR.0)
        .env("GIT_AUTHOR_EMAIL", AUTHOR.1)
        .env("GIT_COMMITTER_NAME", COMMITTER.0)
        .env("GIT_COMMITTER_EMAIL", COMMITTER.1)
}

/// `cmd` with `date` (git's `<seconds> <zone>` form) as every author and
/// committer date.
pub fn fixed_dates<'a>(cmd: &'a mut Command, date: &str) -> &'a mut Command {
    cmd.env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
}

/// `cmd` reading no global configuration either, whatever is in its home.
pub fn no_global_config(cmd: &mut Command) -> &mut Command {
    cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
}
