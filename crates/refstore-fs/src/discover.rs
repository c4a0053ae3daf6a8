//! Finding the repository a command works on, as git does.
//!
//! With `--git-dir` or `GIT_DIR` the repository is where they say. Otherwise
//! the search starts in the current directory and goes up, looking in each
//! directory for a `.git` directory, a `.git` file (`gitdir: <path>`, used by
//! worktrees and submodules), or the directory itself being a bare
//! repository; it does not go up into a directory listed in
//! `GIT_CEILING_DIRECTORIES`.
//!
//! A git directory is recognised by git's own test: `HEAD` names a ref or an
//! object id, and `objects/` and `refs/` exist (in the common directory, for
//! worktrees).

use crate::vfs::{FileKind, Vfs};
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Where a repository is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The git directory (`.git`, or the bare repository itself).
    pub git_dir: PathBuf,
    /// The directory shared by all worktrees (`commondir`); usually `git_dir`.
    pub common_dir: PathBuf,
    /// The work tree's top directory, if the repository has one.
    pub work_tree: Option<PathBuf>,
}

impl Location {
    /// True when there is no work tree.
    pub fn is_bare(&self) -> bool {
        self.work_tree.is_none()
    }
}

/// How to look: what the environment and global options say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `--git-dir` or `GIT_DIR`.
    pub git_dir: Option<PathBuf>,
    /// `GIT_WORK_TREE`.
    pub work_tree: Option<PathBuf>,
    /// `GIT_CEILING_DIRECTORIES`.
    pub ceiling_dirs: Vec<PathBuf>,
}

impl Options {
    /// Options from the environment (`GIT_DIR`, `GIT_WORK_TREE`,
    /// `GIT_CEILING_DIRECTORIES`).
    pub fn from_env() -> Self {
        let var = |k| std::env::var_os(k).filter(|v| !v.is_empty());
        Options {
            git_dir: var("GIT_DIR").map(PathBuf::from),
            work_tree: var("GIT_WORK_TREE").map(PathBuf::from),
            ceiling_dirs: var("GIT_CEILING_DIRECTORIES")
                .map(|v| {
                    std::env::split_paths(&v)
                        .filter(|p| p.is_absolute())
                        .map(|p| normalize(&p))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// Why no repository was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscoverError {
    /// No repository in the directory or any parent.
    NotFound,
    /// `--git-dir`/`GIT_DIR` or a `.git` file points at something that is
    /// not a repository.
    NotARepository(PathBuf),
    /// A `.git` file that does not say `gitdir: <path>`.
    InvalidGitFile(PathBuf),
}

impl fmt::Display for DiscoverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiscoverError::NotFound => {
                f.write_str("not a git repository (or any of the parent directories): .git")
            }
            DiscoverError::NotARepository(p) => {
                write!(f, "not a git repository: '{}'", p.display())
            }
            DiscoverError::InvalidGitFile(p) => {
                write!(f, "invalid gitfile format: {}", p.display())
            }
        }
    }
}

impl std::error::Error for DiscoverError {}

/// Makes `path` absolute against `cwd` and removes `.` and `..` lexically.
pub fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    normalize(&cwd.join(path))
}

fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn is_dir(vfs: &dyn Vfs, path: &Path) -> bool {
    vfs.stat(path).is_ok_and(|m| m.kind == FileKind::Dir)
}

/// The common directory of a git directory (its `commondir` file, if any).
fn common_dir(vfs: &dyn Vfs, git_dir: &Path) -> PathBuf {
    match vfs.read(&git_dir.join("commondir")) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            normalize(&git_dir.join(text.trim_end_matches(['\n', '\r'])))
        }
        Err(_) => git_dir.to_owned(),
    }
}

/// git's test for a git directory: a valid `HEAD`, `objects/` and `refs/`.
pub fn is_git_directory(vfs: &dyn Vfs, dir: &Path) -> bool {
    common_dir_of_git_directory(vfs, dir).is_some()
}

/// The common directory of `dir` if `dir` is a git directory
/// ([`is_git_directory`]), found once for both answers.
pub fn common_dir_of_git_directory(vfs: &dyn Vfs, dir: &Path) -> Option<PathBuf> {
    let common = common_dir(vfs, dir);
    if !is_dir(vfs, &common.join("objects")) || !is_dir(vfs, &common.join("refs")) {
        return None;
    }
    let head = dir.join("HEAD");
    let valid = match vfs.stat(&head) {
        Ok(m) if m.kind == FileKind::Symlink => {
            vfs.read_link(&head).is_ok_and(|t| t.starts_with("refs/"))
        }
        Ok(m) if m.kind == FileKind::File => vfs.read(&head).is_ok_and(|c| valid_head(&c)),
        _ => false,
    };
    valid.then_some(common)
}

fn valid_head(content: &[u8]) -> bool {
    let line = content.strip_suffix(b"\n").unwrap_or(content);
    if let Some(target) = line.strip_prefix(b"ref:") {
        return target.trim_ascii_start().starts_with(b"refs/");
    }
    matches!(line.len(), 40 | 64) && line.iter().all(u8::is_ascii_hexdigit)
}

/// Reads a `.git` file: `gitdir: <path>`, relative to the file's directory.
fn read_git_file(vfs: &dyn Vfs, file: &Path) -> Result<PathBuf, DiscoverError> {
    let target = git_file_target(vfs, file)?;
    Ok(absolute(file.parent().unwrap_or(Path::new("/")), &target))
}

