//! A fault-injection matrix driver over `SimFs`: run a workload once to
//! trace its operations, then once per fault, failing each operation in
//! turn (EIO at every operation, ENOSPC at every one that can run out of
//! space), and check what the store looks like afterwards.
//!
//! Every faulted run must:
//! - not panic, and fail with a message naming the OS error (or succeed,
//!   when the store absorbed the fault, with the fault-free result);
//! - leave no lock file (`*.lock`) and no temporary file (`tmp_*`);
//! - if it failed before the workload's first visible change (the first
//!   rename, link, unlink or truncate of the fault-free run), or at it: leave every
//!   file exactly as before, and the store reading as before;
//! - if it failed after the last visible change (a flush): leave the store
//!   reading as the fault-free run does (the change is made, its
//!   durability could not be confirmed, and failure is reported);
//! - in between: satisfy the case's own rule (by default: each file holds
//!   its content from before or from the fault-free run, nothing else);
//! - leave a store that opens and takes the case's next write.
//!
//! A batch workload (git's `update-ref --batch-updates`) may also succeed
//! with a faulted update rejected instead ([`run_batch`]): then every
//! rejection the fault-free run did not make names the OS error, no lock or
//! temporary file is left, and the case's batch rule decides the store
//! (typically: it reads as the transaction without the rejected updates).
//!
//! The matrices of refstore-refs and refstore-odb run on it.

use refstore_fs::flush::FlushMethod;
use refstore_fs::sim::{Fault, SimFs, EIO, ENOSPC};
use refstore_fs::{Op, Vfs};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// The flush methods every matrix runs its workloads under.
pub const METHODS: [FlushMethod; 3] = [FlushMethod::Fsync, FlushMethod::Batch, FlushMethod::None];

/// The files of a filesystem by path, with the random parts of reftable
/// table names masked (they differ between runs).
pub type FileMap = BTreeMap<PathBuf, Vec<u8>>;

/// One fault placed in a run.
#[derive(Debug, Clone)]
pub struct Placed {
    /// Index of the failed operation among the workload's operations.
    pub index: usize,
    /// Its kind and path, from the fault-free run.
    pub op: Op,
    /// The path it applies to.
    pub path: PathBuf,
    /// The error it fails with.
    pub errno: i32,
}

impl std::fmt::Display for Placed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at operation {} ({:?} {})",
            if self.errno == ENOSPC {
                "ENOSPC"
            } else {
                "EIO"
            },
            self.index,
            self.op,
            self.path.display()
        )
    }
}

/// What a check of a faulted run gets to see.
pub struct Faulted<'a> {
    /// The fault.
    pub fault: &'a Placed,
    /// The workload's result.
    pub result: &'a Result<(), String>,
    /// The filesystem after the run.
    pub fs: &'a SimFs,
    /// Files before the workload.
    pub before: &'a FileMap,
    /// Files after the fault-free run.
    pub after: &'a FileMap,
    /// The store's logical state (refs, logs, objects) before.
    pub state_before: &'a str,
    /// The store's logical state after the fault-free run.
    pub state_after: &'a str,
    /// The store's logical state now.
    pub state_now: &'a str,
    /// The operations of the fault-free run (the fault is at
    /// `fault.index`).
    pub trace: &'a [(Op, PathBuf)],
    /// The updates a batch workload rejected in this run, as (ref, message)
    /// (empty for other workloads).
    pub rejected: &'a [(String, String)],
}

/// A rule for a faulted run.
pub type Rule<'a> = &'a dyn Fn(&Faulted<'_>) -> Result<(), String>;

/// A workload and how to judge it.
pub struct Case<'a> {
    /// Names the case in messages and the summary.
    pub label: String,
    /// Builds the filesystem the workload starts from (deterministic).
    pub setup: &'a dyn Fn() -> SimFs,
    /// The operation under test.
    pub workload: &'a dyn Fn(&SimFs) -> Result<(), String>,
    /// Renders the store's logical state; fails if the store cannot be read.
    pub state: &'a dyn Fn(&SimFs) -> Result<String, String>,
    /// Decides a run that failed between the first and the last visible
    /// change; `None`: each file before or after ([`files_old_or_new`]).
    pub partial: Option<Rule<'a>>,
    /// An extra check of a run whose fault the store absorbed (it reads as
    /// after the fault-free run in any case).
    pub absorbed: Option<Rule<'a>>,
    /// A write run after the faulted one, which must succeed.
    pub next: &'a dyn Fn(&SimFs) -> Result<(), String>,
}

