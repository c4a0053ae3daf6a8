//! The repository a client's path names on a server: resolve, then decide.
//!
//! git's servers accept a repository's name with or without its `.git`
//! and for a work tree as well as for its git directory: for a path `p`
//! they open the first of `p/.git`, `p`, `p.git/.git` and `p.git` that is
//! a git directory (or a `.git` file naming one). A server that confines
//! and authorizes the path the client typed, and then opens one of those
//! variants, checks one directory and opens another: through a symbolic
//! link `p.git` the client reaches whatever it points at.
//!
//! [`repository`] therefore does it in one go: it finds the directory git
//! would open, resolves every symbolic link on the way to it (and in a
//! `.git` file or a `commondir` file), refuses it unless it lies below the
//! root, and names it by that resolved path. The caller decides access by
//! that name and opens exactly that location, so the rule applied is
//! always the rule of the directory opened, whatever the client typed.

use super::error::ConfineError;
use super::path::{plain_names, resolve};
use refstore_fs::discover::{self, Location};
use refstore_fs::{FileKind, Vfs};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A served repository, found and confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// Its name for access rules, metrics, replication and a cluster: the
    /// resolved git directory's path below the resolved root,
    /// `/`-separated, without a final `/.git` (a work tree's repository is
    /// named by its work tree), never empty.
    pub name: String,
    /// Where it is: the git directory and its common directory, both free
    /// of symbolic links and below the root; no work tree (a server never
    /// touches one).
    pub location: Location,
    /// When the request found it: what a shared source confirmed current
    /// since then (a cluster node's copy of the refs, confirmed by a read
    /// through etcd's leader) is fresh enough to answer the request.
    pub found: Instant,
}

/// Finds the repository that `request` (a `/`-separated path below `root`,
/// already percent-decoded; empty names, as from `//` or a trailing `/`,
/// are ignored) names, as git's `upload-pack` or `http-backend` would,
/// and confines it to `root`.
///
/// Errors: [`ConfineError::Malformed`] for `.`, `..`, NUL or an absolute
/// path; [`ConfineError::NotARepository`] if no variant is a repository;
/// [`ConfineError::Escapes`] if the one git would open (or its common
/// directory) lies outside the root, or is the root itself. A variant that
/// loops through links is passed over, as the kernel's `ELOOP` makes git
/// pass over it.
pub fn repository(vfs: &dyn Vfs, root: &Path, request: &str) -> Result<Served, ConfineError> {
    let names = plain_names(request)?;
    if names.is_empty() {
        return Err(ConfineError::NotARepository);
    }
    let root = resolve(vfs, root)?;
    let mut base = root.clone();
    base.extend(&names);
    let git_dir = candidates(&base)
        .iter()
        .find_map(|candidate| git_dir_at(vfs, candidate))
        .flatten()
        .ok_or(ConfineError::NotARepository)?;
    let name = name_below(&root, &git_dir)?;
    let common_dir =
        discover::common_dir_of_git_directory(vfs, &git_dir).ok_or(ConfineError::NotARepository)?;
    let common_dir = resolve(vfs, &common_dir)?;
    name_below(&root, &common_dir)?;
    let found = Instant::now();
    Ok(Served {
        found,
        name,
        location: Location {
            git_dir,
            common_dir,
            work_tree: None,
        },
    })
}

/// git's variants of a path, in the order it tries them.
fn candidates(base: &Path) -> [PathBuf; 4] {
    let mut with_suffix = base.as_os_str().to_owned();
    with_suffix.push(".git");
    let with_suffix = PathBuf::from(with_suffix);
    [
        base.join(".git"),
        base.to_owned(),
        with_suffix.join(".git"),
        with_suffix,
    ]
}

/// What git makes of `candidate`: `None` to try the next one (nothing
/// there, a link that loops, a directory that is not a repository);
/// `Some(None)` to give up (a file that is not a valid `.git` file, as git
/// stops at any file); `Some(Some(dir))` for the resolved git directory it
/// is or names.
fn git_dir_at(vfs: &dyn Vfs, candidate: &Path) -> Option<Option<PathBuf>> {
    let resolved = resolve(vfs, candidate).ok()?;
    match vfs.stat(&resolved).ok()?.kind {
        FileKind::Dir => discover::is_git_directory(vfs, &resolved).then_some(Some(resolved)),
        FileKind::File => {
            // A `.git` file's path is relative to the directory it was
            // reached from, as git reads it.
            let named = discover::git_file_target(vfs, &resolved)
                .ok()
                .and_then(|target| resolve(vfs, &candidate.parent()?.join(target)).ok())
                .filter(|dir| discover::is_git_directory(vfs, dir));
            Some(named)
        }
        FileKind::Symlink | FileKind::Other => None,
    }
}

/// The name of `dir` (resolved) below `root` (resolved); refused unless
/// strictly below it.
fn name_below(root: &Path, dir: &Path) -> Result<String, ConfineError> {
    let below = dir.strip_prefix(root).map_err(|_| ConfineError::Escapes)?;
    let below = match below.file_name() {
        Some(last) if last == ".git" => below.parent().unwrap_or(Path::new("")),
        _ => below,
    };
    let name = below.to_str().ok_or(ConfineError::Malformed)?;
    if name.is_empty() {
        return Err(ConfineError::Escapes);
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests;
