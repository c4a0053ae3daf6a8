//! Moving a repository's refs between the files format and a reftable
//! stack (`refs migrate --ref-format=reftable|files`), reflogs included,
//! with a crash-safe switch.
//!
//! To reftable ([`files_to_reftable`]):
//! 1. Every ref (HEAD, loose and packed refs, peeled values) and every
//!    reflog entry is read and written as ONE table into a new `reftable/`
//!    directory, durable before it is listed.
//! 2. The switch: `config` is replaced (through `config.lock`) by one that
//!    names the reftable format. Before this rename the repository is in
//!    the files format and the new stack is ignored (a later migration
//!    removes it and starts over); after it, the stack holds every ref.
//! 3. The files-format refs are removed and the stubs git writes take
//!    their place (`HEAD` naming `refs/heads/.invalid`, `refs/heads` a file).
//!
//! To files ([`reftable_to_files`]) the same three steps run the other way:
//! `packed-refs` (peeled values where the stack has them, no claim about
//! the others), symbolic refs and `HEAD` as loose files and the reflogs are
//! written and made durable, `config` drops `extensions.refStorage`, and
//! the stack is removed.

use super::backend::{ReftableBackend, ReftableOptions};
use super::log_record::{LogEntry, LogRecord, LogValue};
use super::ref_record::{RefRecord, RefValue};
use super::stack::{Records, Stack, StackError};
use crate::files::{packed, reflog, FilesBackend};
use crate::value::{Ref, Target};
use crate::{ObjectFormat, ObjectId, RefName};
use refstore_fs::flush::{FlushBatch, FlushMethod};
use refstore_fs::lock::LockFile;
use refstore_fs::{FileKind, Vfs};
use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// What a migration moved (or would move, in a dry run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Migrated {
    /// Refs, HEAD included.
    pub refs: usize,
    /// Reflog entries.
    pub log_entries: usize,
}

/// Why a migration stopped; the repository is unchanged unless the
/// message says otherwise.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// Reading the refs failed.
    #[error("cannot read the refs to migrate: {0}")]
    Read(#[from] crate::error::ReadError),
    /// Some loose refs hold no valid value.
    #[error("cannot migrate broken refs ({}); fix or delete them first", .0.join(", "))]
    Broken(Vec<String>),
    /// A reflog line cannot be parsed.
    #[error("reflog '{path}' line {line} is malformed; repair or delete the reflog first")]
    BadReflog {
        /// The reflog file.
        path: String,
        /// Its line number, from 1.
        line: usize,
    },
    /// Writing the stack failed before the switch: nothing changed.
    #[error(
        "cannot write the new reftable stack (the repository still uses the files format): {0}"
    )]
    Stack(#[from] StackError),
    /// The filesystem failed.
    #[error("{0}")]
    Fs(#[from] refstore_fs::Error),
    /// `config.lock` is held.
    #[error("cannot switch the repository's ref format: {0}")]
    Locked(String),
}

/// Told how far a migration is, for a progress display: `start` with the
/// number of refs, `advance` as each one is handled.
pub trait Progress {
    /// The migration handles `total` refs.
    fn start(&self, total: u64);
    /// `n` more refs were handled.
    fn advance(&self, n: u64);
}

/// No progress display.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _total: u64) {}
    fn advance(&self, _n: u64) {}
}

