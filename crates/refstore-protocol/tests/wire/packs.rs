//! The objects a pack holds, whatever their order and deltas: the pack is
//! indexed by `git index-pack` (completing a thin pack from the served
//! repository) and the entries the server sent are listed from the index,
//! with how many of them are offset deltas (which a client that did not
//! ask for `ofs-delta` cannot read).

use refstore_testsupport::{isolate, run_with_input, stderr};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// What a pack holds.
pub struct Sent {
    /// The ids of its objects.
    pub ids: BTreeSet<String>,
    /// How many of its entries are offset deltas.
    pub offset_deltas: usize,
}

/// The entry type of an offset delta in a pack entry's header.
const OFS_DELTA: u8 = 6;

/// What `pack` holds (its bases in `repo` if it is thin), or why git
/// could not index it.
pub fn objects(home: &Path, repo: &Path, scratch: &Path, pack: &[u8]) -> Result<Sent, String> {
    let _ = std::fs::remove_dir_all(scratch);
    std::fs::create_dir_all(scratch).unwrap();
    let pack_path = scratch.join("sent.pack");
    let mut index = Command::new("git");
    isolate(&mut index, home)
        .current_dir(repo)
        .args(["index-pack", "--stdin", "--fix-thin"])
        .arg(&pack_path);
    let out = run_with_input(&mut index, pack);
    if !out.status.success() {
        return Err(format!("index-pack: {}", stderr(&out).trim()));
    }
    let idx = std::fs::read(pack_path.with_extension("idx")).unwrap();
    let mut show = Command::new("git");
    isolate(&mut show, home).current_dir(repo).arg("show-index");
    let out = run_with_input(&mut show, &idx);
    assert!(out.status.success(), "show-index: {}", stderr(&out));
    // Bases that completed a thin pack were appended after the sent
    // entries (whose end is the sent pack's trailer).
    let sent_end = pack.len().saturating_sub(20) as u64;
    let mut ids = BTreeSet::new();
    let mut offset_deltas = 0;
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let mut words = line.split(' ');
        let offset: u64 = words.next().unwrap().parse().unwrap();
        if offset < sent_end {
            ids.insert(words.next().unwrap().to_owned());
            offset_deltas += usize::from((pack[offset as usize] >> 4) & 7 == OFS_DELTA);
        }
    }
    Ok(Sent { ids, offset_deltas })
}
