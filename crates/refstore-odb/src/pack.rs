//! Storing a received pack: `.pack` and `.idx` written with gix-pack,
//! completed against the repository if thin, and made durable with one
//! flush point before they become visible.
//!
//! The pack is parsed, (for a thin pack) completed with the external bases
//! it needs, and indexed in memory; then both files go through the
//! [`Vfs`] as temporary files in `objects/pack/`, are flushed together,
//! and receive their final names with `link(2)`: first the pack (and its
//! `.keep` file), whose names are flushed before the index gets its name,
//! since an index is what makes a pack visible to readers. So no reader ever sees a
//! pack whose content is not durable (with `fsync` and `batch`), and an
//! existing pack of the same name is never replaced.
//!
//! A `.keep` file can be created with the pack, before it is visible, to
//! protect it from a concurrent `git gc` until the refs that need it are
//! written; [`StoredPack::release_keep`] removes it.
//!
//! Objects at or above `core.bigFileThreshold` are hashed in pieces, set
//! aside from gix-pack's indexer (which inflates each object whole), and
//! added to the index it writes ([`crate::set_aside`]); the entries are
//! read by [`crate::entries`] and admitted as [`crate::admit`] says, so a
//! pack that inflates beyond its bound is refused as it is read, before
//! any file is created.
//!
//! Limitation: the whole pack (compressed) and its index are held in
//! memory while they are built.

use crate::admit::{stopped, Stop};
use crate::entries::PackEntries;
use crate::large::IngestLimits;
use crate::set_aside::{Aside, SetAside};
use crate::{Odb, OdbError};
use gix_pack::data::input::{EntriesToBytesIter, Entry, LookupRefDeltaObjectsIter};
use refstore_fs::flush::{BatchMechanism, FlushBatch, FlushMethod};
use refstore_fs::temp::TempFiles;
use refstore_fs::Vfs;
use refstore_hash::{ObjectFormat, ObjectId};
use std::cell::RefCell;
use std::io::{self, BufRead, Cursor, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// Where and how a pack is stored.
#[derive(Debug)]
pub struct PackOptions<'a> {
    /// The repository's object format.
    pub format: ObjectFormat,
    /// How the pack and index are flushed (`core.fsync`'s `pack` component).
    pub method: FlushMethod,
    /// How the flush points of the `batch` method are carried out
    /// (`refstore.batchFlush`; `Auto` chooses per filesystem).
    pub batch_mechanism: BatchMechanism,
    /// Complete a thin pack with the bases it lacks, read from this
    /// database (git's `--fix-thin`).
    pub thin_bases: Option<&'a Odb>,
    /// Create `pack-<hash>.keep` with this content along with the pack.
    pub keep: Option<&'a [u8]>,
    /// Write the reverse index `pack-<hash>.rev` too
    /// (`pack.writeReverseIndex`, on by default as in git 2.41 and later).
    pub rev_index: bool,
    /// Which objects are streamed, and how much the pack may inflate to.
    pub limits: IngestLimits,
}

/// A pack stored in the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredPack {
    /// The pack's checksum, which names its files.
    pub checksum: ObjectId,
    /// Objects in the stored pack (with a thin pack's added bases).
    pub objects: u32,
    /// The `.pack` file.
    pub pack_path: PathBuf,
    /// The `.idx` file.
    pub index_path: PathBuf,
    /// The `.rev` file, if one was written.
    pub rev_path: Option<PathBuf>,
    /// The `.keep` file, if one was created (none if the pack was already
    /// there).
    pub keep_path: Option<PathBuf>,
}

impl StoredPack {
    /// The ids of the objects the pack holds, in the order they are
    /// stored, read from its index.
    pub fn object_ids(&self, format: ObjectFormat) -> Result<Vec<ObjectId>, OdbError> {
        let index =
            gix_pack::index::File::at(&self.index_path, format.gix_kind()).map_err(|e| {
                OdbError::Pack(format!("cannot read {}: {e}", self.index_path.display()))
            })?;
        let mut entries: Vec<(u64, ObjectId)> = index
            .iter()
            .map(|entry| (entry.pack_offset, ObjectId::from_gix(&entry.oid)))
            .collect();
        entries.sort_unstable();
        Ok(entries.into_iter().map(|(_, id)| id).collect())
    }

