//! The reftable stack on the crash-simulating filesystem: after a crash at
//! any point of adding a table, the stack opens and reads as all of the old
//! refs or all of the new ones (the new ones once acknowledged); without
//! flushes the harness finds a state that breaks this.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use refstore_fs::flush::{BatchMechanism, FlushBatch, FlushMethod};
use refstore_fs::sim::{CrashOptions, SimFs};
use refstore_fs::Vfs;
use refstore_refs::reftable::{
    LogEntry, LogRecord, LogValue, Records, RefRecord, RefValue, Stack, WriteOptions,
};
use refstore_refs::{ObjectFormat, ObjectId};

const DIR: &str = "/repo/.git/reftable";

fn id(n: u32) -> ObjectId {
    format!("{n:040x}").parse().unwrap()
}

fn name(i: u32) -> Vec<u8> {
    format!("refs/heads/b{i:03}").into_bytes()
}

/// Ref `i` after transaction `t` (0: before any): refs of an odd `i` are
/// deleted by the second transaction.
fn value_after(i: u32, t: u32) -> Option<ObjectId> {
    match t {
        0 => None,
        1 => Some(id(1000 + i)),
        _ if i % 2 == 1 => None,
        _ => Some(id(2000 + i)),
    }
}

fn records(refs: u32, t: u32, update_index: u64) -> Records {
    let mut out = Records::default();
    for i in 0..refs {
        let value = value_after(i, t).map_or(RefValue::Deletion, RefValue::Object);
        out.refs.push(RefRecord {
            name: name(i),
            update_index,
            value,
        });
        out.logs.push(LogRecord {
            name: name(i),
            update_index,
            value: LogValue::Update(LogEntry {
                old_id: value_after(i, t - 1).unwrap_or(ObjectFormat::Sha1.null_id()),
                new_id: value_after(i, t).unwrap_or(ObjectFormat::Sha1.null_id()),
                committer_name: b"C O Mitter".to_vec(),
                email: b"c@example.com".to_vec(),
                time: 1_700_000_000,
                tz_offset: 0,
                message: format!("transaction {t}").into_bytes(),
            }),
        });
    }
    out
}

fn add(
    stack: &mut Stack,
    vfs: &Arc<dyn Vfs>,
    (method, mechanism): (FlushMethod, BatchMechanism),
    refs: u32,
    t: u32,
) {
    let mut batch = FlushBatch::new(vfs.clone(), method, "/repo").with_mechanism(mechanism);
    let options = WriteOptions {
        block_size: 256,
        ..WriteOptions::default()
    };
    stack
        .add(options, Duration::ZERO, &mut batch, |_, update_index| {
            Ok::<_, String>(records(refs, t, update_index))
        })
        .unwrap();
}

fn run(
    refs: u32,
    method: (FlushMethod, BatchMechanism),
    options: &CrashOptions,
) -> Result<usize, String> {
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    sim.create_dir_all(Path::new(DIR)).unwrap();
    let mut stack = Stack::open(vfs.clone(), DIR).unwrap();
    add(
        &mut stack,
        &vfs,
        (FlushMethod::Fsync, BatchMechanism::Syncfs),
        refs,
        1,
    );
    sim.sync_all();
    sim.start_recording();
    add(&mut stack, &vfs, method, refs, 2);
    sim.acknowledge("second transaction");
    assert_eq!(stack.tables().len(), 2);

    let report = sim
        .check_crashes(options, |crashed| {
            let stack =
                Stack::open(crashed.vfs(), DIR).map_err(|e| format!("stack unreadable: {e}"))?;
            let merged = stack.merged();
            // Every ref changes in the second transaction, so each tells
            // which transaction it shows.
            let mut seen = Vec::new();
            for i in 0..refs {
                let value = merged
                    .ref_record(&name(i))
                    .map_err(|e| format!("ref unreadable: {e}"))?
                    .map(|r| match r.value {
                        RefValue::Object(id) => id,
                        other => panic!("unexpected value {other:?}"),
                    });
                match (1..=2).find(|&t| value == value_after(i, t)) {
                    Some(t) => seen.push(t),
                    None => {
                        return Err(format!(
                            "{} reads {value:?}",
                            String::from_utf8_lossy(&name(i))
                        ))
                    }
                }
            }
            let new = seen.iter().all(|&t| t == 2);
            if !new && !seen.iter().all(|&t| t == 1) {
                return Err(format!("a torn transaction: {seen:?}"));
            }
            if !crashed.acknowledged.is_empty() && !new {
                return Err("the acknowledged transaction is missing".into());
            }
            Ok(())
        })
        .map_err(|v| v.to_string())?;
    Ok(report.states)
}