/// Migrates the refs of `files` (a repository whose git directory and
/// common directory are `git_dir`) into a reftable stack. With `dry_run`
/// only counts what would move.
pub fn files_to_reftable(
    files: &FilesBackend,
    git_dir: &Path,
    options: &ReftableOptions,
    flush: FlushMethod,
    dry_run: bool,
    progress: &dyn Progress,
) -> Result<Migrated, MigrateError> {
    let vfs = files.vfs().clone();
    let listing = files.list(b"")?;
    if !listing.broken.is_empty() {
        return Err(MigrateError::Broken(
            listing.broken.iter().map(ToString::to_string).collect(),
        ));
    }
    let head = RefName::new("HEAD").expect("valid");
    let mut refs: Vec<Ref> = files.read(&head)?.into_iter().collect();
    refs.extend(listing.refs);
    let logs = read_reflog_files(&vfs, git_dir, &refs, files.object_format(), progress)?;
    let migrated = Migrated {
        refs: refs.len(),
        log_entries: logs.len(),
    };
    if dry_run {
        return Ok(migrated);
    }
    // The refs take the last update index of the reflog entries (1, 2,
    // ... per ref, oldest first), so every log key is unique.
    let last = logs.iter().map(|l| l.update_index).max().unwrap_or(1);
    let records = Records {
        refs: refs.into_iter().map(|r| ref_record(r, last)).collect(),
        logs,
    };

    // 1. The new stack, from scratch: a stack left by an interrupted
    // migration was never switched to, so it holds nothing of value.
    let dir = git_dir.join("reftable");
    remove_tree(&vfs, &dir)?;
    let mut batch =
        FlushBatch::new(vfs.clone(), flush, git_dir).with_mechanism(options.batch_mechanism);
    batch.create_dir_all(&dir)?;
    batch.dir_changed(git_dir);
    let mut stack = Stack::open(vfs.clone(), &dir)?;
    let lock = stack.lock(options.lock_timeout)?;
    stack.add_locked(lock, options.write, last, records, &mut batch)?;

    // 2. The switch.
    switch_config(&vfs, git_dir, config_for_reftable, &mut batch)?;

    // 3. The files-format refs go; git's stubs take their place.
    for gone in ["packed-refs", "logs/HEAD"] {
        let _ = vfs.unlink(&git_dir.join(gone));
    }
    remove_tree(&vfs, &git_dir.join("logs/refs"))?;
    remove_tree(&vfs, &git_dir.join("refs"))?;
    vfs.mkdir(&git_dir.join("refs"))?;
    write_reftable_stubs(&vfs, git_dir, &mut batch)?;
    Ok(migrated)
}

/// The reflog entries of `refs` in the files format, as log records: each
/// ref's entries get update indexes 1, 2, ... oldest first.
fn read_reflog_files(
    vfs: &Arc<dyn Vfs>,
    git_dir: &Path,
    refs: &[Ref],
    format: ObjectFormat,
    progress: &dyn Progress,
) -> Result<Vec<LogRecord>, MigrateError> {
    // The reflogs that exist are found by walking `logs/` once: most refs
    // of a large repository have none, and looking each one up would cost
    // a failed open per ref.
    let reflogs = reflog_names(vfs, &git_dir.join("logs"))?;
    let mut logs = Vec::new();
    progress.start(refs.len() as u64);
    for r in refs {
        progress.advance(1);
        if !reflogs.contains(r.name.as_bytes()) {
            continue;
        }
        let path = git_dir.join("logs").join(path_of(&r.name));
        let text = match vfs.read(&path) {
            Ok(text) => text,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e.into()),
        };
        for (i, line) in text
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .enumerate()
        {
            let entry = parse_line(line, format).ok_or_else(|| MigrateError::BadReflog {
                path: path.display().to_string(),
                line: i + 1,
            })?;
            logs.push(LogRecord {
                name: r.name.as_bytes().to_vec(),
                update_index: i as u64 + 1,
                value: LogValue::Update(entry),
            });
        }
    }
    Ok(logs)
}

/// A ref as a reftable record at `update_index`.
fn ref_record(r: Ref, update_index: u64) -> RefRecord {
    RefRecord {
        name: r.name.as_bytes().to_vec(),
        update_index,
        value: match (r.target, r.peeled) {
            (Target::Object(target), Some(peeled)) => RefValue::Peeled { target, peeled },
            (Target::Object(id), None) => RefValue::Object(id),
            (Target::Symbolic(to), _) => RefValue::Symbolic(to.as_bytes().to_vec()),
        },
    }
}

/// The switch between formats: `config` replaced, through `config.lock`,
/// by `rewrite` of it, and made durable.
fn switch_config(
    vfs: &Arc<dyn Vfs>,
    git_dir: &Path,
    rewrite: fn(&[u8]) -> Vec<u8>,
    batch: &mut FlushBatch,
) -> Result<(), MigrateError> {
    let config_path = git_dir.join("config");
    let config = vfs.read(&config_path)?;
    let mut lock = LockFile::acquire(vfs, &config_path, Duration::from_millis(100))
        .map_err(|e| MigrateError::Locked(e.to_string()))?;
    lock.write_all(&rewrite(&config))?;
    lock.stage(batch)?;
    batch.flush_files()?;
    lock.commit(batch)?;
    batch.flush_dirs()?;
    Ok(())
}

