//! Compatibility with JGit, an independent reftable implementation, in both
//! directions: stacks JGit writes read here exactly as JGit dumps them
//! (also after a table is added here through the Vfs), and stacks written
//! here read in JGit exactly as the model they came from.

mod support;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use refstore_fs::flush::{FlushBatch, FlushMethod};
use refstore_refs::reftable::{
    tables_list, LogEntry, LogRecord, LogValue, Merged, Records, RefRecord, RefValue, Stack, Table,
    Version, WriteOptions, Writer,
};
use refstore_refs::{ObjectFormat, ObjectId};
use support::git::{reftable_repo, stdout as git};

/// The tables of the stack in `git_dir/reftable`, oldest first.
fn open_stack(git_dir: &Path) -> Vec<Table> {
    let dir = git_dir.join("reftable");
    let list = std::fs::read(dir.join("tables.list")).unwrap();
    tables_list::parse(&list)
        .unwrap()
        .iter()
        .map(|name| Table::new(std::fs::read(dir.join(name)).unwrap()).unwrap())
        .collect()
}

fn push_log_line(out: &mut String, name: &[u8], entry: &LogEntry) {
    let name = String::from_utf8_lossy(name);
    writeln!(
        out,
        "log {name} {} {} {} {} {} {}\t{}",
        entry.old_id,
        entry.new_id,
        entry.time,
        entry.tz_offset,
        String::from_utf8_lossy(&entry.email),
        String::from_utf8_lossy(&entry.committer_name),
        String::from_utf8_lossy(&entry.message).trim_end_matches('\n'),
    )
    .unwrap();
}

/// The stack at `git_dir` in the format of `JGitRefs dump`, read by this
/// crate's reader.
fn dump_stack(git_dir: &Path) -> String {
    let tables = open_stack(git_dir);
    let merged = Merged::new(&tables);
    let mut out = String::new();
    let mut names = Vec::new();
    for record in merged.refs().unwrap() {
        let record = record.unwrap();
        out.push_str(&ref_line(&record.name, &record.value));
        names.push(record.name);
    }
    for name in &names {
        let mut entries: Vec<LogEntry> = merged
            .logs_for(name)
            .unwrap()
            .map(|r| match r.unwrap().value {
                LogValue::Update(entry) => entry,
                LogValue::Deletion => panic!("merged logs yield no deletions"),
            })
            .collect();
        entries.reverse();
        for entry in &entries {
            push_log_line(&mut out, name, entry);
        }
    }
    out
}

fn ref_line(name: &[u8], value: &RefValue) -> String {
    let name = String::from_utf8_lossy(name);
    match value {
        RefValue::Object(id) => format!("ref {name} {id}\n"),
        RefValue::Peeled { target, peeled } => format!("ref {name} {target} {peeled}\n"),
        RefValue::Symbolic(target) => {
            format!("symref {name} {}\n", String::from_utf8_lossy(target))
        }
        RefValue::Deletion => panic!("no line for a deletion"),
    }
}

/// Asserts two dumps are equal, showing the first lines that differ
/// rather than both dumps whole.
#[track_caller]
fn assert_same_dump(ours: &str, jgit: &str, context: &str) {
    if ours == jgit {
        return;
    }
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), jgit.lines().collect());
    let first = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let show = |lines: &[&str]| {
        lines
            .iter()
            .skip(first)
            .take(5)
            .copied()
            .collect::<Vec<_>>()
            .join("\n")
    };
    panic!(
        "{context}: dumps differ at line {first} ({} vs {} lines)\nhere:\n{}\nJGit:\n{}",
        a.len(),
        b.len(),
        show(&a),
        show(&b)
    );
}

fn jgit(args: &[&str], git_dir: &Path, stdin: &str) -> String {
    let mut all = args.to_vec();
    all.insert(1, git_dir.to_str().unwrap());
    support::jgit::run(&all, stdin)
}

