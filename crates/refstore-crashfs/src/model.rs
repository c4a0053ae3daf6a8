//! The power-loss model: every inode in memory, with what a crash would keep
//! (durable) next to what only the page cache holds (cached).
//!
//! The model is pessimistic, as POSIX allows a filesystem to be:
//! - a file's data is durable only as of its last `fsync`/`fdatasync`; data
//!   never flushed comes back empty;
//! - a directory's entries are durable only as of its last directory
//!   `fsync`: a create, link, rename or unlink in a directory that was not
//!   flushed afterwards is undone by a crash (a rename between two
//!   directories is split: each side becomes durable with its own directory);
//! - nothing else makes anything durable: no `syncfs`, no `sync` (the kernel
//!   does not forward them to a FUSE daemon), no close, no timer.
//!
//! A second, less pessimistic mode ([`CrashMode::NamesKept`]) keeps every
//! name operation (as a filesystem that journals its metadata in order and
//! committed the journal before the power went) while file data is still
//! only as of its last flush: files come back empty instead of missing.
//!
//! Metadata other than names and data (modes, times) is kept as it is: the
//! model is about losing names and bytes.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::time::SystemTime;

/// An inode number; 1 is the root directory, as FUSE requires.
pub type Ino = u64;

/// The root directory's inode number.
pub const ROOT: Ino = 1;

/// What an inode is, with the part of its state the model tracks twice.
#[derive(Debug, Clone)]
pub enum Content {
    File {
        /// What reads see now.
        data: Vec<u8>,
        /// What a crash leaves.
        durable: Vec<u8>,
    },
    Dir {
        entries: BTreeMap<OsString, Ino>,
        durable: BTreeMap<OsString, Ino>,
    },
    /// A symbolic link's target is written once, with the inode: it is as
    /// durable as the directory entry that names it.
    Symlink { target: Vec<u8> },
}

/// One inode.
#[derive(Debug, Clone)]
pub struct Node {
    pub content: Content,
    /// Permission bits (no file type bits).
    pub perm: u16,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    pub atime: SystemTime,
    pub mtime: SystemTime,
    pub ctime: SystemTime,
}

impl Node {
    fn new(content: Content, perm: u16, uid: u32, gid: u32) -> Node {
        let now = SystemTime::now();
        Node {
            content,
            perm,
            uid,
            gid,
            nlink: 1,
            atime: now,
            mtime: now,
            ctime: now,
        }
    }

    /// The size `stat` reports.
    pub fn size(&self) -> u64 {
        match &self.content {
            Content::File { data, .. } => data.len() as u64,
            Content::Dir { entries, .. } => entries.len() as u64,
            Content::Symlink { target } => target.len() as u64,
        }
    }

    pub fn is_dir(&self) -> bool {
        matches!(self.content, Content::Dir { .. })
    }
}

/// What a crash keeps of the names (file data is always as of its last
/// flush).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CrashMode {
    /// Directory entries as of each directory's last flush.
    #[default]
    Pessimistic,
    /// Every create, link, rename and unlink, flushed or not.
    NamesKept,
}

/// Why an operation failed, as an errno value.
pub type Errno = i32;

/// The whole filesystem.
#[derive(Debug, Clone)]
pub struct Model {
    nodes: BTreeMap<Ino, Node>,
    next_ino: Ino,
}

impl Default for Model {
    fn default() -> Self {
        Model::new()
    }
}

impl Model {
    /// An empty filesystem: a root directory, durable and empty.
    pub fn new() -> Model {
        let root = Node::new(
            Content::Dir {
                entries: BTreeMap::new(),
                durable: BTreeMap::new(),
            },
            0o755,
            0,
            0,
        );
        let mut nodes = BTreeMap::new();
        nodes.insert(ROOT, Node { nlink: 2, ..root });
        Model {
            nodes,
            next_ino: ROOT + 1,
        }
    }

    pub fn node(&self, ino: Ino) -> Result<&Node, Errno> {
        self.nodes.get(&ino).ok_or(libc::ENOENT)
    }

    pub fn node_mut(&mut self, ino: Ino) -> Result<&mut Node, Errno> {
        self.nodes.get_mut(&ino).ok_or(libc::ENOENT)
    }

