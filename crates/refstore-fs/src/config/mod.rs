//! Configuration: git's files and overrides, read with `gix-config`, and the
//! typed settings refstore acts on.
//!
//! Sources, later ones winning as in git: the system file (`/etc/gitconfig`,
//! unless `GIT_CONFIG_NOSYSTEM`; `GIT_CONFIG_SYSTEM`), the global files
//! (`$XDG_CONFIG_HOME/git/config`, `~/.gitconfig`; `GIT_CONFIG_GLOBAL`), the
//! repository's `config` (and `config.worktree`), with their includes, then
//! `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`, then
//! `GIT_CONFIG_PARAMETERS` (how git hands `-c` to child processes), then the
//! `-c` options of this invocation.
//!
//! Invalid values produce git's messages (`bad boolean config value 'maybe'
//! for 'core.bare'`); the command line shows them as `fatal:` and exits 128.

mod error;
mod fsync;
mod overrides;
mod sources;

pub use error::ConfigError;
pub use fsync::{Component, FsyncSettings};
pub use overrides::{parse_cli, parse_parameters, Override};

use crate::flush::BatchMechanism;
use gix_config::{File, Source};
use std::fmt;
use std::path::Path;
use std::time::Duration;

/// The ref storage format of a repository (`extensions.refStorage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RefStorage {
    /// Loose refs and `packed-refs`.
    #[default]
    Files,
    /// A reftable stack.
    Reftable,
}

impl RefStorage {
    /// Parses a format name (`files`, `reftable`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "files" => Some(RefStorage::Files),
            "reftable" => Some(RefStorage::Reftable),
            _ => None,
        }
    }

    /// The format's name.
    pub fn name(self) -> &'static str {
        match self {
            RefStorage::Files => "files",
            RefStorage::Reftable => "reftable",
        }
    }
}

/// `core.logAllRefUpdates`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogRefUpdates {
    /// Write reflogs only for refs that already have one.
    Never,
    /// Also create reflogs for branches, remote-tracking refs, notes and HEAD.
    Branches,
    /// Create reflogs for every ref.
    Always,
}

/// Settings of the reftable backend (`reftable.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReftableSettings {
    /// `reftable.blockSize` (bytes, at most 16777215).
    pub block_size: u32,
    /// `reftable.restartInterval`.
    pub restart_interval: u16,
    /// `reftable.indexObjects`: write obj blocks for lookups by object id.
    pub index_objects: bool,
    /// `reftable.geometricFactor` of auto-compaction.
    pub geometric_factor: u32,
    /// `reftable.autoCompaction`.
    pub auto_compaction: bool,
    /// `reftable.lockTimeout` for `tables.list.lock`.
    pub lock_timeout: Duration,
}

/// Settings of `receive-pack` (`receive.*`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReceiveSettings {
    /// `receive.denyDeletes`.
    pub deny_deletes: bool,
    /// `receive.denyNonFastForwards`.
    pub deny_non_fast_forwards: bool,
    /// `receive.denyCurrentBranch` as given (`refuse` when unset).
    pub deny_current_branch: String,
}

/// Everything refstore reads from configuration, typed and defaulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// `core.repositoryFormatVersion` of the repository (0 when unset).
    pub format_version: u32,
    /// `extensions.objectFormat`: `sha1` or `sha256`.
    pub object_format: &'static str,
    /// `extensions.refStorage`.
    pub ref_storage: RefStorage,
    /// `core.bare`, if set.
    pub bare: Option<bool>,
    /// `core.fsync`, `core.fsyncMethod` and `refstore.batchFlush`.
    pub fsync: FsyncSettings,
    /// `core.logAllRefUpdates`, if set (its default depends on bareness).
    pub log_all_ref_updates: Option<LogRefUpdates>,
    /// `core.filesRefLockTimeout` (default 100 ms).
    pub files_ref_lock_timeout: Duration,
    /// `core.packedRefsTimeout` (default 1 s).
    pub packed_refs_timeout: Duration,
    /// `reftable.*`.
    pub reftable: ReftableSettings,
    /// `receive.*`.
    pub receive: ReceiveSettings,
    /// `init.defaultBranch`, if set.
    pub default_branch: Option<String>,
    /// `refstore.staleLockAge`: the age (in seconds) from which a lock file
    /// whose holder is gone is removed by the next writer (default 60;
    /// a negative value never removes one). See [`crate::stale`].
    pub stale_lock_age: Option<Duration>,
}