/// How a batch workload reports what it rejected, and the rule for a run
/// in which the fault made an update rejected.
pub struct Batch<'a> {
    /// The updates the last run of the workload rejected, as (ref, message).
    pub rejections: &'a dyn Fn() -> Vec<(String, String)>,
    /// Decides a run that succeeded with more rejections than the
    /// fault-free run.
    pub rule: Rule<'a>,
}

/// What a matrix covered.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// Cases (workload x backend x method) run.
    pub cases: usize,
    /// Faulted runs.
    pub faults: usize,
    /// Faulted runs that reported failure.
    pub failed: usize,
    /// Faulted runs whose fault the store absorbed (the result is the
    /// fault-free one).
    pub absorbed: usize,
    /// Faulted runs of a batch that succeeded with the faulted update
    /// rejected.
    pub rejected: usize,
    /// The kinds of operation whose faults were absorbed, and how often.
    pub absorbed_ops: BTreeMap<String, usize>,
}

impl Tally {
    /// Adds another tally.
    pub fn add(&mut self, other: Tally) {
        self.cases += other.cases;
        self.faults += other.faults;
        self.failed += other.failed;
        self.absorbed += other.absorbed;
        self.rejected += other.rejected;
        for (op, n) in other.absorbed_ops {
            *self.absorbed_ops.entry(op).or_default() += n;
        }
    }

    /// Prints the summary line of a matrix (visible with `--nocapture`).
    pub fn print(&self, matrix: &str) {
        let rejected = match self.rejected {
            0 => String::new(),
            n => format!(", {n} rejected one update"),
        };
        println!(
            "fault matrix {matrix}: {} cases, {} faults injected ({} failed cleanly{rejected}, {} absorbed: {:?})",
            self.cases, self.faults, self.failed, self.absorbed, self.absorbed_ops
        );
    }
}

/// Whether ENOSPC is a meaningful failure of `op` (it consumes space, or
/// flushes data whose space was reserved late).
fn can_run_out_of_space(op: Op) -> bool {
    matches!(
        op,
        Op::CreateExclusive
            | Op::OpenAppend
            | Op::Write
            | Op::Rename
            | Op::Link
            | Op::Mkdir
            | Op::Fsync
            | Op::Fdatasync
            | Op::FsyncDir
            | Op::Syncfs
    )
}

/// Whether `op` changes what a reader sees (as opposed to preparing or
/// flushing).
fn changes_view(op: Op, path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    match op {
        Op::Rename | Op::Link | Op::Truncate => true,
        Op::Unlink => !name.ends_with(".lock") && !name.starts_with("tmp_"),
        _ => false,
    }
}

/// Runs every fault of `case`; panics with a description of the first run
/// that breaks a rule.
pub fn run(case: &Case<'_>) -> Tally {
    run_with(case, None)
}

/// [`run`] for a batch workload, which may also reject a faulted update
/// and commit the rest.
pub fn run_batch(case: &Case<'_>, batch: &Batch<'_>) -> Tally {
    run_with(case, Some(batch))
}

