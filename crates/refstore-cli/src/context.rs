//! What every command starts from: the global options applied, and for
//! commands that need one, the repository opened with its configuration.

use refstore_fs::config::{self, Config, Override};
use refstore_fs::discover;
use refstore_fs::real::RealFs;
use refstore_fs::Vfs;
use refstore_repo::Repository;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An error that ends the command, printed as git prints its fatal errors.
#[derive(Debug)]
pub struct Fatal {
    message: String,
    code: u8,
}

/// The message, without `fatal: `.
impl fmt::Display for Fatal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Fatal {
    /// `fatal: <message>`, exit code 128.
    pub fn new(message: impl fmt::Display) -> Self {
        Fatal {
            message: message.to_string(),
            code: 128,
        }
    }

    /// Prints the message and returns the exit code.
    pub fn exit(self) -> u8 {
        eprintln!("fatal: {}", self.message);
        self.code
    }
}

/// Global options, applied.
#[derive(Debug)]
pub struct Globals {
    cwd: PathBuf,
    git_dir: Option<PathBuf>,
    overrides: Vec<Override>,
    vfs: Arc<dyn Vfs>,
}

impl Globals {
    /// Applies `-C` (in order, relative to each other as in git), remembers
    /// `--git-dir` and parses `-c`.
    pub fn new(
        chdir: Vec<PathBuf>,
        git_dir: Option<PathBuf>,
        config: &[String],
    ) -> Result<Self, Fatal> {
        for dir in chdir.iter().filter(|d| !d.as_os_str().is_empty()) {
            std::env::set_current_dir(dir).map_err(|e| {
                Fatal::new(format!(
                    "cannot change to '{}': {}",
                    dir.display(),
                    io_reason(&e)
                ))
            })?;
        }
        let cwd = std::env::current_dir()
            .map_err(|e| Fatal::new(format!("unable to get current working directory: {e}")))?;
        let overrides = config
            .iter()
            .map(|c| config::parse_cli(c))
            .collect::<Result<_, _>>()
            .map_err(Fatal::new)?;
        Ok(Globals {
            cwd,
            git_dir,
            overrides,
            vfs: refstore_fs::kill_at::from_env(Arc::new(RealFs::new())),
        })
    }

    /// The filesystem.
    pub fn vfs(&self) -> &Arc<dyn Vfs> {
        &self.vfs
    }

    /// The `-c name=value` settings.
    pub fn config_overrides(&self) -> &[Override] {
        &self.overrides
    }

    /// The working directory after `-C`.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The git directory as `--git-dir` or `GIT_DIR` gave it, if they did.
    pub fn explicit_git_dir(&self) -> Option<PathBuf> {
        self.git_dir.clone().or_else(|| {
            std::env::var_os("GIT_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
    }

    /// Configuration without a repository (system, global, overrides).
    pub fn config_outside_repository(&self) -> Result<Config, Fatal> {
        Config::load(None, &self.overrides).map_err(Fatal::new)
    }

    /// Finds the repository as git does (`--git-dir`, `GIT_DIR`, then
    /// upwards from the working directory) and opens it.
    pub fn open_repo(&self) -> Result<Repository, Fatal> {
        let mut options = discover::Options::from_env();
        if let Some(dir) = &self.git_dir {
            options.git_dir = Some(dir.clone());
        }
        let location =
            discover::discover(self.vfs.as_ref(), &self.cwd, &options).map_err(Fatal::new)?;
        let repo = Repository::open_location(self.vfs.clone(), location, &self.overrides)
            .map_err(Fatal::new)?;
        for warning in repo.config.warnings() {
            eprintln!("warning: {warning}");
        }
        Ok(repo)
    }
}

/// The OS's description of an error without Rust's "(os error N)" suffix,
/// as git prints it.
pub fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}
