//! The loose object files of a repository (`objects/xx/yyyy…`): listing
//! them, and reading one with its id checked.

use crate::error::MaintError;
use crate::repo::Repo;
use refstore_fs::FileKind;
use refstore_odb::ObjectKind;
use std::io::Read;
use std::path::PathBuf;

/// One loose object file.
pub struct LooseObject {
    /// Its raw id.
    pub id: Vec<u8>,
    /// Its path.
    pub path: PathBuf,
}

/// Every loose object of the repository.
pub fn list(repo: &Repo) -> Result<Vec<LooseObject>, MaintError> {
    let mut found = Vec::new();
    visit(repo, &mut |object| {
        found.push(object);
        true
    })?;
    found.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(found)
}

/// True if the repository has a loose object: stops at the first.
pub fn any(repo: &Repo) -> Result<bool, MaintError> {
    let mut found = false;
    visit(repo, &mut |_| {
        found = true;
        false
    })?;
    Ok(found)
}

/// Hands `each` the loose objects, in directory order, until it returns
/// false.
fn visit(repo: &Repo, each: &mut dyn FnMut(LooseObject) -> bool) -> Result<(), MaintError> {
    let vfs = repo.vfs.as_ref();
    let objects = repo.objects_dir();
    let hex_len = repo.object_format().hex_len();
    let dirs = match vfs.read_dir(objects) {
        Ok(entries) => entries,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    for dir in dirs {
        let prefix = dir.name.to_string_lossy().into_owned();
        if dir.kind != FileKind::Dir || prefix.len() != 2 || !is_hex(&prefix) {
            continue;
        }
        let path = objects.join(&dir.name);
        let files = match vfs.read_dir(&path) {
            Ok(files) => files,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e.into()),
        };
        for file in files {
            let rest = file.name.to_string_lossy();
            if file.kind != FileKind::File || rest.len() != hex_len - 2 || !is_hex(&rest) {
                continue;
            }
            let hex = format!("{prefix}{rest}");
            let object = LooseObject {
                id: decode_hex(&hex),
                path: path.join(&file.name),
            };
            if !each(object) {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Reads and inflates a loose object, checking its id; `None` if it is
/// damaged.
pub fn read_checked(
    repo: &Repo,
    object: &LooseObject,
) -> Result<Option<(ObjectKind, Vec<u8>)>, MaintError> {
    let compressed = match repo.vfs.read(&object.path) {
        Ok(bytes) => bytes,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut raw = Vec::new();
    if flate2::read::ZlibDecoder::new(&compressed[..])
        .read_to_end(&mut raw)
        .is_err()
    {
        return Ok(None);
    }
    let Some(nul) = raw.iter().position(|&b| b == 0) else {
        return Ok(None);
    };
    let Some((kind, size)) = refstore_odb::parse_loose_header(&raw[..nul]) else {
        return Ok(None);
    };
    if size != (raw.len() - nul - 1) as u64 {
        return Ok(None);
    }
    let mut hasher = gix_hash::hasher(repo.object_format().gix_kind());
    hasher.update(&raw);
    match hasher.try_finalize() {
        Ok(id) if id.as_slice() == object.id.as_slice() => {}
        _ => return Ok(None),
    }
    raw.drain(..=nul);
    Ok(Some((kind, raw)))
}

fn is_hex(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_hexdigit())
}

fn decode_hex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("checked hex"))
        .collect()
}