    fn entries(&self, dir: Ino) -> Result<&BTreeMap<OsString, Ino>, Errno> {
        match &self.node(dir)?.content {
            Content::Dir { entries, .. } => Ok(entries),
            _ => Err(libc::ENOTDIR),
        }
    }

    fn entries_mut(&mut self, dir: Ino) -> Result<&mut BTreeMap<OsString, Ino>, Errno> {
        let node = self.node_mut(dir)?;
        let now = SystemTime::now();
        node.mtime = now;
        node.ctime = now;
        match &mut node.content {
            Content::Dir { entries, .. } => Ok(entries),
            _ => Err(libc::ENOTDIR),
        }
    }

    /// The inode `name` names in `dir` now.
    pub fn lookup(&self, dir: Ino, name: &OsStr) -> Result<Ino, Errno> {
        self.entries(dir)?.get(name).copied().ok_or(libc::ENOENT)
    }

    /// The entries of `dir` now, in name order.
    pub fn list(&self, dir: Ino) -> Result<Vec<(OsString, Ino)>, Errno> {
        Ok(self
            .entries(dir)?
            .iter()
            .map(|(n, i)| (n.clone(), *i))
            .collect())
    }

    fn add(
        &mut self,
        dir: Ino,
        name: &OsStr,
        content: Content,
        perm: u16,
        uid: u32,
        gid: u32,
    ) -> Result<Ino, Errno> {
        if self.entries(dir)?.contains_key(name) {
            return Err(libc::EEXIST);
        }
        let is_dir = matches!(content, Content::Dir { .. });
        let ino = self.next_ino;
        self.next_ino += 1;
        let mut node = Node::new(content, perm, uid, gid);
        if is_dir {
            node.nlink = 2;
            self.node_mut(dir)?.nlink += 1;
        }
        self.nodes.insert(ino, node);
        self.entries_mut(dir)?.insert(name.to_owned(), ino);
        Ok(ino)
    }

    /// A new empty file; its name and data are cached only.
    pub fn create_file(
        &mut self,
        dir: Ino,
        name: &OsStr,
        perm: u16,
        uid: u32,
        gid: u32,
    ) -> Result<Ino, Errno> {
        let content = Content::File {
            data: Vec::new(),
            durable: Vec::new(),
        };
        self.add(dir, name, content, perm, uid, gid)
    }

    pub fn mkdir(
        &mut self,
        dir: Ino,
        name: &OsStr,
        perm: u16,
        uid: u32,
        gid: u32,
    ) -> Result<Ino, Errno> {
        let content = Content::Dir {
            entries: BTreeMap::new(),
            durable: BTreeMap::new(),
        };
        self.add(dir, name, content, perm, uid, gid)
    }

    pub fn symlink(
        &mut self,
        dir: Ino,
        name: &OsStr,
        target: &[u8],
        uid: u32,
        gid: u32,
    ) -> Result<Ino, Errno> {
        let content = Content::Symlink {
            target: target.to_vec(),
        };
        self.add(dir, name, content, 0o777, uid, gid)
    }

    /// A second name for a file.
    pub fn link(&mut self, ino: Ino, dir: Ino, name: &OsStr) -> Result<(), Errno> {
        if self.node(ino)?.is_dir() {
            return Err(libc::EPERM);
        }
        if self.entries(dir)?.contains_key(name) {
            return Err(libc::EEXIST);
        }
        self.entries_mut(dir)?.insert(name.to_owned(), ino);
        let node = self.node_mut(ino)?;
        node.nlink += 1;
        node.ctime = SystemTime::now();
        Ok(())
    }

    /// Removes a name that is not a directory. The inode stays readable
    /// through handles still open on it.
    pub fn unlink(&mut self, dir: Ino, name: &OsStr) -> Result<(), Errno> {
        let ino = self.lookup(dir, name)?;
        if self.node(ino)?.is_dir() {
            return Err(libc::EISDIR);
        }
        self.entries_mut(dir)?.remove(name);
        let node = self.node_mut(ino)?;
        node.nlink = node.nlink.saturating_sub(1);
        node.ctime = SystemTime::now();
        Ok(())
    }

