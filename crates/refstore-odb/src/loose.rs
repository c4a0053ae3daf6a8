//! Durable bulk writing of loose objects, with one flush point per batch.
//!
//! Each object is deflated into a temporary file `tmp_obj_XXXXXX` in its
//! fan-out directory (`objects/ab/`), which is handed to a [`FlushBatch`].
//! [`LooseWriter::commit`] then runs the batch's data flush point once for
//! all of them, gives each temporary file its final name, and runs the
//! directory flush point once for the fan-out directories it touched. So
//! with the `fsync` and `batch` methods an object is never visible under its
//! name before its content is durable, and all objects are durable when
//! `commit` returns.
//!
//! The final name is given with `link(2)`, never `rename(2)`: an object
//! that appeared meanwhile (another writer, same content) is never replaced;
//! the temporary file is removed and the existing file freshened instead.
//! An object that already exists loose is not written again, only freshened
//! (its modification time set to now), so `git gc` sees it as new and does
//! not prune it before a ref points at it.
//!
//! Objects that exist only in a pack or an alternate are written loose: the
//! fresh copy protects them from pruning as a freshened pack would.

use crate::hash::{object_header, object_id};
use crate::{LargeObject, ObjectKind, OdbError};
use flate2::{Compress, Compression, FlushCompress, Status};
use refstore_fs::flush::{BatchMechanism, FlushBatch, FlushMethod};
use refstore_fs::Vfs;
use refstore_hash::{ObjectFormat, ObjectId};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Prefix of temporary object files; `git gc` removes stale ones.
const TEMP_PREFIX: &str = "tmp_obj_";

/// How much deflated data of a large object is gathered before it is
/// written.
const STREAM_BUFFER: usize = 256 << 10;

/// The path of a loose object: `<objects>/<first two hex digits>/<rest>`.
pub fn loose_object_path(objects_dir: &Path, id: &ObjectId) -> PathBuf {
    let hex = id.to_hex();
    objects_dir.join(&hex[..2]).join(&hex[2..])
}

/// An object written to a temporary file, waiting for its final name.
#[derive(Debug)]
struct Staged {
    temp: PathBuf,
    dest: PathBuf,
}

/// Writes a batch of loose objects durably with one flush point.
///
/// Call [`write`](Self::write) for each object, then [`commit`](Self::commit)
/// once. Objects are visible only after `commit`; dropping the writer
/// without committing removes its temporary files.
#[derive(Debug)]
pub struct LooseWriter {
    vfs: Arc<dyn Vfs>,
    objects_dir: PathBuf,
    format: ObjectFormat,
    batch: FlushBatch,
    staged: Vec<Staged>,
    /// Ids already handled in this batch, so a repeated object costs nothing.
    seen: HashSet<ObjectId>,
    /// One zlib stream state, reset for each object: creating a fresh one
    /// per object allocates and clears hundreds of KiB each time.
    compressor: Compress,
    /// Whether the final names are made durable at commit (not in a
    /// quarantine, whose names nobody needs after a crash).
    durable_names: bool,
}

impl LooseWriter {
    /// A writer into `objects_dir` (`<git-dir>/objects`), flushing with
    /// `method` (from `core.fsync`'s `loose-object` component and
    /// `core.fsyncMethod`).
    pub fn new(
        vfs: Arc<dyn Vfs>,
        objects_dir: PathBuf,
        format: ObjectFormat,
        method: FlushMethod,
    ) -> Self {
        // The flush points cover the repository's filesystem.
        let batch = FlushBatch::new(vfs.clone(), method, objects_dir.clone());
        LooseWriter {
            vfs,
            objects_dir,
            format,
            batch,
            staged: Vec::new(),
            seen: HashSet::new(),
            compressor: Compress::new(Compression::fast(), true),
            durable_names: true,
        }
    }

    /// Skips the directory flush point of [`commit`](Self::commit): for
    /// objects written into a quarantine, whose names are given durably
    /// when it is migrated.
    pub(crate) fn without_durable_names(mut self) -> Self {
        self.durable_names = false;
        self
    }