/// The path a `.git` file names, as written (relative to the file's
/// directory unless absolute).
pub fn git_file_target(vfs: &dyn Vfs, file: &Path) -> Result<PathBuf, DiscoverError> {
    let bytes = vfs
        .read(file)
        .map_err(|_| DiscoverError::InvalidGitFile(file.to_owned()))?;
    let text = String::from_utf8_lossy(&bytes);
    let target = text
        .trim_end_matches(['\n', '\r'])
        .strip_prefix("gitdir: ")
        .ok_or_else(|| DiscoverError::InvalidGitFile(file.to_owned()))?;
    Ok(PathBuf::from(target))
}

/// Finds the repository for a command run in `cwd` (absolute).
pub fn discover(vfs: &dyn Vfs, cwd: &Path, options: &Options) -> Result<Location, DiscoverError> {
    if let Some(git_dir) = &options.git_dir {
        let git_dir = absolute(cwd, git_dir);
        let git_dir = if vfs.stat(&git_dir).is_ok_and(|m| m.kind == FileKind::File) {
            read_git_file(vfs, &git_dir)?
        } else {
            git_dir
        };
        let Some(common_dir) = common_dir_of_git_directory(vfs, &git_dir) else {
            return Err(DiscoverError::NotARepository(git_dir));
        };
        return Ok(Location {
            common_dir,
            work_tree: options.work_tree.as_ref().map(|w| absolute(cwd, w)),
            git_dir,
        });
    }
    let mut dir = normalize(cwd);
    loop {
        let dot_git = dir.join(".git");
        let found = match vfs.stat(&dot_git) {
            Ok(m) if m.kind == FileKind::Dir => {
                common_dir_of_git_directory(vfs, &dot_git).map(|common| (dot_git, common))
            }
            Ok(m) if m.kind == FileKind::File => {
                let target = read_git_file(vfs, &dot_git)?;
                let Some(common) = common_dir_of_git_directory(vfs, &target) else {
                    return Err(DiscoverError::NotARepository(target));
                };
                Some((target, common))
            }
            _ => None,
        };
        if let Some((git_dir, common_dir)) = found {
            let work_tree = options
                .work_tree
                .as_ref()
                .map_or_else(|| dir.clone(), |w| absolute(cwd, w));
            return Ok(Location {
                common_dir,
                git_dir,
                work_tree: Some(work_tree),
            });
        }
        if let Some(common_dir) = common_dir_of_git_directory(vfs, &dir) {
            return Ok(Location {
                common_dir,
                work_tree: options.work_tree.as_ref().map(|w| absolute(cwd, w)),
                git_dir: dir,
            });
        }
        match dir.parent() {
            Some(parent) if !options.ceiling_dirs.iter().any(|c| c == parent) => {
                dir = parent.to_owned();
            }
            _ => return Err(DiscoverError::NotFound),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimFs;

    fn repo(sim: &SimFs, git_dir: &str) {
        for d in ["objects", "refs/heads"] {
            sim.create_dir_all(&Path::new(git_dir).join(d)).unwrap();
        }
        sim.create_exclusive(&Path::new(git_dir).join("HEAD"))
            .unwrap()
            .write_all(b"ref: refs/heads/main\n")
            .unwrap();
    }

    #[test]
    fn finds_work_trees_bare_repositories_and_git_files() {
        let sim = SimFs::new();
        repo(&sim, "/w/.git");
        sim.create_dir_all(Path::new("/w/a/b")).unwrap();
        let found = discover(&sim, Path::new("/w/a/b"), &Options::default()).unwrap();
        assert_eq!(found.git_dir, Path::new("/w/.git"));
        assert_eq!(found.work_tree.as_deref(), Some(Path::new("/w")));

        repo(&sim, "/srv/bare.git");
        let found = discover(
            &sim,
            Path::new("/srv/bare.git/refs/heads"),
            &Options::default(),
        )
        .unwrap();
        assert_eq!(found.git_dir, Path::new("/srv/bare.git"));
        assert!(found.is_bare());

        sim.create_dir_all(Path::new("/sub")).unwrap();
        sim.create_exclusive(Path::new("/sub/.git"))
            .unwrap()
            .write_all(b"gitdir: ../w/.git\n")
            .unwrap();
        let found = discover(&sim, Path::new("/sub"), &Options::default()).unwrap();
        assert_eq!(found.git_dir, Path::new("/w/.git"));
        assert_eq!(found.work_tree.as_deref(), Some(Path::new("/sub")));
    }

    #[test]
    fn git_dir_option_ceilings_and_failures() {
        let sim = SimFs::new();
        repo(&sim, "/w/.git");
        sim.create_dir_all(Path::new("/w/x/y")).unwrap();
        let opts = Options {
            git_dir: Some("../.git".into()),
            ..Options::default()
        };
        assert_eq!(
            discover(&sim, Path::new("/w/x"), &opts).unwrap().git_dir,
            Path::new("/w/.git")
        );
        let opts = Options {
            git_dir: Some("/w/x".into()),
            ..Options::default()
        };
        assert_eq!(
            discover(&sim, Path::new("/"), &opts)
                .unwrap_err()
                .to_string(),
            "not a git repository: '/w/x'"
        );
        let opts = Options {
            ceiling_dirs: vec!["/w".into()],
            ..Options::default()
        };
        assert_eq!(
            discover(&sim, Path::new("/w/x/y"), &opts).unwrap_err(),
            DiscoverError::NotFound
        );
        assert_eq!(
            DiscoverError::NotFound.to_string(),
            "not a git repository (or any of the parent directories): .git"
        );
        // A directory with a broken HEAD is not a repository.
        repo(&sim, "/bad");
        sim.unlink(Path::new("/bad/HEAD")).unwrap();
        sim.create_exclusive(Path::new("/bad/HEAD"))
            .unwrap()
            .write_all(b"garbage\n")
            .unwrap();
        assert!(!is_git_directory(&sim, Path::new("/bad")));
    }
}
