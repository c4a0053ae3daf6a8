//! Object quarantine: the objects of a push are written to a directory of
//! their own inside `objects/` (`tmp_objdir-incoming-XXXXXX`, git's name,
//! which git's and refstore's housekeeping remove when stale) and join the
//! repository only once the push is accepted.
//!
//! While quarantined they are readable through [`Quarantine::odb`], a
//! database whose `info/alternates` names the repository's objects, so
//! connectivity checks and hooks see old and new objects together; the
//! repository itself does not see them. [`Quarantine::migrate`] moves
//! them in durably: the quarantine's files are data-flushed as they are
//! written, and receive their names in the repository with `link(2)` (an
//! existing object or pack of the same name is kept), packs before their
//! indexes, each group of names made durable by one directory flush point.
//! A quarantine dropped before migration (a refused push) is removed with
//! everything in it; one left by a crash holds nothing the repository
//! refers to.

use crate::{LooseWriter, Odb, OdbError, PackOptions, StoredPack};
use refstore_fs::flush::{BatchMechanism, FlushBatch, FlushMethod};
use refstore_fs::{FileKind, Vfs};
use refstore_hash::ObjectFormat;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The prefix of quarantine directories in `objects/`, as git names them.
pub const QUARANTINE_PREFIX: &str = "tmp_objdir-incoming-";

/// A quarantine directory for the objects of one push.
#[derive(Debug)]
pub struct Quarantine {
    vfs: Arc<dyn Vfs>,
    objects_dir: PathBuf,
    dir: PathBuf,
    format: ObjectFormat,
    /// Whether it was emptied into the repository (or already removed).
    done: bool,
}

/// What a migration moved into the repository.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Migrated {
    /// Loose objects given a name in the repository (new or freshened).
    pub loose: usize,
    /// Packs installed (or found already there).
    pub packs: usize,
    /// Their names (`pack-<hex>`).
    pub pack_names: Vec<String>,
    /// `.keep` files this migration created, to remove once the refs that
    /// need the packs are written.
    pub keep_files: Vec<PathBuf>,
}

impl Quarantine {
    /// Creates an empty quarantine in `objects_dir` (the repository's
    /// `objects`, an absolute path or one relative to the current
    /// directory).
    pub fn create(
        vfs: Arc<dyn Vfs>,
        objects_dir: &Path,
        format: ObjectFormat,
    ) -> Result<Quarantine, OdbError> {
        let objects_dir = std::path::absolute(objects_dir).map_err(|source| OdbError::Open {
            path: objects_dir.to_owned(),
            source,
        })?;
        let dir = refstore_fs::temp::create_dir(vfs.as_ref(), &objects_dir, QUARANTINE_PREFIX)?;
        let quarantine = Quarantine {
            vfs,
            objects_dir,
            dir,
            format,
            done: false,
        };
        // Readers of the quarantine find the repository's objects through
        // it; nothing needs this file after a crash, so it is not flushed.
        let info = quarantine.dir.join("info");
        quarantine.vfs.mkdir(&info)?;
        let mut alternates = quarantine.vfs.create_exclusive(&info.join("alternates"))?;
        let mut line = quarantine
            .objects_dir
            .as_os_str()
            .as_encoded_bytes()
            .to_vec();
        line.push(b'\n');
        alternates.write_all(&line)?;
        Ok(quarantine)
    }

    /// The quarantine directory (git's `GIT_QUARANTINE_PATH` and, for
    /// programs that read the pushed objects, `GIT_OBJECT_DIRECTORY`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The repository's objects directory, absolute.
    pub fn objects_dir(&self) -> &Path {
        &self.objects_dir
    }

    /// A database of the quarantined objects and the repository's.
    pub fn odb(&self) -> Result<Odb, OdbError> {
        Odb::open(&self.dir, self.format)
    }

    /// Stores a pack in the quarantine (see [`crate::store_pack`]); only
    /// its data is flushed, its names are made durable by the migration.
    pub fn store_pack(
        &self,
        input: impl BufRead,
        options: &PackOptions<'_>,
    ) -> Result<StoredPack, OdbError> {
        crate::pack::store(self.vfs.clone(), &self.dir, input, options, false)
    }

    /// A writer of loose objects into the quarantine, flushing their data
    /// with `method` at its commit; their names are made durable by the
    /// migration.
    pub fn loose_writer(&self, method: FlushMethod, mechanism: BatchMechanism) -> LooseWriter {
        LooseWriter::new(self.vfs.clone(), self.dir.clone(), self.format, method)
            .with_batch_mechanism(mechanism)
            .without_durable_names()
    }

