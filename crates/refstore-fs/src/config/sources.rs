//! The configuration files git reads, found without running git.
//!
//! gix-config's ready-made loaders also ask the `git` binary where its
//! installation configuration lives (`git config -l --show-origin`), which
//! costs a process per refstore invocation (about 3 ms, more than git takes
//! for a whole `rev-parse`) and makes a server depend on an installed git.
//! On Linux that file is the system file git reads anyway, so refstore
//! reads the sources git documents directly: system, global (XDG and
//! `~/.gitconfig`), the repository's `config` and `config.worktree`, and the
//! `GIT_CONFIG_COUNT` overrides.

use gix_config::file::{includes, init, Metadata};
use gix_config::{File, Source};
use std::path::{Path, PathBuf};

type LoadResult = Result<File, String>;

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

/// The system and global files, each read if it exists, with includes.
pub(super) fn globals() -> LoadResult {
    let home = home();
    let metas = [Source::System, Source::Git, Source::User]
        .into_iter()
        .filter_map(|source| {
            let path = source.storage_location(&mut |name| std::env::var_os(name))?;
            path.is_file().then(|| Metadata::from(source).at(path))
        });
    let options = init::Options {
        includes: includes::Options::follow_without_conditional(home.as_deref()),
        ..Default::default()
    };
    File::from_paths_metadata(metas, options)
        .map(Option::unwrap_or_default)
        .map_err(|e| e.to_string())
}

/// Everything a repository at `git_dir` sees, in git's order of precedence
/// (later wins): globals, `config`, `config.worktree` (when
/// `extensions.worktreeConfig` is on), environment overrides.
///
/// A repository without a `config` file is valid, as for git: `HEAD`,
/// `objects/` and `refs/` make one (bare repositories copied without it,
/// or fetched by tools that write none); it has the defaults.
pub(super) fn repository(git_dir: &Path) -> LoadResult {
    let path = git_dir.join("config");
    let mut local = match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            File::new(Metadata::from(Source::Local).at(path))
        }
        _ => File::from_path_no_includes(path, Source::Local).map_err(|e| e.to_string())?,
    };
    let worktree = match local.boolean("extensions.worktreeConfig") {
        Ok(Some(true)) => Some(
            File::from_path_no_includes(git_dir.join("config.worktree"), Source::Worktree)
                .map_err(|e| e.to_string())?,
        ),
        _ => None,
    };
    let home = home();
    let options = init::Options {
        includes: includes::Options::follow(
            gix_config::path::interpolate::Context {
                home_dir: home.as_deref(),
                ..Default::default()
            },
            includes::conditional::Context {
                git_dir: Some(git_dir),
                branch_name: None,
            },
        ),
        ..Default::default()
    };
    let mut file = globals()?;
    file.resolve_includes(options).map_err(|e| e.to_string())?;
    local.resolve_includes(options).map_err(|e| e.to_string())?;
    file.append(local).map_err(|e| e.to_string())?;
    if let Some(mut worktree) = worktree {
        worktree
            .resolve_includes(options)
            .map_err(|e| e.to_string())?;
        file.append(worktree).map_err(|e| e.to_string())?;
    }
    file.append(environment()?).map_err(|e| e.to_string())?;
    Ok(file)
}

/// `GIT_CONFIG_COUNT` / `GIT_CONFIG_KEY_n` / `GIT_CONFIG_VALUE_n`.
pub(super) fn environment() -> LoadResult {
    File::from_environment_overrides().map_err(|e| e.to_string())
}