/// The files git writes in a reftable repository where a files-format
/// reader would look for refs: `refs/heads` a file, and a `HEAD` naming
/// `refs/heads/.invalid`.
fn write_reftable_stubs(
    vfs: &Arc<dyn Vfs>,
    git_dir: &Path,
    batch: &mut FlushBatch,
) -> Result<(), MigrateError> {
    let stubs: [(&str, &[u8]); 2] = [
        ("refs/heads", b"this repository uses the reftable format\n"),
        ("HEAD", b"ref: refs/heads/.invalid\n"),
    ];
    for (name, content) in stubs {
        let mut lock = LockFile::acquire(vfs, git_dir.join(name), Duration::ZERO)
            .map_err(|e| MigrateError::Locked(e.to_string()))?;
        lock.write_all(content)?;
        lock.stage(batch)?;
        batch.flush_files()?;
        lock.commit(batch)?;
    }
    batch.dir_changed(&git_dir.join("refs"));
    batch.flush_dirs()?;
    Ok(())
}

/// Migrates the refs of `reftable` (a repository whose git directory and
/// common directory are `git_dir`) into the files format. With `dry_run`
/// only counts what would move.
pub fn reftable_to_files(
    reftable: &ReftableBackend,
    git_dir: &Path,
    flush: FlushMethod,
    dry_run: bool,
    progress: &dyn Progress,
) -> Result<Migrated, MigrateError> {
    let vfs = reftable.vfs().clone();
    let stack = reftable.stack()?;
    let head = RefName::new("HEAD").expect("valid");
    let mut refs: Vec<Ref> = reftable.read(&head)?.into_iter().collect();
    refs.extend(reftable.list(b"")?.refs);
    let logs = read_stack_reflogs(&stack, &refs, progress)?;
    let migrated = Migrated {
        refs: refs.len(),
        log_entries: logs.iter().map(|(_, e)| e.len()).sum(),
    };
    if dry_run {
        return Ok(migrated);
    }

    // 1. The files-format refs, from scratch: what an interrupted migration
    // left was never switched to.
    let _ = vfs.unlink(&git_dir.join("packed-refs"));
    remove_tree(&vfs, &git_dir.join("logs"))?;
    remove_tree(&vfs, &git_dir.join("refs"))?;
    let mut batch = FlushBatch::new(vfs.clone(), flush, git_dir)
        .with_mechanism(reftable.options().batch_mechanism);
    for dir in ["refs/heads", "refs/tags"] {
        batch.create_dir_all(&git_dir.join(dir))?;
    }
    let locks = stage_ref_files(&vfs, git_dir, refs, &head, &mut batch)?;
    write_reflog_files(&vfs, git_dir, &logs, &mut batch)?;
    batch.flush_files()?;
    refstore_fs::lock::commit_all(locks, &mut batch)?;
    batch.flush_dirs()?;

    // 2. The switch.
    switch_config(&vfs, git_dir, config_for_files, &mut batch)?;

    // 3. The stack goes.
    remove_tree(&vfs, &git_dir.join("reftable"))?;
    batch.dir_changed(git_dir);
    batch.flush_dirs()?;
    Ok(migrated)
}

/// The reflog entries the stack holds for each of `refs`, oldest first
/// (as a reflog file has them; the stack gives the newest first); refs
/// without entries left out.
fn read_stack_reflogs(
    stack: &Stack,
    refs: &[Ref],
    progress: &dyn Progress,
) -> Result<Vec<(RefName, Vec<LogEntry>)>, MigrateError> {
    let merged = stack.merged();
    let table_error = |error| crate::error::ReadError::Reftable {
        path: stack.dir().to_owned(),
        error,
    };
    let mut logs = Vec::new();
    progress.start(refs.len() as u64);
    for r in refs {
        progress.advance(1);
        let mut entries = Vec::new();
        for record in merged.logs_for(r.name.as_bytes()).map_err(table_error)? {
            if let LogValue::Update(entry) = record.map_err(table_error)?.value {
                entries.push(entry);
            }
        }
        entries.reverse();
        if !entries.is_empty() {
            logs.push((r.name.clone(), entries));
        }
    }
    Ok(logs)
}