    /// Moves every quarantined object into the repository, its names made
    /// durable with `method` before this returns, then removes the
    /// quarantine. On failure, objects already moved stay (unreferenced)
    /// and the quarantine is removed when dropped.
    pub fn migrate(
        mut self,
        method: FlushMethod,
        mechanism: BatchMechanism,
    ) -> Result<Migrated, OdbError> {
        let mut batch =
            FlushBatch::new(self.vfs.clone(), method, &self.objects_dir).with_mechanism(mechanism);
        let mut migrated = Migrated::default();
        let mut indexes = Vec::new();
        let pack_dir = self.dir.join("pack");
        for entry in self.vfs.read_dir(&self.dir)? {
            let name = entry.name.to_string_lossy();
            if entry.kind != FileKind::Dir {
                continue;
            }
            if name.len() == 2 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
                let from = self.dir.join(&entry.name);
                let to = self.objects_dir.join(&entry.name);
                for object in self.vfs.read_dir(&from)? {
                    if object.kind != FileKind::File
                        || object.name.to_string_lossy().starts_with("tmp_")
                    {
                        continue;
                    }
                    batch.create_dir_all(&to)?;
                    self.link(
                        &mut batch,
                        &from.join(&object.name),
                        &to.join(&object.name),
                        true,
                    )?;
                    batch.dir_changed(&to);
                    migrated.loose += 1;
                }
            }
        }
        if self.vfs.exists(&pack_dir) {
            let to_dir = self.objects_dir.join("pack");
            let mut files = self.vfs.read_dir(&pack_dir)?;
            files.sort_by(|a, b| a.name.cmp(&b.name));
            for file in files {
                let name = file.name.to_string_lossy().into_owned();
                if file.kind != FileKind::File || !name.starts_with("pack-") {
                    continue;
                }
                let (from, to) = (pack_dir.join(&file.name), to_dir.join(&file.name));
                batch.create_dir_all(&to_dir)?;
                if name.ends_with(".idx") {
                    // An index makes its pack visible: named last.
                    indexes.push((from, to));
                    continue;
                }
                let created = self.link(&mut batch, &from, &to, false)?;
                if created && name.ends_with(".keep") {
                    migrated.keep_files.push(to);
                }
                batch.dir_changed(&to_dir);
            }
        }
        batch.flush_dirs()?;
        if !indexes.is_empty() {
            for (from, to) in &indexes {
                self.link(&mut batch, from, to, false)?;
                batch.dir_changed(to.parent().expect("in objects/pack"));
                migrated.packs += 1;
                if let Some(name) = to.file_stem() {
                    migrated
                        .pack_names
                        .push(name.to_string_lossy().into_owned());
                }
            }
            batch.flush_dirs()?;
        }
        self.remove();
        Ok(migrated)
    }

    /// Gives `to` the content of `from`, keeping an existing `to` (the same
    /// object or pack, since names are content hashes); a kept loose
    /// object is freshened so gc sees it as new. True if `to` was created.
    ///
    /// A loose object found existing may be pruned before it is freshened
    /// (it was old and, until this push's refs are written, unreachable):
    /// then the quarantine's copy is linked after all, rather than failing
    /// the push or leaving it to name an object that is gone. A prune that
    /// emptied the object's directory removes it too, maybe after this
    /// migration made sure it was there: it is made again (in `batch`, so
    /// that it is flushed with the names).
    fn link(
        &self,
        batch: &mut FlushBatch,
        from: &Path,
        to: &Path,
        freshen: bool,
    ) -> Result<bool, OdbError> {
        // Each failed attempt found the object (or its directory) there
        // and then gone: a prune removing it every time in between is no
        // real schedule, so a few attempts are enough.
        let mut attempts = 0;
        loop {
            match self.vfs.link(from, to) {
                Ok(()) => return Ok(true),
                Err(e) if e.is_already_exists() && !freshen => return Ok(false),
                Err(e) if e.is_already_exists() => match self.vfs.touch(to) {
                    Ok(()) => return Ok(false),
                    Err(e) if e.is_not_found() && attempts < 8 => attempts += 1,
                    Err(e) => return Err(e.into()),
                },
                Err(e) if e.is_not_found() && attempts < 8 => {
                    attempts += 1;
                    let dir = to.parent().unwrap_or(Path::new("."));
                    batch.dir_removed(dir);
                    batch.create_dir_all(dir)?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Removes the quarantine and everything in it (best effort: what is
    /// left is garbage housekeeping removes).
    fn remove(&mut self) {
        self.done = true;
        remove_tree(self.vfs.as_ref(), &self.dir);
    }
}

impl Drop for Quarantine {
    fn drop(&mut self) {
        if !self.done {
            self.remove();
        }
    }
}

/// Removes `dir` and its contents, ignoring failures.
fn remove_tree(vfs: &dyn Vfs, dir: &Path) {
    if let Ok(entries) = vfs.read_dir(dir) {
        for entry in entries {
            let path = dir.join(&entry.name);
            match entry.kind {
                FileKind::Dir => remove_tree(vfs, &path),
                _ => {
                    let _ = vfs.unlink(&path);
                }
            }
        }
    }
    let _ = vfs.rmdir(dir);
}