    /// Removes the `.keep` file, once the refs that need the pack are
    /// written.
    pub fn release_keep(&self, vfs: &dyn Vfs) -> Result<(), OdbError> {
        if let Some(keep) = &self.keep_path {
            vfs.unlink(keep)?;
        }
        Ok(())
    }
}

/// Reads a pack from `input` and stores it with its index in
/// `<objects_dir>/pack/`. Nothing is visible unless it succeeds.
pub fn store_pack(
    vfs: Arc<dyn Vfs>,
    objects_dir: &Path,
    input: impl BufRead,
    options: &PackOptions<'_>,
) -> Result<StoredPack, OdbError> {
    store(vfs, objects_dir, input, options, true)
}

/// [`store_pack`]; without `durable_names` only the data flush point is
/// run (for a quarantine, whose names are given durably when it is
/// migrated).
pub(crate) fn store(
    vfs: Arc<dyn Vfs>,
    objects_dir: &Path,
    input: impl BufRead,
    options: &PackOptions<'_>,
    durable_names: bool,
) -> Result<StoredPack, OdbError> {
    let (pack, index, outcome) = build(input, options)?;
    let checksum = ObjectId::from_gix(&outcome.data_hash);
    let dir = objects_dir.join("pack");
    let base = dir.join(format!("pack-{checksum}"));
    let stored = StoredPack {
        checksum,
        objects: outcome.num_objects,
        pack_path: base.with_extension("pack"),
        index_path: base.with_extension("idx"),
        rev_path: options.rev_index.then(|| base.with_extension("rev")),
        keep_path: options.keep.map(|_| base.with_extension("keep")),
    };
    if vfs.exists(&stored.index_path) {
        // The same pack (same checksum, same content) is already stored.
        return Ok(StoredPack {
            keep_path: None,
            ..stored
        });
    }
    let rev = match options.rev_index {
        true => Some(crate::rev_index::reverse_index(
            &index,
            options.format,
            &checksum,
        )?),
        false => None,
    };
    let files = Files {
        pack: &pack,
        index: &index,
        rev: rev.as_deref(),
    };
    install(vfs, &dir, &stored, &files, options, durable_names)?;
    Ok(stored)
}

/// A pack built in memory: its bytes, its index, and what gix-pack
/// reported (checksum, object count).
type Built = (Arc<Vec<u8>>, Vec<u8>, gix_pack::index::write::Outcome);

/// Parses, completes and indexes the pack in memory.
fn build(input: impl BufRead, options: &PackOptions<'_>) -> Result<Built, OdbError> {
    let hash = options.format.gix_kind();
    let stop = Stop::default();
    let entries = PackEntries::new(input, options.format, options.limits, stop.clone())?;
    let version = entries.version();
    let entries: Box<dyn Iterator<Item = gix_error::Result<Entry>>> = match options.thin_bases {
        Some(odb) => Box::new(LookupRefDeltaObjectsIter::new(
            entries,
            odb.gix_handle().clone(),
            gix_zlib::Compression::BEST_SPEED,
        )),
        None => Box::new(entries),
    };
    // Entries are written out again (a completed thin pack gains entries and
    // a new header and checksum), into memory shared with the indexer.
    let written = SharedBuffer::default();
    let rewritten = EntriesToBytesIter::new(entries, written.clone(), version, hash);
    let aside = Rc::new(RefCell::new(Aside::default()));
    let mut indexed = SetAside::new(
        rewritten,
        options.format,
        options.limits,
        aside.clone(),
        stop.clone(),
    );
    let finished: Arc<Mutex<Option<Arc<Vec<u8>>>>> = Arc::default();
    let mut index = Vec::new();
    let mut outcome = gix_pack::index::write_data_iter_to_stream(
        gix_pack::index::Version::V2,
        || {
            let bytes = Arc::new(written.take_bytes());
            *finished.lock().expect("not poisoned") = Some(bytes.clone());
            Ok((entry_bytes, bytes))
        },
        &mut indexed,
        None,
        &mut gix_utils::progress::Discard,
        &mut index,
        &AtomicBool::new(false),
        hash,
        None,
        version,
    )
    .map_err(|e| stopped(&stop, &e))?;
    let pack = finished
        .lock()
        .expect("not poisoned")
        .take()
        .ok_or_else(|| OdbError::Pack("the pack holds no objects".into()))?;
    let aside = aside.take();
    if !aside.entries.is_empty() {
        let trailer = aside
            .trailer
            .ok_or_else(|| OdbError::Pack("the pack has no checksum".into()))?;
        index = crate::idx_v2::add_entries(&index, options.format, &aside.entries, &trailer)?;
        outcome.data_hash = trailer.to_gix();
        outcome.num_objects += aside.entries.len() as u32;
    }
    Ok((pack, index, outcome))
}

