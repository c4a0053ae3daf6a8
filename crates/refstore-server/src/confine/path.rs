//! Following a path through its symbolic links the way the kernel would,
//! and accepting the result only if it stays below a root.

use super::error::ConfineError;
use refstore_fs::Vfs;
use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// How many symbolic links one resolution follows before giving up, as
/// Linux does (ELOOP).
const MAX_LINKS: usize = 40;

/// Resolves `path` (absolute) through every symbolic link, like
/// `realpath(3)`, except that components that do not exist are kept as
/// they are.
pub fn resolve(vfs: &dyn Vfs, path: &Path) -> Result<PathBuf, ConfineError> {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_front(&mut pending, path);
    let mut resolved = PathBuf::from("/");
    let mut links = 0;
    while let Some(part) = pending.pop_front() {
        match part.to_str() {
            Some("/") => resolved = PathBuf::from("/"),
            Some("..") => {
                resolved.pop();
            }
            Some(".") => {}
            _ => {
                let candidate = resolved.join(&part);
                match vfs.read_link(&candidate) {
                    Ok(target) => {
                        links += 1;
                        if links > MAX_LINKS {
                            return Err(ConfineError::TooManyLinks);
                        }
                        push_front(&mut pending, &target);
                    }
                    Err(_) => resolved = candidate,
                }
            }
        }
    }
    Ok(resolved)
}

/// Puts the components of `path` before the pending ones; an absolute
/// path restarts from the root.
fn push_front(pending: &mut VecDeque<OsString>, path: &Path) {
    for component in path.components().rev() {
        let part = match component {
            Component::RootDir => OsString::from("/"),
            Component::ParentDir => OsString::from(".."),
            Component::CurDir => continue,
            Component::Normal(name) => name.to_owned(),
            Component::Prefix(_) => continue,
        };
        pending.push_front(part);
    }
}

/// The names of a relative `/`-separated path, empty ones (`//`, a
/// trailing `/`) left out; refused if it is absolute or holds `.`, `..`
/// or a NUL.
pub(super) fn plain_names(relative: &str) -> Result<Vec<&str>, ConfineError> {
    let names: Vec<&str> = relative.split('/').filter(|n| !n.is_empty()).collect();
    if relative.starts_with('/')
        || relative.contains('\0')
        || names.iter().any(|n| *n == ".." || *n == ".")
    {
        return Err(ConfineError::Malformed);
    }
    Ok(names)
}

/// The location of `relative` below `root`, with symbolic links followed,
/// if it stays inside `root`. `relative` must be made of plain names only.
pub fn confine(vfs: &dyn Vfs, root: &Path, relative: &str) -> Result<PathBuf, ConfineError> {
    let names = plain_names(relative)?;
    let root = resolve(vfs, root)?;
    let mut path = root.clone();
    path.extend(names);
    let resolved = resolve(vfs, &path)?;
    if resolved.starts_with(&root) {
        Ok(resolved)
    } else {
        Err(ConfineError::Escapes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use refstore_fs::real::RealFs;

    #[test]
    fn links_inside_the_root_are_followed_and_links_out_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("team/repo.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("secret.git")).unwrap();
        std::os::unix::fs::symlink("team/repo.git", root.join("alias.git")).unwrap();
        std::os::unix::fs::symlink("../secret.git", root.join("out.git")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.git"), root.join("abs.git")).unwrap();
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        let vfs = RealFs::new();
        let real_root = std::fs::canonicalize(&root).unwrap();

        assert_eq!(
            confine(&vfs, &root, "team/repo.git"),
            Ok(real_root.join("team/repo.git"))
        );
        assert_eq!(
            confine(&vfs, &root, "alias.git/"),
            Ok(real_root.join("team/repo.git"))
        );
        assert_eq!(
            confine(&vfs, &root, "missing.git"),
            Ok(real_root.join("missing.git"))
        );
        assert_eq!(confine(&vfs, &root, "out.git"), Err(ConfineError::Escapes));
        assert_eq!(confine(&vfs, &root, "abs.git"), Err(ConfineError::Escapes));
        assert_eq!(
            confine(&vfs, &root, "loop"),
            Err(ConfineError::TooManyLinks)
        );
        for bad in [
            "../secret.git",
            "team/../../secret.git",
            "/etc",
            "./x",
            "a\0b",
        ] {
            assert_eq!(
                confine(&vfs, &root, bad),
                Err(ConfineError::Malformed),
                "{bad:?}"
            );
        }
    }
}