    pub fn rmdir(&mut self, dir: Ino, name: &OsStr) -> Result<(), Errno> {
        let ino = self.lookup(dir, name)?;
        if !self.entries(ino)?.is_empty() {
            return Err(libc::ENOTEMPTY);
        }
        self.entries_mut(dir)?.remove(name);
        self.node_mut(ino)?.nlink = 0;
        let parent = self.node_mut(dir)?;
        parent.nlink = parent.nlink.saturating_sub(1);
        Ok(())
    }

    /// `renameat2` without flags (`noreplace`: `RENAME_NOREPLACE`).
    pub fn rename(
        &mut self,
        dir: Ino,
        name: &OsStr,
        newdir: Ino,
        newname: &OsStr,
        noreplace: bool,
    ) -> Result<(), Errno> {
        let ino = self.lookup(dir, name)?;
        let moving_dir = self.node(ino)?.is_dir();
        if moving_dir && self.is_ancestor(ino, newdir)? {
            return Err(libc::EINVAL);
        }
        if let Ok(old) = self.lookup(newdir, newname) {
            if old == ino {
                return Ok(());
            }
            if noreplace {
                return Err(libc::EEXIST);
            }
            match (moving_dir, self.node(old)?.is_dir()) {
                (false, true) => return Err(libc::EISDIR),
                (true, false) => return Err(libc::ENOTDIR),
                (true, true) => self.rmdir(newdir, newname)?,
                (false, false) => self.unlink(newdir, newname)?,
            }
        }
        self.entries_mut(dir)?.remove(name);
        self.entries_mut(newdir)?.insert(newname.to_owned(), ino);
        if moving_dir && dir != newdir {
            self.node_mut(dir)?.nlink -= 1;
            self.node_mut(newdir)?.nlink += 1;
        }
        self.node_mut(ino)?.ctime = SystemTime::now();
        Ok(())
    }

    /// Whether `ancestor` is `dir` or one of the directories above it now.
    fn is_ancestor(&self, ancestor: Ino, dir: Ino) -> Result<bool, Errno> {
        // Directories have one name, so a walk from the root finds the path.
        fn walk(m: &Model, from: Ino, target: Ino, path: &mut Vec<Ino>) -> bool {
            path.push(from);
            if from == target {
                return true;
            }
            if let Ok(entries) = m.entries(from) {
                for &child in entries.values() {
                    if m.node(child).is_ok_and(Node::is_dir) && walk(m, child, target, path) {
                        return true;
                    }
                }
            }
            path.pop();
            false
        }
        let mut path = Vec::new();
        walk(self, ROOT, dir, &mut path);
        Ok(path.contains(&ancestor))
    }

    pub fn read(&self, ino: Ino, offset: u64, size: u32) -> Result<Vec<u8>, Errno> {
        match &self.node(ino)?.content {
            Content::File { data, .. } => {
                let start = (offset as usize).min(data.len());
                let end = start.saturating_add(size as usize).min(data.len());
                Ok(data[start..end].to_vec())
            }
            Content::Dir { .. } => Err(libc::EISDIR),
            Content::Symlink { .. } => Err(libc::EINVAL),
        }
    }

    pub fn write(&mut self, ino: Ino, offset: u64, bytes: &[u8]) -> Result<(), Errno> {
        let node = self.node_mut(ino)?;
        let now = SystemTime::now();
        node.mtime = now;
        node.ctime = now;
        match &mut node.content {
            Content::File { data, .. } => {
                let start = offset as usize;
                let end = start + bytes.len();
                if data.len() < end {
                    data.resize(end, 0);
                }
                data[start..end].copy_from_slice(bytes);
                Ok(())
            }
            Content::Dir { .. } => Err(libc::EISDIR),
            Content::Symlink { .. } => Err(libc::EINVAL),
        }
    }

    pub fn truncate(&mut self, ino: Ino, size: u64) -> Result<(), Errno> {
        let node = self.node_mut(ino)?;
        let now = SystemTime::now();
        node.mtime = now;
        node.ctime = now;
        match &mut node.content {
            Content::File { data, .. } => {
                data.resize(size as usize, 0);
                Ok(())
            }
            Content::Dir { .. } => Err(libc::EISDIR),
            Content::Symlink { .. } => Err(libc::EINVAL),
        }
    }