/// Stages the refs as files: `HEAD` and symbolic refs loose, every other
/// ref in `packed-refs`; the locks to commit once they are durable.
fn stage_ref_files(
    vfs: &Arc<dyn Vfs>,
    git_dir: &Path,
    refs: Vec<Ref>,
    head: &RefName,
    batch: &mut FlushBatch,
) -> Result<Vec<LockFile>, MigrateError> {
    let mut locks = Vec::new();
    let mut packed_refs = Vec::new();
    for r in refs {
        match r.target {
            Target::Object(id) if r.name != *head => {
                packed_refs.push((r.name, id, r.peeled));
                continue;
            }
            _ => {}
        }
        let path = git_dir.join(path_of(&r.name));
        batch.create_dir_all(path.parent().expect("refs have a directory"))?;
        let mut lock = LockFile::acquire(vfs, &path, Duration::ZERO)
            .map_err(|e| MigrateError::Locked(e.to_string()))?;
        lock.write_all(&crate::files::loose::format(&r.target))?;
        lock.stage(batch)?;
        locks.push(lock);
    }
    // Refs the stack holds without a peeled value may still be tags: the
    // header claims nothing about them ("sorted" only).
    let mut packed_text = b"# pack-refs with: sorted \n".to_vec();
    packed_text.extend_from_slice(&packed::write(packed_refs)[packed::HEADER.len()..]);
    let mut lock = LockFile::acquire(vfs, git_dir.join("packed-refs"), Duration::ZERO)
        .map_err(|e| MigrateError::Locked(e.to_string()))?;
    lock.write_all(&packed_text)?;
    lock.stage(batch)?;
    locks.push(lock);
    Ok(locks)
}

/// Writes and stages a reflog file under `logs/` for each ref of `logs`.
fn write_reflog_files(
    vfs: &Arc<dyn Vfs>,
    git_dir: &Path,
    logs: &[(RefName, Vec<LogEntry>)],
    batch: &mut FlushBatch,
) -> Result<(), MigrateError> {
    for (name, entries) in logs {
        let path = git_dir.join("logs").join(path_of(name));
        let parent = path.parent().expect("logs have a directory");
        batch.create_dir_all(parent)?;
        batch.dir_changed(parent);
        let mut file = vfs.create_exclusive(&path)?;
        for entry in entries {
            let signature = format!(
                "{} <{}> {} {}",
                String::from_utf8_lossy(&entry.committer_name),
                String::from_utf8_lossy(&entry.email),
                entry.time,
                tz_text(entry.tz_offset)
            );
            let message = String::from_utf8_lossy(&entry.message);
            let message = message.trim_end_matches('\n');
            let message = (!message.is_empty()).then_some(message);
            file.write_all(&reflog::line(
                &entry.old_id,
                &entry.new_id,
                &signature,
                message,
            ))?;
        }
        batch.stage(file)?;
    }
    Ok(())
}

/// `+hhmm` / `-hhmm` for minutes east of GMT.
fn tz_text(minutes: i16) -> String {
    let sign = if minutes < 0 { '-' } else { '+' };
    let minutes = minutes.unsigned_abs();
    format!("{sign}{:02}{:02}", minutes / 60, minutes % 60)
}

/// `config` without `extensions.refStorage`, everything else kept.
fn config_for_files(config: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(config);
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let key = line
            .trim_start()
            .split(['=', ' ', '\t'])
            .next()
            .unwrap_or("");
        if !key.eq_ignore_ascii_case("refstorage") {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.into_bytes()
}

/// `config` with `core.repositoryFormatVersion = 1` and
/// `extensions.refStorage = reftable`, everything else kept.
fn config_for_reftable(config: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(config);
    let mut out = String::with_capacity(text.len() + 40);
    for line in text.lines() {
        let key = line
            .trim_start()
            .split(['=', ' ', '\t'])
            .next()
            .unwrap_or("");
        if key.eq_ignore_ascii_case("repositoryformatversion") {
            out.push_str("\trepositoryformatversion = 1\n");
        } else if !key.eq_ignore_ascii_case("refstorage") {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str("[extensions]\n\trefstorage = reftable\n");
    out.into_bytes()
}

/// Removes `dir` and everything below it; a missing `dir` is fine.
fn remove_tree(vfs: &std::sync::Arc<dyn refstore_fs::Vfs>, dir: &Path) -> Result<(), MigrateError> {
    let entries = match vfs.read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    for entry in entries {
        let path = dir.join(&entry.name);
        match entry.kind {
            FileKind::Dir => remove_tree(vfs, &path)?,
            _ => vfs.unlink(&path)?,
        }
    }
    vfs.rmdir(dir)?;
    Ok(())
}

/// The names of the refs with a reflog file under `logs` (`HEAD`,
/// `refs/...`), found in one walk of the directory tree.
fn reflog_names(
    vfs: &std::sync::Arc<dyn refstore_fs::Vfs>,
    logs: &Path,
) -> Result<HashSet<Vec<u8>>, MigrateError> {
    let mut names = HashSet::new();
    let mut pending = vec![(logs.to_path_buf(), Vec::new())];
    while let Some((dir, prefix)) = pending.pop() {
        let entries = match vfs.read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e.into()),
        };
        for entry in entries {
            let mut name = prefix.clone();
            name.extend_from_slice(entry.name.as_bytes());
            match entry.kind {
                FileKind::Dir => {
                    name.push(b'/');
                    pending.push((dir.join(&entry.name), name));
                }
                _ => {
                    names.insert(name);
                }
            }
        }
    }
    Ok(names)
}

fn path_of(name: &RefName) -> &Path {
    Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.as_bytes()))
}

