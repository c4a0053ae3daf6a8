//! Temporary files and directories: created under a new name that starts
//! with a prefix of git's (`tmp_obj_`, `tmp_pack_`, `incoming-`), so that
//! what a crash leaves behind is recognised and removed by housekeeping,
//! refstore's or git's; and [`TempFiles`], a guard that removes the
//! temporary files it holds unless they were kept.
//!
//! Names end in six characters drawn from a process-wide sequence mixed
//! with a per-process random seed, as git's `mkstemp` names do: concurrent
//! writers rarely pick the same name, and exclusive creation settles it
//! when they do.

use crate::flush::FlushBatch;
use crate::vfs::{Result, Vfs, VfsFile};
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Attempts at finding an unused name before giving up.
const ATTEMPTS: usize = 100;

/// Six characters for a new temporary name.
pub fn unique_suffix() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static SEED: OnceLock<u64> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let seed = *SEED.get_or_init(|| {
        // RandomState is seeded from the OS once per process; the pid
        // separates processes that fork.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.finish()
    });
    let count = COUNTER.fetch_add(1, Ordering::Relaxed) + 1;
    let mut value = splitmix(seed ^ count.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut name = String::with_capacity(6);
    for _ in 0..6 {
        name.push(ALPHABET[(value % ALPHABET.len() as u64) as usize] as char);
        value /= ALPHABET.len() as u64;
    }
    name
}

/// A 64-bit mixing function (SplitMix64's finalizer).
fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Creates a new file `<dir>/<prefix><suffix>`, exclusively.
pub fn create(vfs: &dyn Vfs, dir: &Path, prefix: &str) -> Result<(PathBuf, Box<dyn VfsFile>)> {
    under_new_name(dir, prefix, |path| vfs.create_exclusive(path))
}

/// Creates a new directory `<dir>/<prefix><suffix>`.
pub fn create_dir(vfs: &dyn Vfs, dir: &Path, prefix: &str) -> Result<PathBuf> {
    under_new_name(dir, prefix, |path| vfs.mkdir(path)).map(|(path, ())| path)
}

/// Runs `make` on new names until one does not exist yet.
fn under_new_name<T>(
    dir: &Path,
    prefix: &str,
    make: impl Fn(&Path) -> Result<T>,
) -> Result<(PathBuf, T)> {
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let path = dir.join(format!("{prefix}{}", unique_suffix()));
        match make(&path) {
            Ok(made) => return Ok((path, made)),
            Err(e) if e.is_already_exists() => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.expect("an attempt was made"))
}

/// Files removed when the guard is dropped (after their contents were
/// linked or renamed into place, or on failure), unless
/// [`keep_all`](Self::keep_all) was called first.
pub struct TempFiles {
    vfs: Arc<dyn Vfs>,
    paths: Vec<PathBuf>,
}

impl TempFiles {
    /// An empty guard.
    pub fn new(vfs: Arc<dyn Vfs>) -> Self {
        TempFiles {
            vfs,
            paths: Vec::new(),
        }
    }

    /// Removes `path` too when dropped.
    pub fn remove_later(&mut self, path: PathBuf) {
        self.paths.push(path);
    }

    /// Creates a new temporary file ([`create`]) held by the guard.
    pub fn create(&mut self, dir: &Path, prefix: &str) -> Result<(PathBuf, Box<dyn VfsFile>)> {
        let (path, file) = create(self.vfs.as_ref(), dir, prefix)?;
        self.paths.push(path.clone());
        Ok((path, file))
    }

    /// Writes `content` to a new temporary file held by the guard and
    /// stages it in `batch`, to be flushed with the batch's files.
    pub fn write(
        &mut self,
        dir: &Path,
        prefix: &str,
        content: &[u8],
        batch: &mut FlushBatch,
    ) -> Result<PathBuf> {
        let (path, mut file) = self.create(dir, prefix)?;
        file.write_all(content)?;
        batch.stage(file)?;
        Ok(path)
    }

    /// Keeps every file held so far: they are in their final places.
    pub fn keep_all(&mut self) {
        self.paths.clear();
    }
}

impl Drop for TempFiles {
    fn drop(&mut self) {
        for path in &self.paths {
            let _ = self.vfs.unlink(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimFs;
    use std::collections::HashSet;

    #[test]
    fn names_are_new_and_prefixed() {
        let suffixes: HashSet<String> = (0..10_000).map(|_| unique_suffix()).collect();
        assert_eq!(suffixes.len(), 10_000);
        let fs = SimFs::new();
        fs.mkdir(Path::new("/d")).unwrap();
        let (a, _) = create(&fs, Path::new("/d"), "tmp_pack_").unwrap();
        let (b, _) = create(&fs, Path::new("/d"), "tmp_pack_").unwrap();
        assert_ne!(a, b);
        for path in [&a, &b] {
            let name = path.file_name().unwrap().to_str().unwrap();
            assert!(name.starts_with("tmp_pack_") && name.len() == "tmp_pack_".len() + 6);
        }
    }

    #[test]
    fn the_guard_removes_what_it_holds_unless_kept() {
        let fs: Arc<dyn Vfs> = Arc::new(SimFs::new());
        fs.mkdir(Path::new("/d")).unwrap();
        let (dropped, kept);
        {
            let mut temps = TempFiles::new(fs.clone());
            dropped = temps.create(Path::new("/d"), "tmp_").unwrap().0;
        }
        {
            let mut temps = TempFiles::new(fs.clone());
            kept = temps.create(Path::new("/d"), "tmp_").unwrap().0;
            temps.keep_all();
        }
        assert!(!fs.exists(&dropped));
        assert!(fs.exists(&kept));
    }
}