#[test]
fn stacks_written_by_jgit_read_as_jgit_dumps_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    git(dir, &["init", "-q", "-b", "main", "repo"]);
    let repo = dir.join("repo");
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
    git(&repo, &["tag", "-a", "v1", "-m", "tag v1"]);
    git(&repo, &["tag", "light"]);
    git(&repo, &["branch", "topic"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "two"]);
    for i in 0..40 {
        git(
            &repo,
            &[
                "update-ref",
                "--create-reflog",
                "-m",
                &format!("ci {i}"),
                &format!("refs/pipelines/{i:04}"),
                "HEAD",
            ],
        );
    }
    git(&repo, &["pack-refs", "--all"]);
    git(
        &repo,
        &["update-ref", "-m", "moved", "refs/heads/topic", "HEAD"],
    );
    git(&repo, &["update-ref", "refs/remotes/origin/main", "HEAD"]);
    git(
        &repo,
        &[
            "symbolic-ref",
            "refs/remotes/origin/HEAD",
            "refs/remotes/origin/main",
        ],
    );
    let head = git(&repo, &["rev-parse", "HEAD~1"]).trim().to_owned();
    let tip = git(&repo, &["rev-parse", "HEAD"]).trim().to_owned();
    let git_dir = repo.join(".git");
    jgit(&["convert", "reftable"], &git_dir, "");
    let jgit_dump = support::jgit::dump(&git_dir);
    assert!(jgit_dump.contains("ref refs/tags/v1 "));
    assert!(jgit_dump.contains("log refs/pipelines/0039 "));
    assert_same_dump(&dump_stack(&git_dir), &jgit_dump, "converted by JGit");

    // More tables on the stack: updates, deletions (tombstones), a symref.
    let mut batch = String::from("message second batch\n");
    for i in (0..40).step_by(3) {
        writeln!(batch, "delete refs/pipelines/{i:04}").unwrap();
    }
    writeln!(batch, "delete refs/heads/topic {tip}").unwrap();
    writeln!(batch, "update refs/heads/new {head}").unwrap();
    jgit(&["apply"], &git_dir, &batch);
    // A table large enough for JGit to write a ref index and obj blocks.
    let mut many = String::from("message many\n");
    for i in 0..2000 {
        let id = if i % 2 == 0 { &head } else { &tip };
        writeln!(many, "update refs/ci/{i:05} {id}").unwrap();
    }
    jgit(&["apply"], &git_dir, &many);
    let indexed = open_stack(&git_dir)
        .into_iter()
        .any(|t| t.sections().ref_index_position != 0 && t.sections().obj_position != 0);
    assert!(
        indexed,
        "JGit wrote a table with a ref index and obj blocks"
    );
    jgit(
        &["apply"],
        &git_dir,
        "symref refs/heads/alias refs/heads/main\n",
    );
    jgit(&["apply"], &git_dir, "delete refs/tags/light\n");
    assert!(open_stack(&git_dir).len() >= 3, "JGit added tables");
    let jgit_dump = support::jgit::dump(&git_dir);
    assert!(!jgit_dump.contains("refs/pipelines/0000 "));
    assert!(!jgit_dump.contains("refs/tags/light"));
    assert_same_dump(&dump_stack(&git_dir), &jgit_dump, "updated by JGit");

    // One compacted table holds the same.
    jgit(&["compact"], &git_dir, "");
    assert_eq!(open_stack(&git_dir).len(), 1);
    assert_same_dump(&dump_stack(&git_dir), &jgit_dump, "compacted by JGit");

    // A table added here through the Vfs (on the real filesystem) to the
    // stack JGit compacted: JGit reads the stack with it.
    let vfs: std::sync::Arc<dyn refstore_fs::Vfs> =
        std::sync::Arc::new(refstore_fs::real::RealFs::new());
    let mut stack = Stack::open(vfs.clone(), git_dir.join("reftable")).unwrap();
    let mut batch = FlushBatch::new(vfs, FlushMethod::Batch, &git_dir);
    let tip_id: ObjectId = tip.parse().unwrap();
    stack
        .add(
            WriteOptions::default(),
            Duration::ZERO,
            &mut batch,
            |stack, update_index| {
                let old = stack
                    .merged()
                    .ref_record(b"refs/heads/main")
                    .unwrap()
                    .unwrap();
                let RefValue::Object(old_id) = old.value else {
                    panic!("main is direct")
                };
                Ok::<_, String>(Records {
                    refs: vec![
                        RefRecord {
                            name: b"refs/heads/added-here".to_vec(),
                            update_index,
                            value: RefValue::Object(tip_id),
                        },
                        RefRecord {
                            name: b"refs/pipelines/0001".to_vec(),
                            update_index,
                            value: RefValue::Deletion,
                        },
                    ],
                    logs: vec![LogRecord {
                        name: b"refs/heads/added-here".to_vec(),
                        update_index,
                        value: LogValue::Update(LogEntry {
                            old_id: ObjectFormat::Sha1.null_id(),
                            new_id: old_id,
                            committer_name: b"R E Fstore".to_vec(),
                            email: b"refstore@example.com".to_vec(),
                            time: 1_700_000_100,
                            tz_offset: 60,
                            message: b"added by refstore".to_vec(),
                        }),
                    }],
                })
            },
        )
        .unwrap();
    let jgit_dump = support::jgit::dump(&git_dir);
    assert!(jgit_dump.contains(&format!("ref refs/heads/added-here {tip}\n")));
    assert!(jgit_dump.contains("\tadded by refstore\n"));
    assert!(!jgit_dump.contains("refs/pipelines/0001 "));
    assert_same_dump(&dump_stack(&git_dir), &jgit_dump, "added here");

    // A JGit table on top (a tombstone among them), then compacted here:
    // the stack reads the same in JGit as before compaction.
    jgit(&["apply"], &git_dir, "delete refs/heads/new\n");
    let before = support::jgit::dump(&git_dir);
    assert!(!before.contains("refs/heads/new "));
    stack
        .compact_all(WriteOptions::default(), Duration::ZERO, &mut batch)
        .unwrap();
    assert_eq!(open_stack(&git_dir).len(), 1);
    assert_same_dump(&support::jgit::dump(&git_dir), &before, "compacted here");
    let jgit_dump = before;

    // Lookups by id agree with a scan of JGit's dump.
    let tables = open_stack(&git_dir);
    let merged = Merged::new(&tables);
    let head: ObjectId = head.parse().unwrap();
    let mut expected: Vec<String> = jgit_dump
        .lines()
        .filter(|l| l.starts_with("ref ") && l.contains(&head.to_hex()))
        .map(|l| l.split(' ').nth(1).unwrap().to_owned())
        .collect();
    expected.sort();
    let found: Vec<String> = merged
        .refs_for_object(&head)
        .unwrap()
        .into_iter()
        .map(|r| String::from_utf8(r.name).unwrap())
        .collect();
    assert_eq!(found, expected);
}