    /// Chooses how the flush points of the `batch` method are carried out
    /// (`refstore.batchFlush`; chosen per filesystem when not called).
    pub fn with_batch_mechanism(mut self, mechanism: BatchMechanism) -> Self {
        let method = self.batch.method();
        self.batch = FlushBatch::new(self.vfs.clone(), method, self.objects_dir.clone())
            .with_mechanism(mechanism);
        self
    }

    /// The object format ids are computed with.
    pub fn format(&self) -> ObjectFormat {
        self.format
    }

    /// Stages an object of `kind` with content `data` and returns its id.
    pub fn write(&mut self, kind: ObjectKind, data: &[u8]) -> Result<ObjectId, OdbError> {
        self.write_literally(kind.as_str().as_bytes(), data)
    }

    /// Like [`write`](Self::write), for any type name, as
    /// `git hash-object --literally` does (to create broken objects for
    /// testing; git refuses to read them back).
    pub fn write_literally(&mut self, type_name: &[u8], data: &[u8]) -> Result<ObjectId, OdbError> {
        let id = object_id(self.format, type_name, data)?;
        if self.seen.contains(&id) {
            return Ok(id);
        }
        let dest = loose_object_path(&self.objects_dir, &id);
        if self.vfs.stat(&dest).is_ok() {
            self.vfs.touch(&dest)?;
            self.seen.insert(id);
            return Ok(id);
        }
        let fanout = dest.parent().expect("loose paths have a fan-out directory");
        self.batch.create_dir_all(fanout)?;
        let compressed = deflate(
            &mut self.compressor,
            &object_header(type_name, data.len()),
            data,
        );
        let (temp, mut file) = self.create_temp(fanout)?;
        let written = file.write_all(&compressed);
        let staged = written.and_then(|()| self.batch.stage(file));
        if let Err(e) = staged {
            // The object was not written; its temporary file must not stay.
            let _ = self.vfs.unlink(&temp);
            return Err(e.into());
        }
        self.staged.push(Staged { temp, dest });
        self.seen.insert(id);
        Ok(id)
    }

    /// Stages an object at or above `core.bigFileThreshold`, inflated,
    /// hashed and deflated again a piece at a time into its temporary file
    /// (in the objects directory, as its name is known only at the end),
    /// and returns its id.
    pub fn write_large(
        &mut self,
        kind: ObjectKind,
        object: &LargeObject<'_>,
    ) -> Result<ObjectId, OdbError> {
        let objects_dir = self.objects_dir.clone();
        let (temp, mut file) = self.create_temp(&objects_dir)?;
        let streamed = self.stream(kind, object, file.as_mut());
        let id = match streamed {
            Ok(id) => id,
            Err(e) => {
                drop(file);
                let _ = self.vfs.unlink(&temp);
                return Err(e);
            }
        };
        let dest = loose_object_path(&self.objects_dir, &id);
        let exists = self.seen.contains(&id) || self.vfs.stat(&dest).is_ok();
        let staged = match exists {
            true => self.vfs.touch(&dest).map_err(OdbError::from),
            false => {
                let fanout = dest.parent().expect("loose paths have a fan-out directory");
                self.batch
                    .create_dir_all(fanout)
                    .and_then(|()| self.batch.stage(file))
                    .map_err(OdbError::from)
            }
        };
        if exists || staged.is_err() {
            let _ = self.vfs.unlink(&temp);
            return staged.map(|()| id);
        }
        self.staged.push(Staged { temp, dest });
        self.seen.insert(id);
        Ok(id)
    }