/// One files-format reflog line:
/// `<old> <new> <name> <<email>> <seconds> <tz>[\t<message>]`, or `None`
/// for a line that is not one.
#[doc(hidden)]
pub fn parse_line(line: &[u8], format: ObjectFormat) -> Option<LogEntry> {
    let hex = format.hex_len();
    // `<old> <new> <who>`: git refuses a line whose ids are not followed by
    // single spaces.
    if line.get(hex) != Some(&b' ') || line.get(2 * hex + 1) != Some(&b' ') {
        return None;
    }
    let old_id = ObjectId::from_hex_in(line.get(..hex)?, format).ok()?;
    let new_id = ObjectId::from_hex_in(line.get(hex + 1..2 * hex + 1)?, format).ok()?;
    let rest = line.get(2 * hex + 2..)?;
    let (who, message) = match rest.iter().position(|&b| b == b'\t') {
        Some(tab) => (&rest[..tab], &rest[tab + 1..]),
        None => (rest, &b""[..]),
    };
    let open = who.iter().position(|&b| b == b'<')?;
    let close = who.iter().rposition(|&b| b == b'>')?;
    let name = who[..open].strip_suffix(b" ").unwrap_or(&who[..open]);
    let when = std::str::from_utf8(who.get(close + 1..)?).ok()?;
    let mut fields = when.split_whitespace();
    let time = fields.next()?.parse().ok()?;
    let tz: i16 = fields.next()?.parse().ok()?;
    // Widened: `-32768` has no 16-bit absolute value, and its minutes
    // (-19688) fit the field again.
    let hhmm = i32::from(tz).abs();
    let tz_offset = (i32::from(tz.signum()) * (hhmm / 100 * 60 + hhmm % 100)) as i16;
    let mut message = message.to_vec();
    if !message.is_empty() {
        message.push(b'\n');
    }
    Some(LogEntry {
        old_id,
        new_id,
        committer_name: name.to_vec(),
        email: who.get(open + 1..close)?.to_vec(),
        time,
        tz_offset,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_must_be_followed_by_spaces() {
        let zero = "0".repeat(40);
        let one = "1".repeat(40);
        let good = format!("{zero} {one} C O Mitter <c@example.com> 1700000000 +0000\tmsg");
        assert!(parse_line(good.as_bytes(), ObjectFormat::Sha1).is_some());
        for bad in [
            format!("{zero}x{one} C O Mitter <c@example.com> 1700000000 +0000\tmsg"),
            format!("{zero} {one}xC O Mitter <c@example.com> 1700000000 +0000\tmsg"),
        ] {
            assert!(
                parse_line(bad.as_bytes(), ObjectFormat::Sha1).is_none(),
                "{bad}"
            );
        }
    }

    #[test]
    fn reflog_lines_and_config() {
        let line = format!(
            "{} {} C O Mitter <c@example.com> 1700000000 -0130\tcommit: one",
            "0".repeat(40),
            "1".repeat(40)
        );
        let entry = parse_line(line.as_bytes(), ObjectFormat::Sha1).unwrap();
        assert_eq!(entry.committer_name, b"C O Mitter");
        assert_eq!(entry.email, b"c@example.com");
        assert_eq!((entry.time, entry.tz_offset), (1_700_000_000, -90));
        assert_eq!(entry.message, b"commit: one\n");
        assert!(parse_line(b"garbage", ObjectFormat::Sha1).is_none());
        // The most negative 16-bit offset once overflowed on negation.
        let line = format!("{} {} A <a@b> 1 -32768", "0".repeat(40), "1".repeat(40));
        let entry = parse_line(line.as_bytes(), ObjectFormat::Sha1).unwrap();
        assert_eq!(entry.tz_offset, -(327 * 60 + 68));
        let config = b"[core]\n\trepositoryformatversion = 0\n\tbare = true\n";
        assert_eq!(
            String::from_utf8(config_for_reftable(config)).unwrap(),
            "[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\trefstorage = reftable\n"
        );
        assert_eq!(
            String::from_utf8(config_for_files(&config_for_reftable(config))).unwrap(),
            "[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n"
        );
        assert_eq!(
            (tz_text(-90), tz_text(330), tz_text(0)),
            ("-0130".into(), "+0530".into(), "+0000".into())
        );
    }
}