    pub fn readlink(&self, ino: Ino) -> Result<Vec<u8>, Errno> {
        match &self.node(ino)?.content {
            Content::Symlink { target } => Ok(target.clone()),
            _ => Err(libc::EINVAL),
        }
    }

    /// `fsync`/`fdatasync` of a file: its data is durable. On a directory,
    /// its entries are.
    pub fn flush(&mut self, ino: Ino) -> Result<(), Errno> {
        match &mut self.node_mut(ino)?.content {
            Content::File { data, durable } => durable.clone_from(data),
            Content::Dir { entries, durable } => durable.clone_from(entries),
            Content::Symlink { .. } => {}
        }
        Ok(())
    }

    /// Makes everything durable, as a clean shutdown would: for setting up
    /// the state a test starts from.
    pub fn checkpoint(&mut self) {
        for node in self.nodes.values_mut() {
            match &mut node.content {
                Content::File { data, durable } => durable.clone_from(data),
                Content::Dir { entries, durable } => durable.clone_from(entries),
                Content::Symlink { .. } => {}
            }
        }
    }

    /// The filesystem a power loss now leaves: the durable names (with
    /// [`CrashMode::NamesKept`]: all names) from the root down, each file
    /// with its durable data. Inodes that no kept name reaches are gone.
    pub fn after_crash(&self, mode: CrashMode) -> Model {
        let mut nodes = BTreeMap::new();
        let mut links: BTreeMap<Ino, u32> = BTreeMap::new();
        let mut stack = vec![ROOT];
        while let Some(ino) = stack.pop() {
            if nodes.contains_key(&ino) {
                continue;
            }
            let Some(old) = self.nodes.get(&ino) else {
                continue;
            };
            let content = match &old.content {
                Content::File { durable, .. } => Content::File {
                    data: durable.clone(),
                    durable: durable.clone(),
                },
                Content::Dir { entries, durable } => {
                    let durable = match mode {
                        CrashMode::Pessimistic => durable,
                        CrashMode::NamesKept => entries,
                    };
                    // A durable name of an inode that no longer exists cannot
                    // happen: inodes are never freed while the daemon runs.
                    let kept: BTreeMap<OsString, Ino> = durable
                        .iter()
                        .filter(|(_, i)| self.nodes.contains_key(i))
                        .map(|(n, i)| (n.clone(), *i))
                        .collect();
                    for &child in kept.values() {
                        *links.entry(child).or_default() += 1;
                        stack.push(child);
                    }
                    Content::Dir {
                        entries: kept.clone(),
                        durable: kept,
                    }
                }
                Content::Symlink { target } => Content::Symlink {
                    target: target.clone(),
                },
            };
            nodes.insert(
                ino,
                Node {
                    content,
                    ..old.clone()
                },
            );
        }
        // A directory reached by two durable names (a rename flushed on
        // the new side only) is kept under both; that is a state POSIX
        // allows after a crash, and readers only list names.
        let subdirs: BTreeMap<Ino, u32> = nodes
            .iter()
            .map(|(&ino, node)| {
                let n = match &node.content {
                    Content::Dir { entries, .. } => entries
                        .values()
                        .filter(|i| nodes.get(i).is_some_and(Node::is_dir))
                        .count() as u32,
                    _ => 0,
                };
                (ino, n)
            })
            .collect();
        for (ino, node) in nodes.iter_mut() {
            node.nlink = if node.is_dir() {
                2 + subdirs[ino]
            } else {
                links.get(ino).copied().unwrap_or(1)
            };
        }
        Model {
            nodes,
            next_ino: self.next_ino,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> &OsStr {
        OsStr::new(s)
    }

    #[test]
    fn unflushed_data_and_names_are_lost() {
        let mut m = Model::new();
        let d = m.mkdir(ROOT, name("d"), 0o755, 0, 0).unwrap();
        let f = m.create_file(d, name("f"), 0o644, 0, 0).unwrap();
        m.write(f, 0, b"hello").unwrap();
        // The name of d is cached only: everything under it goes.
        let c = m.after_crash(CrashMode::Pessimistic);
        assert!(c.list(ROOT).unwrap().is_empty());
        // Names durable, data not: the file comes back empty.
        m.flush(ROOT).unwrap();
        m.flush(d).unwrap();
        let c = m.after_crash(CrashMode::Pessimistic);
        let f2 = c
            .lookup(c.lookup(ROOT, name("d")).unwrap(), name("f"))
            .unwrap();
        assert_eq!(c.read(f2, 0, 100).unwrap(), b"");
        // Data flushed too: it survives.
        m.flush(f).unwrap();
        let c = m.after_crash(CrashMode::Pessimistic);
        assert_eq!(c.read(f2, 0, 100).unwrap(), b"hello");
    }

    #[test]
    fn names_kept_files_come_back_empty() {
        let mut m = Model::new();
        let d = m.mkdir(ROOT, name("d"), 0o755, 0, 0).unwrap();
        let f = m.create_file(d, name("f.lock"), 0o644, 0, 0).unwrap();
        m.write(f, 0, b"hello").unwrap();
        m.rename(d, name("f.lock"), d, name("f"), false).unwrap();
        let c = m.after_crash(CrashMode::NamesKept);
        let f2 = c
            .lookup(c.lookup(ROOT, name("d")).unwrap(), name("f"))
            .unwrap();
        assert_eq!(c.read(f2, 0, 100).unwrap(), b"");
        assert!(c.lookup(d, name("f.lock")).is_err());
    }

    #[test]
    fn a_rename_is_durable_only_with_its_directory() {
        let mut m = Model::new();
        let f = m.create_file(ROOT, name("a.lock"), 0o644, 0, 0).unwrap();
        m.write(f, 0, b"new").unwrap();
        m.flush(f).unwrap();
        m.flush(ROOT).unwrap();
        m.rename(ROOT, name("a.lock"), ROOT, name("a"), false)
            .unwrap();
        let c = m.after_crash(CrashMode::Pessimistic);
        assert!(c.lookup(ROOT, name("a")).is_err());
        assert!(c.lookup(ROOT, name("a.lock")).is_ok());
        m.flush(ROOT).unwrap();
        let c = m.after_crash(CrashMode::Pessimistic);
        assert_eq!(
            c.read(c.lookup(ROOT, name("a")).unwrap(), 0, 9).unwrap(),
            b"new"
        );
        assert!(c.lookup(ROOT, name("a.lock")).is_err());
    }

    #[test]
    fn an_unflushed_unlink_comes_back() {
        let mut m = Model::new();
        let f = m.create_file(ROOT, name("f"), 0o644, 0, 0).unwrap();
        m.write(f, 0, b"x").unwrap();
        m.checkpoint();
        m.unlink(ROOT, name("f")).unwrap();
        let c = m.after_crash(CrashMode::Pessimistic);
        assert_eq!(
            c.read(c.lookup(ROOT, name("f")).unwrap(), 0, 9).unwrap(),
            b"x"
        );
    }

    #[test]
    fn rename_rules() {
        let mut m = Model::new();
        let a = m.mkdir(ROOT, name("a"), 0o755, 0, 0).unwrap();
        m.mkdir(a, name("b"), 0o755, 0, 0).unwrap();
        m.create_file(ROOT, name("f"), 0o644, 0, 0).unwrap();
        m.create_file(ROOT, name("g"), 0o644, 0, 0).unwrap();
        assert_eq!(
            m.rename(ROOT, name("a"), a, name("x"), false),
            Err(libc::EINVAL)
        );
        assert_eq!(
            m.rename(ROOT, name("f"), ROOT, name("g"), true),
            Err(libc::EEXIST)
        );
        assert_eq!(
            m.rename(ROOT, name("f"), ROOT, name("a"), false),
            Err(libc::EISDIR)
        );
        assert_eq!(m.rmdir(ROOT, name("a")), Err(libc::ENOTEMPTY));
        m.rename(ROOT, name("f"), ROOT, name("g"), false).unwrap();
        assert_eq!(m.list(ROOT).unwrap().len(), 2);
    }
}