    /// Writes the deflated object into `file` as it is inflated, and
    /// returns its id.
    fn stream(
        &mut self,
        kind: ObjectKind,
        object: &LargeObject<'_>,
        file: &mut dyn refstore_fs::VfsFile,
    ) -> Result<ObjectId, OdbError> {
        let header = object_header(kind.as_str().as_bytes(), object.size() as usize);
        let mut hasher = gix_hash::hasher(self.format.gix_kind());
        hasher.update(&header);
        let compressor = &mut self.compressor;
        compressor.reset();
        let mut out = Vec::with_capacity(STREAM_BUFFER + 1024);
        feed(compressor, &header, &mut out, FlushCompress::None);
        let inflated = object.for_each_piece(|piece| {
            hasher.update(piece);
            feed(compressor, piece, &mut out, FlushCompress::None);
            if out.len() >= STREAM_BUFFER {
                file.write_all(&out)?;
                out.clear();
            }
            Ok(())
        })?;
        if inflated != object.size() {
            return Err(OdbError::Pack(format!(
                "a large object inflates to {inflated} bytes, not {}",
                object.size()
            )));
        }
        feed(compressor, &[], &mut out, FlushCompress::Finish);
        file.write_all(&out)?;
        let id = hasher
            .try_finalize()
            .map_err(|source| OdbError::Collision { source })?;
        Ok(ObjectId::from_gix(&id))
    }

    /// Makes every staged object durable and visible: one data flush point,
    /// the final names, one directory flush point.
    pub fn commit(mut self) -> Result<(), OdbError> {
        self.batch.flush_files()?;
        while let Some(object) = self.staged.pop() {
            let result = self.publish(&object);
            if let Err(e) = result {
                self.staged.push(object);
                return Err(e);
            }
        }
        if self.durable_names {
            self.batch.flush_dirs()?;
        }
        Ok(())
    }

    /// Gives one flushed temporary file its object name, never replacing an
    /// existing object.
    fn publish(&mut self, object: &Staged) -> Result<(), OdbError> {
        match self.vfs.link(&object.temp, &object.dest) {
            Ok(()) => {}
            Err(e) if e.is_already_exists() => self.vfs.touch(&object.dest)?,
            Err(e) => return Err(e.into()),
        }
        self.vfs.unlink(&object.temp)?;
        let fanout = object.dest.parent().expect("loose paths have a parent");
        self.batch.dir_changed(fanout);
        Ok(())
    }

    fn create_temp(
        &mut self,
        dir: &Path,
    ) -> Result<(PathBuf, Box<dyn refstore_fs::VfsFile>), OdbError> {
        Ok(refstore_fs::temp::create(
            self.vfs.as_ref(),
            dir,
            TEMP_PREFIX,
        )?)
    }
}

impl Drop for LooseWriter {
    fn drop(&mut self) {
        // Objects never given their name (not committed, or commit failed):
        // their temporary files are garbage. Best effort; `git gc` removes
        // any left behind.
        for object in self.staged.drain(..) {
            let _ = self.vfs.unlink(&object.temp);
        }
    }
}

/// zlib-compresses header and content, at git's default level for loose
/// objects (`core.looseCompression` 1: fastest), reusing `compressor`.
fn deflate(compressor: &mut Compress, header: &[u8], data: &[u8]) -> Vec<u8> {
    compressor.reset();
    let mut out = Vec::with_capacity(header.len() + data.len() / 2 + 64);
    feed(compressor, header, &mut out, FlushCompress::None);
    feed(compressor, data, &mut out, FlushCompress::Finish);
    out
}

/// Compresses all of `input` into `out`, growing it as needed; with
/// `Finish`, until the stream is complete.
fn feed(compressor: &mut Compress, mut input: &[u8], out: &mut Vec<u8>, flush: FlushCompress) {
    loop {
        if out.capacity() - out.len() < 64 {
            out.reserve(out.capacity().max(256));
        }
        let before = compressor.total_in();
        let status = compressor
            .compress_vec(input, out, flush)
            .expect("deflating into memory cannot fail");
        let consumed = usize::try_from(compressor.total_in() - before).expect("fits in memory");
        input = &input[consumed..];
        let done = match flush {
            FlushCompress::Finish => status == Status::StreamEnd,
            _ => input.is_empty(),
        };
        if done {
            return;
        }
    }
}
