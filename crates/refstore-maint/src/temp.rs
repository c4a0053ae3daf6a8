//! Temporary files with git's prefixes (`tmp_pack_`, `tmp_idx_`, ...), so
//! that what a crash leaves is recognised and removed by `cleanup`, by
//! refstore or git alike.

use crate::MaintError;
use refstore_fs::{Vfs, VfsFile};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Creates a new file `<dir>/<prefix><unique>`.
pub fn create(
    vfs: &dyn Vfs,
    dir: &Path,
    prefix: &str,
) -> Result<(PathBuf, Box<dyn VfsFile>), MaintError> {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let mut last = None;
    for _ in 0..100 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!(
            "{prefix}{}_{}_{nanos:x}",
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        );
        let path = dir.join(name);
        match vfs.create_exclusive(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.is_already_exists() => last = Some(e),
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.expect("an attempt was made").into())
}