impl Settings {
    /// Whether reflogs are created for new branches etc., given bareness:
    /// git's default is on in repositories with a work tree, off in bare ones.
    pub fn log_ref_updates(&self, bare: bool) -> LogRefUpdates {
        self.log_all_ref_updates.unwrap_or(if bare {
            LogRefUpdates::Never
        } else {
            LogRefUpdates::Branches
        })
    }
}

/// Loaded configuration.
pub struct Config {
    file: File,
    warnings: Vec<String>,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config").finish_non_exhaustive()
    }
}

fn load_error(e: impl fmt::Display) -> ConfigError {
    ConfigError::new(format!("unable to read configuration: {e}"))
}

/// Splits `section[.subsection].name` at its first and last dot.
fn split_key(key: &str) -> Option<(&str, Option<&str>, &str)> {
    let (section, rest) = key.split_once('.')?;
    match rest.rsplit_once('.') {
        Some((sub, name)) => Some((section, Some(sub), name)),
        None => Some((section, None, rest)),
    }
}

/// The key as git prints it in messages: section and name in lower case.
fn canonical(key: &str) -> String {
    match split_key(key) {
        Some((s, Some(sub), n)) => format!("{}.{sub}.{}", s.to_lowercase(), n.to_lowercase()),
        Some((s, None, n)) => format!("{}.{}", s.to_lowercase(), n.to_lowercase()),
        None => key.to_lowercase(),
    }
}

impl Config {
    /// Loads the configuration of the repository at `git_dir` (or only the
    /// system and global files, outside a repository), then the environment's
    /// and the command line's overrides.
    pub fn load(git_dir: Option<&Path>, cli: &[Override]) -> Result<Config, ConfigError> {
        let mut file = match git_dir {
            Some(dir) => sources::repository(dir).map_err(load_error)?,
            None => {
                let mut f = sources::globals().map_err(load_error)?;
                f.append(sources::environment().map_err(load_error)?)
                    .map_err(load_error)?;
                f
            }
        };
        let mut overrides = match std::env::var("GIT_CONFIG_PARAMETERS") {
            Ok(text) => parse_parameters(&text)?,
            Err(_) => Vec::new(),
        };
        overrides.extend(cli.iter().cloned());
        if !overrides.is_empty() {
            let mut extra = File::new(gix_config::file::Metadata::from(Source::Cli));
            for o in &overrides {
                let (section, sub, name) = split_key(&o.key).ok_or_else(|| {
                    ConfigError::new(format!("key does not contain a section: {}", o.key))
                })?;
                let invalid = |_| ConfigError::new(format!("invalid key: {}", o.key));
                extra
                    .section_mut_or_create_new(section, sub.map(gix_config::AsBStr::as_bstr))
                    .map_err(invalid)?
                    .push(name, o.value.as_deref().map(gix_config::AsBStr::as_bstr))
                    .map_err(invalid)?;
            }
            file.append(extra).map_err(load_error)?;
        }
        Ok(Config {
            file,
            warnings: Vec::new(),
        })
    }

    /// The configuration held in `bytes`, as if it were a repository's own
    /// `config` file with no other source and no includes: the settings
    /// parsers run over untrusted text without touching the filesystem.
    #[doc(hidden)]
    pub fn from_local_bytes(bytes: &[u8]) -> Result<Config, ConfigError> {
        let meta = gix_config::file::Metadata::from(Source::Local);
        let file = File::from_bytes_owned(&mut bytes.to_vec(), meta, Default::default())
            .map_err(load_error)?;
        Ok(Config {
            file,
            warnings: Vec::new(),
        })
    }

