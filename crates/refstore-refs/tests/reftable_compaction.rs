//! Compaction of part of a stack keeps the tombstones that still hide
//! records of older tables, compaction down to the oldest table drops them,
//! and tables a crashed writer left unlisted are removed, but not those a
//! compaction in another process still holds locked.

use refstore_fs::flush::{FlushBatch, FlushMethod};
use refstore_fs::sim::SimFs;
use refstore_fs::Vfs;
use refstore_refs::reftable::{Records, RefRecord, RefValue, Stack, WriteOptions};
use refstore_refs::ObjectId;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const DIR: &str = "/repo/.git/reftable";

fn id(n: u32) -> ObjectId {
    format!("{n:040x}").parse().unwrap()
}

fn add(stack: &mut Stack, vfs: &Arc<dyn Vfs>, refs: Vec<(&str, RefValue)>) {
    let mut batch = FlushBatch::new(vfs.clone(), FlushMethod::Fsync, DIR);
    stack
        .add(
            WriteOptions::default(),
            Duration::ZERO,
            &mut batch,
            |_, update_index| {
                Ok::<_, String>(Records {
                    refs: refs
                        .into_iter()
                        .map(|(name, value)| RefRecord {
                            name: name.as_bytes().to_vec(),
                            update_index,
                            value,
                        })
                        .collect(),
                    logs: Vec::new(),
                })
            },
        )
        .unwrap();
}

fn values_in_table(stack: &Stack, index: usize) -> Vec<(String, RefValue)> {
    stack.tables()[index]
        .refs()
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            (String::from_utf8(r.name).unwrap(), r.value)
        })
        .collect()
}

#[test]
fn tombstones_survive_until_the_oldest_table_is_compacted() {
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    sim.create_dir_all(Path::new(DIR)).unwrap();
    let mut stack = Stack::open(vfs.clone(), DIR).unwrap();
    add(
        &mut stack,
        &vfs,
        vec![("refs/heads/a", RefValue::Object(id(1)))],
    );
    add(&mut stack, &vfs, vec![("refs/heads/a", RefValue::Deletion)]);
    add(
        &mut stack,
        &vfs,
        vec![("refs/heads/b", RefValue::Object(id(2)))],
    );
    let mut batch = FlushBatch::new(vfs.clone(), FlushMethod::Fsync, DIR);

    // The two newest tables: the tombstone of a must stay, or the oldest
    // table's a would come back.
    assert!(stack
        .compact(WriteOptions::default(), Duration::ZERO, &mut batch, |_| {
            Some(1..3)
        })
        .unwrap());
    assert_eq!(stack.names().len(), 2);
    assert_eq!(
        values_in_table(&stack, 1),
        [
            ("refs/heads/a".to_owned(), RefValue::Deletion),
            ("refs/heads/b".to_owned(), RefValue::Object(id(2))),
        ]
    );
    assert_eq!(stack.merged().ref_record(b"refs/heads/a").unwrap(), None);

    // Down to the oldest table nothing remains to hide: the tombstone goes.
    stack
        .compact_all(WriteOptions::default(), Duration::ZERO, &mut batch)
        .unwrap();
    assert_eq!(
        values_in_table(&stack, 0),
        [("refs/heads/b".to_owned(), RefValue::Object(id(2)))]
    );
    let reopened = Stack::open(vfs, DIR).unwrap();
    assert_eq!(reopened.names(), stack.names());
}

#[test]
fn compaction_removes_tables_left_unlisted() {
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    sim.create_dir_all(Path::new(DIR)).unwrap();
    let mut stack = Stack::open(vfs.clone(), DIR).unwrap();
    add(
        &mut stack,
        &vfs,
        vec![("refs/heads/a", RefValue::Object(id(1)))],
    );
    add(
        &mut stack,
        &vfs,
        vec![("refs/heads/b", RefValue::Object(id(2)))],
    );
    // A table written by a writer that crashed before listing it, and a
    // file that is not a table.
    let stale = Path::new(DIR).join("0x000000000003-0x000000000003-0badf00d.ref");
    sim.create_exclusive(&stale)
        .unwrap()
        .write_all(b"partial")
        .unwrap();
    let other = Path::new(DIR).join("notes.txt");
    sim.create_exclusive(&other)
        .unwrap()
        .write_all(b"keep")
        .unwrap();

    let mut batch = FlushBatch::new(vfs.clone(), FlushMethod::Fsync, DIR);
    stack
        .compact_all(WriteOptions::default(), Duration::ZERO, &mut batch)
        .unwrap();
    let mut files: Vec<String> = vfs
        .read_dir(Path::new(DIR))
        .unwrap()
        .into_iter()
        .map(|e| e.name.to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut expected = vec![
        stack.names()[0].clone(),
        "notes.txt".into(),
        "tables.list".into(),
    ];
    expected.sort();
    assert_eq!(files, expected);
}

#[test]
fn compaction_leaves_the_tables_another_compaction_holds() {
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    sim.create_dir_all(Path::new(DIR)).unwrap();
    let mut stack = Stack::open(vfs.clone(), DIR).unwrap();
    add(
        &mut stack,
        &vfs,
        vec![("refs/heads/a", RefValue::Object(id(1)))],
    );
    add(
        &mut stack,
        &vfs,
        vec![("refs/heads/b", RefValue::Object(id(2)))],
    );
    // A table another process's compaction has just replaced: unlisted,
    // still locked by that process, which removes it and its lock next (as
    // JGit does, failing if the table is gone by then). And a table a
    // crashed writer left, unlisted and unlocked.
    let replaced = "000000000001-000000000002-00c0ffee.ref";
    for name in [replaced.to_owned(), format!("{replaced}.lock")] {
        sim.create_exclusive(&Path::new(DIR).join(name))
            .unwrap()
            .write_all(b"replaced")
            .unwrap();
    }
    let crashed = "0x000000000003-0x000000000003-0badf00d.ref";
    sim.create_exclusive(&Path::new(DIR).join(crashed))
        .unwrap()
        .write_all(b"partial")
        .unwrap();

    let mut batch = FlushBatch::new(vfs.clone(), FlushMethod::Fsync, DIR);
    stack
        .compact_all(WriteOptions::default(), Duration::ZERO, &mut batch)
        .unwrap();
    let mut files: Vec<String> = vfs
        .read_dir(Path::new(DIR))
        .unwrap()
        .into_iter()
        .map(|e| e.name.to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut expected = vec![
        stack.names()[0].clone(),
        replaced.to_owned(),
        format!("{replaced}.lock"),
        "tables.list".into(),
    ];
    expected.sort();
    assert_eq!(files, expected);
}