#[test]
fn adding_a_table_is_atomic_and_durable() {
    for method in [
        (FlushMethod::Fsync, BatchMechanism::Syncfs),
        (FlushMethod::Batch, BatchMechanism::Syncfs),
        (FlushMethod::Batch, BatchMechanism::ConcurrentFsync),
    ] {
        let states = run(40, method, &CrashOptions::default())
            .unwrap_or_else(|v| panic!("{method:?}:\n{v}"));
        assert!(states > 10, "{method:?}: only {states} crash states");
    }
}

#[test]
fn no_flushing_can_lose_the_transaction() {
    let violation = run(
        10,
        (FlushMethod::None, BatchMechanism::Syncfs),
        &CrashOptions::default(),
    )
    .unwrap_err();
    assert!(
        violation.contains("missing") || violation.contains("unreadable"),
        "{violation}"
    );
}

#[test]
fn stacks_reopen_as_written() {
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    sim.create_dir_all(Path::new(DIR)).unwrap();
    let mut stack = Stack::open(vfs.clone(), DIR).unwrap();
    assert_eq!(stack.next_update_index(), 1);
    for t in 1..=3 {
        let method = (FlushMethod::Batch, BatchMechanism::ConcurrentFsync);
        add(&mut stack, &vfs, method, 30, t.min(2));
    }
    let reopened = Stack::open(vfs.clone(), DIR).unwrap();
    assert_eq!(reopened.names(), stack.names());
    assert_eq!(reopened.next_update_index(), 4);
    for name in reopened.names() {
        assert!(name.starts_with("0x0000000000"), "{name}");
        assert!(name.ends_with(".ref"), "{name}");
    }
    let live: Vec<RefRecord> = reopened
        .merged()
        .refs()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(live.len(), 15, "odd refs deleted");
    let logs: Vec<LogRecord> = reopened
        .merged()
        .logs_for(b"refs/heads/b000")
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        logs.iter().map(|l| l.update_index).collect::<Vec<_>>(),
        vec![3, 2, 1]
    );
    // A builder's refusal adds nothing and leaves no lock behind.
    let mut batch = FlushBatch::new(vfs.clone(), FlushMethod::Batch, "/repo");
    let refused = stack.add(
        WriteOptions::default(),
        Duration::ZERO,
        &mut batch,
        |_, _| Err::<Records, _>("old value differs"),
    );
    assert!(refused.is_err());
    assert!(!sim.files().keys().any(|p| p.ends_with("tables.list.lock")));
    assert_eq!(Stack::open(vfs, DIR).unwrap().names().len(), 3);
}

/// Everything a stack holds, as its merged view reads it.
fn contents(stack: &Stack) -> Result<(Vec<RefRecord>, Vec<LogRecord>), String> {
    let merged = stack.merged();
    let refs = merged
        .refs()
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| e.to_string())?;
    let logs = merged
        .logs()
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| e.to_string())?;
    Ok((refs, logs))
}

fn compact_run(method: FlushMethod, options: &CrashOptions) -> Result<usize, String> {
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    sim.create_dir_all(Path::new(DIR)).unwrap();
    let mut stack = Stack::open(vfs.clone(), DIR).unwrap();
    for t in 1..=3 {
        let method = (FlushMethod::Fsync, BatchMechanism::Syncfs);
        add(&mut stack, &vfs, method, 20, t.min(2));
    }
    let expected = contents(&stack).unwrap();
    sim.sync_all();
    sim.start_recording();
    let mut batch = FlushBatch::new(vfs.clone(), method, "/repo");
    stack
        .compact_all(WriteOptions::default(), Duration::ZERO, &mut batch)
        .unwrap();
    sim.acknowledge("compaction");
    assert_eq!(stack.tables().len(), 1);
    assert_eq!(contents(&stack).unwrap(), expected);
    let leftovers: Vec<_> = sim
        .files()
        .into_keys()
        .filter(|p| p.extension().is_some_and(|e| e == "ref"))
        .collect();
    assert_eq!(leftovers.len(), 1, "old tables removed: {leftovers:?}");

    let report = sim
        .check_crashes(options, |crashed| {
            let stack =
                Stack::open(crashed.vfs(), DIR).map_err(|e| format!("stack unreadable: {e}"))?;
            let found = contents(&stack)?;
            if found != expected {
                return Err(format!(
                    "compaction changed the content: {} refs, {} logs",
                    found.0.len(),
                    found.1.len()
                ));
            }
            Ok(())
        })
        .map_err(|v| v.to_string())?;
    Ok(report.states)
}

#[test]
fn compaction_keeps_every_live_record_through_crashes() {
    for method in [FlushMethod::Fsync, FlushMethod::Batch] {
        let states = compact_run(method, &CrashOptions::default())
            .unwrap_or_else(|v| panic!("{method:?}:\n{v}"));
        assert!(states > 10, "{method:?}: only {states} crash states");
    }
    let violation = compact_run(FlushMethod::None, &CrashOptions::default()).unwrap_err();
    assert!(
        violation.contains("unreadable") || violation.contains("changed the content"),
        "{violation}"
    );
}