    /// Warnings collected while interpreting values (git prints them as
    /// `warning: ...` and goes on).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The last value of `key` as text (lossily decoded).
    pub fn string(&self, key: &str) -> Option<String> {
        self.file.string(key).map(|v| v.to_string())
    }

    /// The last value of `key` as a boolean, with git's spellings.
    pub fn bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        self.file.boolean(key).map_err(|_| {
            ConfigError::new(format!(
                "bad boolean config value '{}' for '{}'",
                self.string(key).unwrap_or_default(),
                canonical(key)
            ))
        })
    }

    /// The last value of `key` as an integer (`k`, `m`, `g` suffixes).
    pub fn int(&self, key: &str) -> Result<Option<i64>, ConfigError> {
        self.file.integer(key).map_err(|_| {
            ConfigError::new(format!(
                "bad numeric config value '{}' for '{}': invalid unit",
                self.string(key).unwrap_or_default(),
                canonical(key)
            ))
        })
    }

    fn int_in(&self, key: &str, default: i64, max: i64) -> Result<i64, ConfigError> {
        match self.int(key)? {
            None => Ok(default),
            Some(v) if (0..=max).contains(&v) => Ok(v),
            Some(v) => Err(ConfigError::new(format!(
                "bad numeric config value '{v}' for '{}': out of range",
                canonical(key)
            ))),
        }
    }

    fn millis(&self, key: &str, default: u64) -> Result<Duration, ConfigError> {
        self.int_in(key, default as i64, i64::MAX)
            .map(|ms| Duration::from_millis(ms as u64))
    }

    /// A value of the repository's own `config` file only (format version and
    /// extensions are not taken from anywhere else, as in git).
    fn local_string(&self, key: &str) -> Option<String> {
        self.file
            .string_filter(key, |meta| meta.source == Source::Local)
            .map(|v| v.to_string())
    }

    /// Checks the repository format as git does before touching a repository:
    /// a version above 1 or an extension it does not know is refused.
    pub fn check_repository_format(&self) -> Result<(), ConfigError> {
        let version: u32 = match self.local_string("core.repositoryformatversion") {
            None => 0,
            Some(v) => v.trim().parse().map_err(|_| {
                ConfigError::new(format!(
                    "bad numeric config value '{v}' for 'core.repositoryformatversion': invalid unit"
                ))
            })?,
        };
        if version > 1 {
            return Err(ConfigError::new(format!(
                "Expected git repo version <= 1, found {version}"
            )));
        }
        let mut extensions: Vec<String> = Vec::new();
        if let Some(sections) = self.file.sections_by_name("extensions") {
            for section in sections.filter(|s| s.meta().source == Source::Local) {
                extensions.extend(section.value_names().map(|n| n.to_lowercase()));
            }
        }
        const V1_ONLY: &[&str] = &["objectformat", "refstorage", "worktreeconfig"];
        const ANY_VERSION: &[&str] = &["noop", "preciousobjects", "partialclone", "noop-v1"];
        let v1_only: Vec<&String> = extensions
            .iter()
            .filter(|e| V1_ONLY.contains(&e.as_str()))
            .collect();
        if version == 0 && !v1_only.is_empty() {
            let list: Vec<String> = v1_only.iter().map(|e| format!("\t{e}")).collect();
            return Err(ConfigError::new(format!(
                "repo version is 0, but v1-only extension found:\n{}",
                list.join("\n")
            )));
        }
        let unknown: Vec<String> = extensions
            .iter()
            .filter(|e| !V1_ONLY.contains(&e.as_str()) && !ANY_VERSION.contains(&e.as_str()))
            .map(|e| format!("\t{e}"))
            .collect();
        if version == 1 && !unknown.is_empty() {
            return Err(ConfigError::new(format!(
                "unknown repository extension found:\n{}",
                unknown.join("\n")
            )));
        }
        Ok(())
    }

    /// Interprets every setting refstore uses. Warnings (unknown fsync
    /// components, ...) are added to [`warnings`](Self::warnings).
    pub fn settings(&mut self) -> Result<Settings, ConfigError> {
        let format_version = self
            .local_string("core.repositoryformatversion")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let object_format = match self.local_string("extensions.objectformat") {
            None => "sha1",
            Some(v) => match v.to_lowercase().as_str() {
                "sha1" => "sha1",
                "sha256" => "sha256",
                _ => {
                    return Err(ConfigError::new(format!(
                        "invalid value for 'extensions.objectformat': '{v}'"
                    )))
                }
            },
        };
        let ref_storage = match self.local_string("extensions.refstorage") {
            None => RefStorage::Files,
            Some(v) => RefStorage::from_name(&v.to_lowercase()).ok_or_else(|| {
                ConfigError::new(format!("invalid value for 'extensions.refstorage': '{v}'"))
            })?,
        };
        let mut warnings = Vec::new();
        let fsync = FsyncSettings::parse(
            self.string("core.fsync").as_deref(),
            self.string("core.fsyncmethod").as_deref(),
            &mut warnings,
        )
        .with_batch_mechanism(self.batch_flush()?);
        self.warnings.extend(warnings);
        let log_all_ref_updates = match self.string("core.logallrefupdates") {
            None => None,
            Some(v) if v.eq_ignore_ascii_case("always") => Some(LogRefUpdates::Always),
            Some(_) => Some(if self.bool("core.logallrefupdates")?.unwrap_or(true) {
                LogRefUpdates::Branches
            } else {
                LogRefUpdates::Never
            }),
        };
        let reftable = ReftableSettings {
            block_size: self.int_in("reftable.blocksize", 4096, 16_777_215)? as u32,
            restart_interval: self.int_in("reftable.restartinterval", 16, 65_535)? as u16,
            index_objects: self.bool("reftable.indexobjects")?.unwrap_or(true),
            geometric_factor: self.int_in("reftable.geometricfactor", 2, u32::MAX as i64)? as u32,
            auto_compaction: self.bool("reftable.autocompaction")?.unwrap_or(true),
            lock_timeout: self.millis("reftable.locktimeout", 100)?,
        };
        let receive = ReceiveSettings {
            deny_deletes: self.bool("receive.denydeletes")?.unwrap_or(false),
            deny_non_fast_forwards: self.bool("receive.denynonfastforwards")?.unwrap_or(false),
            deny_current_branch: self
                .string("receive.denycurrentbranch")
                .unwrap_or_else(|| "refuse".to_owned()),
        };
        Ok(Settings {
            format_version,
            object_format,
            ref_storage,
            bare: self.bool("core.bare")?,
            fsync,
            log_all_ref_updates,
            files_ref_lock_timeout: self.millis("core.filesreflocktimeout", 100)?,
            packed_refs_timeout: self.millis("core.packedrefstimeout", 1000)?,
            reftable,
            receive,
            default_branch: self.string("init.defaultbranch"),
            stale_lock_age: match self.int("refstore.stalelockage")? {
                None => Some(crate::stale::DEFAULT_STALE_LOCK_AGE),
                Some(seconds) if seconds < 0 => None,
                Some(seconds) => Some(Duration::from_secs(seconds as u64)),
            },
        })
    }

    /// `refstore.batchFlush`: how the flush points of `core.fsyncMethod=batch`
    /// are carried out. Unlike git's own keys, whose unknown values git
    /// ignores with a warning, a wrong value here is refused: guessing could
    /// choose a mechanism that flushes nothing on this filesystem.
    pub fn batch_flush(&self) -> Result<BatchMechanism, ConfigError> {
        match self.string("refstore.batchflush") {
            None => Ok(BatchMechanism::Auto),
            Some(v) => BatchMechanism::from_config_name(v.trim()).ok_or_else(|| {
                ConfigError::new(format!(
                    "invalid value for 'refstore.batchflush': '{v}' (expected auto, syncfs or fdatasync)"
                ))
            }),
        }
    }
}
