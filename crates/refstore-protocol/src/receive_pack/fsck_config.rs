//! Whether and how pushed objects are checked: `receive.fsckObjects`
//! (else `transfer.fsckObjects`, else off), `receive.fsck.<msg-id>`
//! severities and `receive.fsck.skipList`, a file of object ids (one per
//! line, `#` comments) relative to the git directory. Checks are strict, as
//! git's (`index-pack --strict`): warnings refuse objects unless their id
//! is configured otherwise.

use crate::Repository;
use refstore_odb::fsck::{FsckOptions, MsgId};
use refstore_refs::ObjectId;

/// The checks to apply, or `None` when pushed objects are not checked.
/// The error says what in the configuration is wrong.
pub(crate) fn options(repo: &Repository) -> Result<Option<FsckOptions>, String> {
    let mut enabled = None;
    for key in ["receive.fsckObjects", "transfer.fsckObjects"] {
        if enabled.is_none() {
            enabled = repo.config.bool(key).map_err(|e| e.to_string())?;
        }
    }
    if enabled != Some(true) {
        return Ok(None);
    }
    let mut options = FsckOptions::new(true);
    for id in MsgId::all() {
        if let Some(value) = repo.config.string(&format!("receive.fsck.{}", id.name())) {
            options.set(id.name(), &value)?;
        }
    }
    if let Some(path) = repo.config.string("receive.fsck.skipList") {
        let path = repo.location.git_dir.join(path);
        let list = repo
            .vfs
            .read(&path)
            .map_err(|e| format!("cannot read skip list: {e}"))?;
        for line in list.split(|&b| b == b'\n') {
            let line = match line.iter().position(|&b| b == b'#') {
                Some(hash) => &line[..hash],
                None => line,
            };
            let line = line.trim_ascii();
            if line.is_empty() {
                continue;
            }
            let id = ObjectId::from_hex_in(line, repo.object_format()).map_err(|_| {
                format!(
                    "invalid object name '{}' in {}",
                    String::from_utf8_lossy(line),
                    path.display()
                )
            })?;
            options.skip(id);
        }
    }
    Ok(Some(options))
}