fn oid(n: u32) -> ObjectId {
    let mut raw = [0u8; 20];
    raw[..4].copy_from_slice(&n.to_be_bytes());
    raw[19] = 1;
    ObjectId::from_raw(&raw).unwrap()
}

/// The refs and reflogs of a model repository, as the transactions that
/// made them: each becomes one table.
struct Model {
    refs: BTreeMap<Vec<u8>, RefValue>,
    logs: BTreeMap<Vec<u8>, Vec<LogEntry>>,
}

impl Model {
    fn dump(&self) -> String {
        let mut out = String::new();
        for (name, value) in &self.refs {
            out.push_str(&ref_line(name, value));
        }
        for name in self.refs.keys() {
            for entry in self.logs.get(name).into_iter().flatten() {
                push_log_line(&mut out, name, entry);
            }
        }
        out
    }
}

/// Writes one table per transaction into a reftable repository at
/// `git_dir`, applying each to `model` as well.
fn write_stack(
    git_dir: &Path,
    options: WriteOptions,
    transactions: &[Vec<(Vec<u8>, RefValue)>],
    model: &mut Model,
) {
    let dir = git_dir.join("reftable");
    std::fs::create_dir_all(&dir).unwrap();
    let mut names = Vec::new();
    for (t, updates) in transactions.iter().enumerate() {
        let index = t as u64 + 1;
        let min = if t + 1 == transactions.len() {
            1
        } else {
            index
        };
        let mut writer = Writer::new(options, min, index).unwrap();
        let mut sorted: BTreeMap<&Vec<u8>, &RefValue> = BTreeMap::new();
        for (name, value) in updates {
            sorted.insert(name, value);
        }
        let mut logs = Vec::new();
        for (&name, &value) in &sorted {
            writer
                .add_ref(&RefRecord {
                    name: name.clone(),
                    update_index: index,
                    value: value.clone(),
                })
                .unwrap();
            let old = match model.refs.get(name) {
                Some(RefValue::Object(id)) | Some(RefValue::Peeled { target: id, .. }) => *id,
                _ => ObjectFormat::Sha1.null_id(),
            };
            let new = match value {
                RefValue::Object(id) | RefValue::Peeled { target: id, .. } => *id,
                _ => ObjectFormat::Sha1.null_id(),
            };
            if let RefValue::Deletion = value {
                model.refs.remove(name);
            } else {
                model.refs.insert(name.clone(), value.clone());
            }
            // A deletion keeps the reflog and records the change to the
            // null id, as the format describes.
            if !matches!(value, RefValue::Symbolic(_)) {
                let entry = LogEntry {
                    old_id: old,
                    new_id: new,
                    committer_name: b"R E Fstore".to_vec(),
                    email: b"refstore@example.com".to_vec(),
                    time: 1_700_000_000 + index,
                    tz_offset: if index % 2 == 0 { 90 } else { -480 },
                    message: format!("transaction {index}").into_bytes(),
                };
                model
                    .logs
                    .entry(name.clone())
                    .or_default()
                    .push(entry.clone());
                logs.push(LogRecord {
                    name: name.clone(),
                    update_index: index,
                    value: LogValue::Update(entry),
                });
            }
        }
        // The last transaction also drops one older reflog entry with a
        // log tombstone.
        if t + 1 == transactions.len() {
            let name = b"refs/tags/v5".to_vec();
            logs.push(LogRecord {
                name: name.clone(),
                update_index: 1,
                value: LogValue::Deletion,
            });
            model.logs.get_mut(&name).unwrap().remove(0);
        }
        logs.sort_by(|a, b| {
            (&a.name, u64::MAX - a.update_index).cmp(&(&b.name, u64::MAX - b.update_index))
        });
        for log in &logs {
            writer.add_log(log).unwrap();
        }
        let name = tables_list::table_name(index, index, 0x1234_0000 + index as u32);
        std::fs::write(dir.join(&name), writer.finish().unwrap()).unwrap();
        names.push(name);
    }
    std::fs::write(dir.join("tables.list"), tables_list::format(&names)).unwrap();
}

