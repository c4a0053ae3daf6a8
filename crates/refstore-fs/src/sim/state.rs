//! The simulated disk: inodes, directory entries, and for each of them what
//! is durable next to what is only in the page cache.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Index of an inode in [`State::inodes`].
pub(crate) type Ino = usize;

/// The root directory's inode.
pub(crate) const ROOT: Ino = 0;

#[derive(Debug, Clone)]
pub(crate) enum Node {
    File {
        current: Vec<u8>,
        /// Content as of the last fsync/fdatasync/syncfs of this inode.
        durable: Vec<u8>,
    },
    Dir {
        current: BTreeMap<OsString, Ino>,
        /// Entries as of the last fsync of this directory (or syncfs).
        durable: BTreeMap<OsString, Ino>,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct Inode {
    pub node: Node,
    /// Logical modification time (seconds since the epoch).
    pub mtime: u64,
}

/// The whole simulated filesystem at one instant.
#[derive(Debug, Clone)]
pub(crate) struct State {
    pub inodes: Vec<Inode>,
    pub clock: u64,
}

pub(crate) fn errno(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

pub(crate) const EPERM: i32 = 1;
pub(crate) const ENOENT: i32 = 2;
pub(crate) const EIO: i32 = 5;
pub(crate) const EEXIST: i32 = 17;
pub(crate) const ENOTDIR: i32 = 20;
pub(crate) const EISDIR: i32 = 21;
pub(crate) const EINVAL: i32 = 22;
pub(crate) const ENOSPC: i32 = 28;
pub(crate) const ENOTEMPTY: i32 = 39;

/// Splits a path into normalised components, resolving `.` and `..`
/// lexically (there are no symlinks in the simulation); relative paths are
/// taken from the root.
pub(crate) fn components(path: &Path) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n.to_owned()),
        }
    }
    out
}

impl State {
    pub fn new() -> Self {
        State {
            inodes: vec![Inode {
                node: Node::Dir {
                    current: BTreeMap::new(),
                    durable: BTreeMap::new(),
                },
                mtime: 0,
            }],
            clock: 1_700_000_000,
        }
    }

    pub fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    pub fn entries(&self, dir: Ino) -> io::Result<&BTreeMap<OsString, Ino>> {
        match &self.inodes[dir].node {
            Node::Dir { current, .. } => Ok(current),
            Node::File { .. } => Err(errno(ENOTDIR)),
        }
    }

    pub fn entries_mut(&mut self, dir: Ino) -> io::Result<&mut BTreeMap<OsString, Ino>> {
        match &mut self.inodes[dir].node {
            Node::Dir { current, .. } => Ok(current),
            Node::File { .. } => Err(errno(ENOTDIR)),
        }
    }

    /// The inode at `path`, if any.
    pub fn lookup(&self, path: &Path) -> io::Result<Ino> {
        let mut ino = ROOT;
        for name in components(path) {
            ino = *self.entries(ino)?.get(&name).ok_or_else(|| errno(ENOENT))?;
        }
        Ok(ino)
    }

    /// The parent directory's inode and the final name of `path`.
    pub fn parent(&self, path: &Path) -> io::Result<(Ino, OsString)> {
        let mut parts = components(path);
        let name = parts.pop().ok_or_else(|| errno(EINVAL))?;
        let dir_path: PathBuf = parts.iter().collect();
        let dir = self.lookup(&dir_path)?;
        self.entries(dir)?;
        Ok((dir, name))
    }

    pub fn new_inode(&mut self, node: Node) -> Ino {
        let mtime = self.tick();
        self.inodes.push(Inode { node, mtime });
        self.inodes.len() - 1
    }

    pub fn is_dir(&self, ino: Ino) -> bool {
        matches!(self.inodes[ino].node, Node::Dir { .. })
    }

    /// Makes the content (file) or the entries (directory) of `ino` durable.
    pub fn make_durable(&mut self, ino: Ino) {
        match &mut self.inodes[ino].node {
            Node::File { current, durable } => *durable = current.clone(),
            Node::Dir { current, durable } => *durable = current.clone(),
        }
    }

    /// `syncfs`: everything is durable.
    pub fn make_all_durable(&mut self) {
        for ino in 0..self.inodes.len() {
            self.make_durable(ino);
        }
    }

    /// Every regular file reachable from the root (current view), by path.
    pub fn files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        self.collect(ROOT, PathBuf::from("/"), &mut out);
        out
    }

    fn collect(&self, ino: Ino, path: PathBuf, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        match &self.inodes[ino].node {
            Node::File { current, .. } => {
                out.insert(path, current.clone());
            }
            Node::Dir { current, .. } => {
                for (name, &child) in current {
                    self.collect(child, path.join(name), out);
                }
            }
        }
    }

    /// Every directory reachable from the root (current view).
    pub fn dirs(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![(ROOT, PathBuf::from("/"))];
        while let Some((ino, path)) = stack.pop() {
            if let Node::Dir { current, .. } = &self.inodes[ino].node {
                for (name, &child) in current {
                    stack.push((child, path.join(name)));
                }
                out.push(path);
            }
        }
        out.sort();
        out
    }
}