fn run_with(case: &Case<'_>, batch: Option<&Batch<'_>>) -> Tally {
    let rejections = || batch.map(|b| (b.rejections)()).unwrap_or_default();
    let clean = (case.setup)();
    let before = files(&clean);
    let state_before = (case.state)(&clean)
        .unwrap_or_else(|e| panic!("{}: the store does not read before: {e}", case.label));
    clean.start_tracing();
    (case.workload)(&clean).unwrap_or_else(|e| panic!("{}: fault-free run: {e}", case.label));
    let trace = clean.traced_ops();
    let rejected_without_fault = rejections();
    let after = files(&clean);
    let state_after = (case.state)(&clean).expect("the fault-free result reads");
    let first_change = trace.iter().position(|(op, p)| changes_view(*op, p));
    let last_change = trace.iter().rposition(|(op, p)| changes_view(*op, p));

    let mut tally = Tally {
        cases: 1,
        ..Tally::default()
    };
    for (index, (op, path)) in trace.iter().enumerate() {
        let errnos: &[i32] = if can_run_out_of_space(*op) {
            &[EIO, ENOSPC]
        } else {
            &[EIO]
        };
        for &errno in errnos {
            let fault = Placed {
                index,
                op: *op,
                path: path.clone(),
                errno,
            };
            let fs = (case.setup)();
            let start = fs.op_count();
            fs.inject(Fault::nth_op(index, errno));
            let result = catch_unwind(AssertUnwindSafe(|| (case.workload)(&fs)))
                .unwrap_or_else(|_| panic!("{}: {fault}: the workload panicked", case.label));
            // The run is the fault-free one up to the fault, so the fault
            // fired; a run that diverged earlier would test something else.
            assert!(
                fs.op_count() - start > index,
                "{}: {fault}: the run ended before the faulted operation",
                case.label
            );
            tally.faults += 1;
            // Rejections the fault caused, beyond the fault-free run's.
            let rejected: Vec<(String, String)> = rejections()
                .into_iter()
                .filter(|r| !rejected_without_fault.contains(r))
                .collect();
            let verdict = judge(
                (case, batch),
                &fault,
                (&result, &rejected),
                &fs,
                (&before, &after),
                (&state_before, &state_after),
                (first_change, last_change, &trace),
            );
            if let Err(message) = verdict {
                panic!(
                    "{}: {fault}: {message}\nworkload result: {result:?}",
                    case.label
                );
            }
            match result {
                Ok(()) if !rejected.is_empty() => tally.rejected += 1,
                Ok(()) => {
                    tally.absorbed += 1;
                    *tally.absorbed_ops.entry(format!("{op:?}")).or_default() += 1;
                }
                Err(_) => tally.failed += 1,
            }
        }
    }
    tally
}

fn judge(
    (case, batch): (&Case<'_>, Option<&Batch<'_>>),
    fault: &Placed,
    (result, rejected): (&Result<(), String>, &[(String, String)]),
    fs: &SimFs,
    (before, after): (&FileMap, &FileMap),
    (state_before, state_after): (&str, &str),
    (first_change, last_change, trace): (Option<usize>, Option<usize>, &[(Op, PathBuf)]),
) -> Result<(), String> {
    let mut now = files(fs);
    for left in now.keys().filter(|p| is_leftover(p)) {
        // Only the file whose removal failed may stay (as with git, which
        // warns and goes on); the user removes it, as the message says.
        if fault.op != Op::Unlink || !same_file(&fault.path, left) {
            return Err(format!("{} was left behind", left.display()));
        }
        match result {
            Err(message) if !message.contains(&*left.to_string_lossy()) => {
                return Err(format!("the error does not name {}", left.display()));
            }
            // A batch that reports success leaves nothing in the way of
            // the next update of any ref.
            Ok(()) if batch.is_some() => {
                return Err(format!(
                    "the batch succeeded but {} was left behind",
                    left.display()
                ));
            }
            _ => {}
        }
        fs.unlink(left).map_err(|e| e.to_string())?;
    }
    now.retain(|p, _| !is_leftover(p));
    let state_now = (case.state)(fs).map_err(|e| format!("the store does not read: {e}"))?;
    let view = Faulted {
        fault,
        result,
        fs,
        before,
        after,
        state_before,
        state_after,
        state_now: &state_now,
        trace,
        rejected,
    };
    match result {
        Ok(()) if !rejected.is_empty() => {
            let batch = batch.expect("only batch workloads report rejections");
            let os = std::io::Error::from_raw_os_error(fault.errno).to_string();
            if let Some((name, message)) = rejected.iter().find(|(_, m)| !m.contains(&os)) {
                return Err(format!(
                    "{name} was rejected with a reason that does not say what failed ({os}): {message}"
                ));
            }
            (batch.rule)(&view)?;
        }
        Ok(()) => {
            if state_now != state_after {
                return Err(format!(
                    "the workload succeeded but the store reads\n{state_now}\ninstead of\n{state_after}"
                ));
            }
            if let Some(check) = case.absorbed {
                check(&view)?;
            }
        }
        Err(message) => {
            let os = std::io::Error::from_raw_os_error(fault.errno).to_string();
            if !message.contains(&os) {
                return Err(format!("the error does not say what failed ({os})"));
            }
            // The failed operation itself had no effect.
            if first_change.is_none_or(|first| fault.index <= first) {
                if now != *before {
                    return Err(format!(
                        "failed before any visible change, yet files changed:\n{}",
                        diff(before, &now)
                    ));
                }
                if state_now != state_before {
                    return Err(format!(
                        "failed before any visible change, yet the store reads\n{state_now}"
                    ));
                }
            } else if last_change.is_some_and(|last| fault.index > last) {
                if state_now != state_after {
                    return Err(format!(
                        "failed after every change was made, yet the store reads\n{state_now}\ninstead of\n{state_after}"
                    ));
                }
            } else {
                match case.partial {
                    Some(check) => check(&view)?,
                    None => files_old_or_new(&view)?,
                }
            }
        }
    }
    (case.next)(fs).map_err(|e| format!("the next write failed: {e}"))?;
    (case.state)(fs).map_err(|e| format!("the store does not read after the next write: {e}"))?;
    Ok(())
}