/// The bytes of one pack entry, for the indexer.
fn entry_bytes(range: gix_pack::data::EntryRange, pack: &Arc<Vec<u8>>) -> Option<&[u8]> {
    pack.get(range.start as usize..range.end as usize)
}

/// Writes the files through the Vfs: temporary files, one data flush
/// point, final names (pack, then index), one directory flush point.
fn install(
    vfs: Arc<dyn Vfs>,
    dir: &Path,
    stored: &StoredPack,
    files: &Files<'_>,
    options: &PackOptions<'_>,
    durable_names: bool,
) -> Result<(), OdbError> {
    let Files { pack, index, rev } = *files;
    let mut batch = FlushBatch::new(vfs.clone(), options.method, dir.to_owned())
        .with_mechanism(options.batch_mechanism);
    batch.create_dir_all(dir)?;
    let mut temps = TempFiles::new(vfs.clone());
    // The final names given so far (see below).
    let mut named = TempFiles::new(vfs.clone());
    let temp_pack = temps.write(dir, "tmp_pack_", pack, &mut batch)?;
    let temp_index = temps.write(dir, "tmp_idx_", index, &mut batch)?;
    let temp_rev = match (rev, &stored.rev_path) {
        (Some(rev), Some(dest)) => Some((temps.write(dir, "tmp_rev_", rev, &mut batch)?, dest)),
        _ => None,
    };
    if let (Some(keep), Some(content)) = (&stored.keep_path, options.keep) {
        let mut file = vfs.create_exclusive(keep)?;
        named.remove_later(keep.clone());
        file.write_all(content)?;
        batch.stage(file)?;
    }
    batch.flush_files()?;
    // The index names the pack; it gets its name only once the pack's (and
    // the .keep file's) names are durable, so that no crash can leave an
    // index without its pack: two directory flush points.
    // The reverse index is named with the pack, before the index.
    // Names this call gives are taken back if it fails before the index
    // is named: a pack without its index is garbage nobody would remove.
    let link = |named: &mut TempFiles, temp: &Path, dest: &Path| match vfs.link(temp, dest) {
        Ok(()) => {
            named.remove_later(dest.to_owned());
            Ok(())
        }
        Err(e) if e.is_already_exists() => Ok(()),
        Err(e) => Err(OdbError::from(e)),
    };
    link(&mut named, &temp_pack, &stored.pack_path)?;
    if let Some((temp, dest)) = &temp_rev {
        link(&mut named, temp, dest)?;
    }
    if durable_names {
        batch.dir_changed(dir);
        batch.flush_dirs()?;
    }
    link(&mut named, &temp_index, &stored.index_path)?;
    // The pack is visible: what it is named stays, whatever happens next.
    named.keep_all();
    if durable_names {
        batch.dir_changed(dir);
        batch.flush_dirs()?;
    }
    drop(temps);
    Ok(())
}

/// The contents of a stored pack's files.
#[derive(Clone, Copy)]
struct Files<'a> {
    pack: &'a [u8],
    index: &'a [u8],
    rev: Option<&'a [u8]>,
}

/// An in-memory file shared between the pack writer and the indexer.
#[derive(Clone, Default)]
struct SharedBuffer(Arc<Mutex<Cursor<Vec<u8>>>>);

impl SharedBuffer {
    fn take_bytes(&self) -> Vec<u8> {
        std::mem::take(self.0.lock().expect("not poisoned").get_mut())
    }
}

impl Read for SharedBuffer {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.lock().expect("not poisoned").read(buf)
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().expect("not poisoned").write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for SharedBuffer {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        self.0.lock().expect("not poisoned").seek(pos)
    }
}
