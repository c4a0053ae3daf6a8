//! Making a new pack visible: `.pack`, `.rev` and `.idx` flushed together
//! at one data flush point while they still have temporary names, then
//! named with `link(2)` — pack and reverse index first, their names made
//! durable, and only then the index, which is what makes a pack visible
//! to readers. So no reader, and no crash, ever shows an index whose pack
//! is not complete and durable (with `core.fsync` covering packs).

use crate::error::MaintError;
use crate::pack_out::FinishedPack;
use crate::repo::Repo;
use refstore_fs::config::Component;
use refstore_fs::flush::FlushBatch;
use refstore_fs::lock::{LockError, LockFile};
use refstore_fs::temp::TempFiles;
use refstore_fs::Vfs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The files of a pack that was installed.
#[derive(Debug, Clone)]
pub struct Installed {
    /// `pack-<hash>` (without extension).
    pub name: String,
    /// The `.idx` path.
    pub index_path: PathBuf,
    /// Objects in it.
    pub objects: u32,
}

/// Indexes and installs a finished pack in `objects/pack`.
pub fn install(repo: &Repo, pack: FinishedPack) -> Result<Installed, MaintError> {
    let vfs = &repo.vfs;
    let dir = repo.pack_dir();
    let format = repo.object_format();
    let FinishedPack {
        file,
        temp_path,
        checksum,
        mut entries,
    } = pack;
    let mut temps = TempFiles::new(vfs.clone());
    temps.remove_later(temp_path.clone());
    let objects = entries.len() as u32;
    let index = crate::idx::write(&mut entries, &checksum, format)?;
    let hex: String = checksum.iter().map(|b| format!("{b:02x}")).collect();
    let name = format!("pack-{hex}");
    let base = dir.join(&name);
    let final_pack = base.with_extension("pack");
    let final_index = base.with_extension("idx");
    let final_rev = base.with_extension("rev");
    let installed = Installed {
        name,
        index_path: final_index.clone(),
        objects,
    };
    if vfs.exists(&final_index) {
        // The very same pack is already there.
        return Ok(installed);
    }
    let format = repo.object_format();
    let pack_checksum = refstore_refs::ObjectId::from_raw(&checksum)
        .ok_or_else(|| MaintError::Format("bad pack checksum length".into()))?;
    let rev = refstore_odb::reverse_index(&index, format, &pack_checksum)?;

    let method = repo.fsync().method_for(Component::Pack);
    let mut batch = FlushBatch::new(vfs.clone(), method, dir.clone())
        .with_mechanism(repo.fsync().batch_mechanism());
    batch.stage(file)?;
    let temp_index = temps.write(&dir, "tmp_idx_", &index, &mut batch)?;
    let temp_rev = temps.write(&dir, "tmp_rev_", &rev, &mut batch)?;
    batch.flush_files()?;
    link(vfs, &temp_path, &final_pack)?;
    link(vfs, &temp_rev, &final_rev)?;
    batch.dir_changed(&dir);
    batch.flush_dirs()?;
    link(vfs, &temp_index, &final_index)?;
    batch.dir_changed(&dir);
    drop(temps);
    batch.flush_dirs()?;
    Ok(installed)
}

fn link(vfs: &Arc<dyn Vfs>, from: &Path, to: &Path) -> Result<(), MaintError> {
    match vfs.link(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.is_already_exists() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The directory of `target`, made if missing, and a flush batch for
/// writing into it with the flush method of `component`.
fn batch_for(
    repo: &Repo,
    target: &Path,
    component: Component,
) -> Result<(PathBuf, FlushBatch), MaintError> {
    let dir = target.parent().expect("a file in a directory").to_owned();
    let method = repo.fsync().method_for(component);
    let mut batch = FlushBatch::new(repo.vfs.clone(), method, dir.clone())
        .with_mechanism(repo.fsync().batch_mechanism());
    batch.create_dir_all(&dir)?;
    Ok((dir, batch))
}

/// Writes `content` as the new version of `target` (a file readers open by
/// name, like `multi-pack-index` or `commit-graph`) with git's lock
/// protocol: `<target>.lock` created exclusively (so a git writing the same
/// file at the same time fails, or makes this fail), written, flushed,
/// renamed over the target, the directory flushed.
pub fn replace_file(
    repo: &Repo,
    target: &Path,
    content: &[u8],
    component: Component,
) -> Result<(), MaintError> {
    let vfs = &repo.vfs;
    let (_, mut batch) = batch_for(repo, target, component)?;
    // One attempt: housekeeping that finds the file being written gives
    // up on this task rather than wait.
    let mut lock = match LockFile::acquire(vfs, target, Duration::ZERO) {
        Ok(lock) => lock,
        Err(LockError::Held { lock_path }) => {
            return Err(MaintError::Busy(format!(
                "'{}' exists: another process is writing '{}'",
                lock_path.display(),
                target.display()
            )))
        }
        Err(LockError::Io(e)) => return Err(e.into()),
    };
    lock.write_all(content)?;
    lock.stage(&mut batch)?;
    batch.flush_files()?;
    lock.commit(&mut batch)?;
    batch.flush_dirs()?;
    Ok(())
}

/// Adds `content` as the new file `target`, a name nothing reads before a
/// file naming it is installed (a bitmap, named after the checksum of the
/// multi-pack-index it belongs to): written under a temporary name
/// `<prefix>…`, flushed, linked to its name, the directory flushed, so
/// that the file naming it can only be installed once it is durable. A
/// file already of that name is the same content and is kept.
pub fn add_file(
    repo: &Repo,
    target: &Path,
    content: &[u8],
    prefix: &str,
    component: Component,
) -> Result<(), MaintError> {
    let vfs = &repo.vfs;
    let (dir, mut batch) = batch_for(repo, target, component)?;
    let mut temps = TempFiles::new(vfs.clone());
    let temp = temps.write(&dir, prefix, content, &mut batch)?;
    batch.flush_files()?;
    link(vfs, &temp, target)?;
    batch.dir_changed(&dir);
    drop(temps);
    batch.flush_dirs()?;
    Ok(())
}