/// The default rule between the first and the last visible change: every
/// file holds its content from before or from the fault-free run (or is
/// absent where it was absent in one of them), and there is no other file.
pub fn files_old_or_new(run: &Faulted<'_>) -> Result<(), String> {
    let now = files(run.fs);
    let paths: std::collections::BTreeSet<&PathBuf> = run
        .before
        .keys()
        .chain(run.after.keys())
        .chain(now.keys())
        .collect();
    for path in paths {
        let (b, a, n) = (run.before.get(path), run.after.get(path), now.get(path));
        if n != b && n != a {
            return Err(format!(
                "{} is neither as before nor as after the fault-free run:\n{}",
                path.display(),
                diff(run.before, &now)
            ));
        }
    }
    Ok(())
}

/// The rule of an all-or-nothing store: it reads as before or as after.
pub fn state_old_or_new(run: &Faulted<'_>) -> Result<(), String> {
    if run.state_now == run.state_before || run.state_now == run.state_after {
        Ok(())
    } else {
        Err(format!(
            "the store reads neither as before nor as after:\n{}",
            run.state_now
        ))
    }
}

/// Whether two paths name the same file of two runs: equal, or temporary
/// files of the same kind (their random suffixes differ between runs).
fn same_file(a: &Path, b: &Path) -> bool {
    let kind = |p: &Path| {
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        match name.rfind('_') {
            Some(i) if name.starts_with("tmp_") => {
                (p.parent().map(Path::to_owned), name[..i].to_owned())
            }
            _ => (Some(p.to_owned()), String::new()),
        }
    };
    a == b || kind(a) == kind(b)
}

/// A lock file or a temporary file.
pub fn is_leftover(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    name.ends_with(".lock") || name.starts_with("tmp_")
}

/// The regular files of `fs` with reftable table names masked, in paths and
/// in `tables.list`.
pub fn files(fs: &SimFs) -> FileMap {
    fs.files()
        .into_iter()
        .map(|(path, content)| {
            let is_list = path.file_name().is_some_and(|n| n == "tables.list");
            let path = PathBuf::from(mask_table_names(&path.to_string_lossy()));
            let content = if is_list {
                mask_table_names(&String::from_utf8_lossy(&content)).into_bytes()
            } else {
                content
            };
            (path, content)
        })
        .collect()
}

/// Replaces the random part of every `0x<min>-0x<max>-<random>.ref` name.
fn mask_table_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(end) = rest.find(".ref") {
        let (head, tail) = rest.split_at(end);
        let random_starts = head.len().saturating_sub(8);
        let is_table = head.len() >= 9
            && head.as_bytes()[random_starts - 1] == b'-'
            && head[random_starts..].bytes().all(|b| b.is_ascii_hexdigit());
        if is_table {
            out.push_str(&head[..random_starts]);
            out.push_str("XXXXXXXX");
        } else {
            out.push_str(head);
        }
        out.push_str(".ref");
        rest = &tail[4..];
    }
    out.push_str(rest);
    out
}

/// What differs between two file maps, for messages.
pub fn diff(before: &FileMap, now: &FileMap) -> String {
    let mut out = String::new();
    for (path, content) in now {
        match before.get(path) {
            None => out.push_str(&format!("  + {}\n", path.display())),
            Some(old) if old != content => out.push_str(&format!(
                "  ~ {} ({} -> {} bytes)\n",
                path.display(),
                old.len(),
                content.len()
            )),
            _ => {}
        }
    }
    for path in before.keys().filter(|p| !now.contains_key(*p)) {
        out.push_str(&format!("  - {}\n", path.display()));
    }
    out
}