fn transactions() -> Vec<Vec<(Vec<u8>, RefValue)>> {
    let mut first = vec![(
        b"HEAD".to_vec(),
        RefValue::Symbolic(b"refs/heads/main".to_vec()),
    )];
    for i in 0..600u32 {
        first.push((
            format!("refs/heads/b{i:04}").into_bytes(),
            RefValue::Object(oid(i % 97)),
        ));
    }
    for i in 0..50u32 {
        first.push((
            format!("refs/tags/v{i}").into_bytes(),
            RefValue::Peeled {
                target: oid(10_000 + i),
                peeled: oid(i),
            },
        ));
    }
    first.push((b"refs/heads/main".to_vec(), RefValue::Object(oid(1))));
    let mut second = Vec::new();
    for i in (0..600u32).step_by(7) {
        second.push((
            format!("refs/heads/b{i:04}").into_bytes(),
            RefValue::Deletion,
        ));
    }
    second.push((b"refs/heads/main".to_vec(), RefValue::Object(oid(2))));
    second.push((b"refs/tags/v3".to_vec(), RefValue::Deletion));
    let third = vec![
        (b"refs/heads/b0007".to_vec(), RefValue::Object(oid(5))),
        (
            b"refs/remotes/origin/HEAD".to_vec(),
            RefValue::Symbolic(b"refs/heads/main".to_vec()),
        ),
    ];
    vec![first, second, third]
}

#[test]
fn stacks_written_here_read_in_jgit_as_their_model() {
    let tmp = tempfile::tempdir().unwrap();
    let layouts = [
        ("default", WriteOptions::default()),
        (
            "small-blocks",
            WriteOptions {
                block_size: 256,
                restart_interval: 3,
                ..WriteOptions::default()
            },
        ),
        (
            "unaligned",
            WriteOptions {
                block_size: 512,
                align_blocks: false,
                index_objects: false,
                ..WriteOptions::default()
            },
        ),
    ];
    for (name, options) in layouts {
        assert_eq!(options.version, Version::V1, "JGit reads version 1 only");
        let git_dir = reftable_repo(tmp.path(), name);
        let mut model = Model {
            refs: BTreeMap::new(),
            logs: BTreeMap::new(),
        };
        write_stack(&git_dir, options, &transactions(), &mut model);
        let expected = model.dump();
        assert!(expected.contains("symref HEAD refs/heads/main\n"));
        assert_same_dump(&expected, &support::jgit::dump(&git_dir), name);
        assert_eq!(dump_stack(&git_dir), expected, "layout {name}");
        // Lookups by id: JGit goes through the obj blocks written here.
        let ids = [oid(1), oid(5), oid(2), oid(10_007), oid(96), oid(424_242)];
        let mut args = vec!["tips"];
        let hex: Vec<String> = ids.iter().map(ObjectId::to_hex).collect();
        args.extend(hex.iter().map(String::as_str));
        let mut expected_tips = String::new();
        // JGit also lists symbolic refs that resolve to the id.
        let resolve = |value: &RefValue| {
            let mut value = value.clone();
            while let RefValue::Symbolic(target) = &value {
                match model.refs.get(target) {
                    Some(next) => value = next.clone(),
                    None => break,
                }
            }
            value
        };
        for id in &ids {
            for (ref_name, value) in &model.refs {
                if resolve(value).object_ids().any(|x| x == id) {
                    writeln!(
                        expected_tips,
                        "tip {id} {}",
                        String::from_utf8_lossy(ref_name)
                    )
                    .unwrap();
                }
            }
        }
        assert!(expected_tips.lines().count() > 10);
        assert_same_dump(&expected_tips, &jgit(&args, &git_dir, ""), name);
        // JGit compacts what it reads back into one table of its own, which
        // reads here as the same (once: JGit's tables are JGit's tables).
        if name == "small-blocks" {
            jgit(&["compact"], &git_dir, "");
            assert_eq!(open_stack(&git_dir).len(), 1);
            assert_same_dump(&dump_stack(&git_dir), &expected, name);
        }
    }
}
