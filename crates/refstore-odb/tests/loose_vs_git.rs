//! Loose objects written by `LooseWriter` on the real filesystem: the ids
//! git computes, contents git reads back, and a repository `git fsck --full`
//! accepts; existing objects are freshened rather than rewritten.

mod support;

use refstore_fs::flush::FlushMethod;
use refstore_fs::real::RealFs;
use refstore_hash::ObjectFormat;
use refstore_odb::{loose_object_path, LooseWriter, ObjectKind, Odb};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use support::{run, run_with_input};

fn writer(git_dir: &Path, format: ObjectFormat, method: FlushMethod) -> LooseWriter {
    LooseWriter::new(
        Arc::new(RealFs::new()),
        git_dir.join("objects"),
        format,
        method,
    )
}

fn git_hash(dir: &Path, kind: &str, data: &[u8]) -> String {
    let out = run_with_input(dir, &["hash-object", "-t", kind, "--stdin"], data);
    String::from_utf8(out).unwrap().trim().to_owned()
}

fn write_history(git_dir: &Path, format: ObjectFormat, method: FlushMethod) {
    let mut w = writer(git_dir, format, method);
    let mut expected = Vec::new();
    let mut parent = None;
    for i in 0..5 {
        let blob = format!("content {i}\n").repeat(i * 10 + 1);
        let blob_id = w.write(ObjectKind::Blob, blob.as_bytes()).unwrap();
        let mut tree = format!("100644 file{i}\0").into_bytes();
        tree.extend_from_slice(blob_id.as_bytes());
        let tree_id = w.write(ObjectKind::Tree, &tree).unwrap();
        let mut commit = format!("tree {tree_id}\n");
        if let Some(p) = parent {
            commit.push_str(&format!("parent {p}\n"));
        }
        commit.push_str(
            "author A <a@example.com> 1700000000 +0000\n\
             committer A <a@example.com> 1700000000 +0000\n\nround\n",
        );
        let commit_id = w.write(ObjectKind::Commit, commit.as_bytes()).unwrap();
        expected.push(("blob", blob.into_bytes(), blob_id));
        expected.push(("tree", tree, tree_id));
        expected.push(("commit", commit.into_bytes(), commit_id));
        parent = Some(commit_id);
    }
    let tip = parent.unwrap();
    let tag = format!(
        "object {tip}\ntype commit\ntag v1\ntagger T <t@example.com> 1700000000 +0000\n\nrelease\n"
    );
    let tag_id = w.write(ObjectKind::Tag, tag.as_bytes()).unwrap();
    expected.push(("tag", tag.into_bytes(), tag_id));
    // Nothing is visible before the commit.
    assert!(!loose_object_path(&git_dir.join("objects"), &tag_id).exists());
    w.commit().unwrap();

    for (kind, data, id) in &expected {
        assert_eq!(id.to_hex(), git_hash(git_dir, kind, data), "{kind} id");
        let read = run_with_input(git_dir, &["cat-file", kind, &id.to_hex()], b"");
        assert_eq!(&read, data, "git reads {kind} {id}");
    }
    run(git_dir, &["update-ref", "refs/tags/v1", &tag_id.to_hex()]);
    run(git_dir, &["fsck", "--full", "--strict", "--no-dangling"]);
    let odb = Odb::open(&git_dir.join("objects"), format).unwrap();
    assert_eq!(odb.peel(&tag_id).unwrap(), Some(tip));
    assert_no_temp_files(git_dir);
}

fn assert_no_temp_files(git_dir: &Path) {
    for fanout in std::fs::read_dir(git_dir.join("objects")).unwrap() {
        let fanout = fanout.unwrap().path();
        if !fanout.is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(&fanout).unwrap() {
            let name = entry.unwrap().file_name();
            assert!(
                !name.to_string_lossy().starts_with("tmp_obj_"),
                "temporary file left: {}",
                fanout.join(name).display()
            );
        }
    }
}

#[test]
fn every_method_writes_what_git_reads() {
    for method in [
        FlushMethod::None,
        FlushMethod::Fsync,
        FlushMethod::WriteoutOnly,
        FlushMethod::Batch,
    ] {
        let tmp = tempfile::tempdir().unwrap();
        run(tmp.path(), &["init", "-q", "--bare", "."]);
        write_history(tmp.path(), ObjectFormat::Sha1, method);
    }
}

#[test]
fn sha256_objects() {
    let tmp = tempfile::tempdir().unwrap();
    run(
        tmp.path(),
        &["init", "-q", "--bare", "--object-format=sha256", "."],
    );
    write_history(tmp.path(), ObjectFormat::Sha256, FlushMethod::Batch);
}

#[test]
fn existing_objects_are_freshened_not_rewritten() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    run(dir, &["init", "-q", "--bare", "."]);
    let id = git_hash(dir, "blob", b"old\n");
    run_with_input(dir, &["hash-object", "-w", "--stdin"], b"old\n");
    let path = dir.join("objects").join(&id[..2]).join(&id[2..]);
    let before = std::fs::read(&path).unwrap();
    let long_ago = SystemTime::now() - Duration::from_secs(30 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();

    let mut w = writer(dir, ObjectFormat::Sha1, FlushMethod::Batch);
    let written = w.write(ObjectKind::Blob, b"old\n").unwrap();
    // The same object twice in one batch is staged once.
    let new = w.write(ObjectKind::Blob, b"new\n").unwrap();
    assert_eq!(w.write(ObjectKind::Blob, b"new\n").unwrap(), new);
    w.commit().unwrap();

    assert_eq!(written.to_hex(), id);
    assert_eq!(std::fs::read(&path).unwrap(), before, "not rewritten");
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    assert!(
        modified > long_ago + Duration::from_secs(24 * 3600),
        "freshened"
    );
    assert_eq!(run(dir, &["cat-file", "-p", &new.to_hex()]), "new");
    assert_no_temp_files(dir);
}

#[test]
fn literal_objects_and_abandoned_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    run(dir, &["init", "-q", "--bare", "."]);
    let mut w = writer(dir, ObjectFormat::Sha1, FlushMethod::Batch);
    let odd = w.write_literally(b"bogus", b"anything\n").unwrap();
    w.commit().unwrap();
    let git_odd = run_with_input(
        dir,
        &["hash-object", "-t", "bogus", "--literally", "--stdin"],
        b"anything\n",
    );
    assert_eq!(odd.to_hex(), String::from_utf8(git_odd).unwrap().trim());
    assert!(loose_object_path(&dir.join("objects"), &odd).exists());

    // A writer dropped before its commit leaves neither objects nor
    // temporary files.
    let mut w = writer(dir, ObjectFormat::Sha1, FlushMethod::Batch);
    let abandoned = w.write(ObjectKind::Blob, b"never committed\n").unwrap();
    drop(w);
    assert!(!loose_object_path(&dir.join("objects"), &abandoned).exists());
    assert_no_temp_files(dir);
}
