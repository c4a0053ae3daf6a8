//! The list of rolled-up packs waiting to expire
//! (`objects/info/refstore-redundant-packs`, `pack-<hash> <unix seconds>`
//! lines): which packs `incremental-repack` hid ([`crate::repack`]) and
//! since when, so that a later run deletes their data once
//! `refstore.redundantPackExpire` has passed.

use refstore_fs::Vfs;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The list's file name, in `objects/info`.
const FILE_NAME: &str = "refstore-redundant-packs";

/// The list's path for the object database at `objects_dir`.
pub fn path(objects_dir: &Path) -> PathBuf {
    objects_dir.join("info").join(FILE_NAME)
}

/// The rolled-up packs (`pack-<hash>`) of the database at `objects_dir`
/// and since when each is, empty when there is no list.
pub fn read(
    vfs: &dyn Vfs,
    objects_dir: &Path,
) -> Result<HashMap<String, SystemTime>, refstore_fs::Error> {
    match vfs.read(&path(objects_dir)) {
        Ok(bytes) => Ok(parse(&bytes)),
        Err(e) if e.is_not_found() => Ok(HashMap::new()),
        Err(e) => Err(e),
    }
}

/// The list's content; lines that do not parse are left out.
pub fn parse(bytes: &[u8]) -> HashMap<String, SystemTime> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|line| {
            let (name, seconds) = line.split_once(' ')?;
            let seconds: u64 = seconds.trim().parse().ok()?;
            Some((name.to_owned(), UNIX_EPOCH + Duration::from_secs(seconds)))
        })
        .collect()
}

/// The list as stored, sorted by name.
pub fn format(rolled_up: &HashMap<String, SystemTime>) -> Vec<u8> {
    let mut lines: Vec<String> = rolled_up
        .iter()
        .map(|(name, since)| {
            let seconds = since
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs();
            format!("{name} {seconds}\n")
        })
        .collect();
    lines.sort();
    lines.concat().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_reads_back_as_written() {
        let mut list = HashMap::new();
        list.insert("pack-bb".to_owned(), UNIX_EPOCH + Duration::from_secs(7));
        list.insert(
            "pack-aa".to_owned(),
            UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        );
        let bytes = format(&list);
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            "pack-aa 1700000000\npack-bb 7\n"
        );
        assert_eq!(parse(&bytes), list);
    }

    #[test]
    fn lines_that_do_not_parse_are_left_out() {
        let parsed = parse(b"pack-aa 12\ngarbage\npack-bb x\n\npack-cc 3 \n");
        let mut names: Vec<&str> = parsed.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(names, ["pack-aa", "pack-cc"]);
    }
}
