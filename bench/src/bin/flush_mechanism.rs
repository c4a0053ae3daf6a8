//! Measures what making N small files durable costs with each flush method,
//! and which correct `batch` mechanism is faster on this machine: one
//! `syncfs`, all `fdatasync` calls issued concurrently from threads (what
//! refstore does where `syncfs` does not flush), or the same `fdatasync`
//! calls submitted as one io_uring batch (`IORING_OP_FSYNC` with
//! `IORING_FSYNC_DATASYNC`; measured here only, to see whether it would
//! match `syncfs`).
//!
//! A second table measures the shape of a one-ref update: a ref and its
//! new reflog, in two directories, with both flush points, repeated; the
//! per-file ways (one after the other, with or without write-back started
//! first) are measured by hand there, against refstore's mechanisms.
//!
//! Usage: flush_mechanism [DIR] [ROUNDS]
//! DIR must be on the filesystem being measured (default ./flush-bench).
//! Prints markdown tables of medians and ratios against "no flush".

use refstore_bench::median;
use refstore_fs::flush::{BatchMechanism, FlushBatch, FlushMethod};
use refstore_fs::real::RealFs;
use refstore_fs::Vfs;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

const VARIANTS: [(&str, FlushMethod, BatchMechanism); 5] = [
    ("none", FlushMethod::None, BatchMechanism::ConcurrentFsync),
    (
        "writeout-only",
        FlushMethod::WriteoutOnly,
        BatchMechanism::ConcurrentFsync,
    ),
    (
        "fsync (each file)",
        FlushMethod::Fsync,
        BatchMechanism::ConcurrentFsync,
    ),
    (
        "batch: concurrent fdatasync",
        FlushMethod::Batch,
        BatchMechanism::ConcurrentFsync,
    ),
    ("batch: syncfs", FlushMethod::Batch, BatchMechanism::Syncfs),
];

/// Writes `n` loose-ref-sized files into a fresh directory the way a
/// transaction does (temp name, stage, flush, rename, flush directories).
fn transaction(vfs: &Arc<dyn Vfs>, dir: &Path, n: usize, variant: usize) -> f64 {
    let (_, method, mechanism) = VARIANTS[variant];
    vfs.create_dir_all(dir).unwrap();
    let start = Instant::now();
    let mut batch = FlushBatch::new(vfs.clone(), method, dir).with_mechanism(mechanism);
    let mut names = Vec::with_capacity(n);
    for i in 0..n {
        let lock = dir.join(format!("ref-{i}.lock"));
        let mut f = vfs.create_exclusive(&lock).unwrap();
        f.write_all(b"0123456789abcdef0123456789abcdef01234567\n")
            .unwrap();
        batch.stage(f).unwrap();
        names.push(lock);
    }
    batch.flush_files().unwrap();
    for lock in &names {
        vfs.rename(lock, &lock.with_extension("")).unwrap();
    }
    batch.dir_changed(dir);
    batch.flush_dirs().unwrap();
    start.elapsed().as_secs_f64()
}

/// Name of the io_uring variant, measured outside `FlushBatch`.
const URING: &str = "batch: io_uring fdatasync";

/// The same transaction as [`transaction`] with `batch` flush points made
/// of io_uring submissions: every file's `fdatasync` in one batch, then the
/// directory's `fsync`. The ring is set up inside the timed part, as a
/// transaction would have to.
fn uring_transaction(dir: &Path, n: usize) -> f64 {
    std::fs::create_dir_all(dir).unwrap();
    let start = Instant::now();
    let mut files = Vec::with_capacity(n);
    let mut names = Vec::with_capacity(n);
    for i in 0..n {
        let lock = dir.join(format!("ref-{i}.lock"));
        let mut f = File::options()
            .write(true)
            .create_new(true)
            .open(&lock)
            .unwrap();
        f.write_all(b"0123456789abcdef0123456789abcdef01234567\n")
            .unwrap();
        files.push(f);
        names.push(lock);
    }
    let mut ring = io_uring::IoUring::new(256).expect("io_uring is available");
    uring_fsync(&mut ring, &files, true);
    for lock in &names {
        std::fs::rename(lock, lock.with_extension("")).unwrap();
    }
    uring_fsync(&mut ring, &[File::open(dir).unwrap()], false);
    start.elapsed().as_secs_f64()
}

/// Flushes `files` through `ring`, as many at a time as the ring holds,
/// and fails on the first flush error.
fn uring_fsync(ring: &mut io_uring::IoUring, files: &[File], datasync: bool) {
    use io_uring::{opcode, types};
    let flags = if datasync {
        types::FsyncFlags::DATASYNC
    } else {
        types::FsyncFlags::empty()
    };
    let capacity = ring.params().sq_entries() as usize;
    for chunk in files.chunks(capacity) {
        for (i, f) in chunk.iter().enumerate() {
            let entry = opcode::Fsync::new(types::Fd(f.as_raw_fd()))
                .flags(flags)
                .build()
                .user_data(i as u64);
            // SAFETY: the descriptors stay open until the completions are
            // reaped below; the entries point at no memory of ours.
            #[allow(unsafe_code)]
            unsafe {
                ring.submission().push(&entry).expect("the ring has room");
            }
        }
        ring.submit_and_wait(chunk.len()).unwrap();
        let mut done = 0;
        while done < chunk.len() {
            for cqe in ring.completion() {
                assert!(cqe.result() >= 0, "fsync failed: {}", cqe.result());
                done += 1;
            }
            if done < chunk.len() {
                ring.submit_and_wait(chunk.len() - done).unwrap();
            }
        }
    }
}

/// How the flush points of a one-ref update are made.
#[derive(Clone, Copy)]
enum SingleFlush {
    /// Through a [`FlushBatch`] of this method and mechanism.
    Batch(FlushMethod, BatchMechanism),
    /// `fdatasync` of each file, then `fsync` of each directory, one after
    /// the other; with `writeback_first`, write-back of both files is
    /// started before the first `fdatasync`.
    OneByOne { writeback_first: bool },
}

const SINGLE_VARIANTS: [(&str, SingleFlush); 6] = [
    (
        "none",
        SingleFlush::Batch(FlushMethod::None, BatchMechanism::Syncfs),
    ),
    (
        "syncfs",
        SingleFlush::Batch(FlushMethod::Batch, BatchMechanism::Syncfs),
    ),
    (
        "concurrent fdatasync",
        SingleFlush::Batch(FlushMethod::Batch, BatchMechanism::ConcurrentFsync),
    ),
    (
        "one by one",
        SingleFlush::OneByOne {
            writeback_first: false,
        },
    ),
    (
        "write-back, then one by one",
        SingleFlush::OneByOne {
            writeback_first: true,
        },
    ),
    (
        "fsync (each file)",
        SingleFlush::Batch(FlushMethod::Fsync, BatchMechanism::Syncfs),
    ),
];

/// One-ref updates in a row, each creating `refs/r<i>` and `logs/r<i>`
/// under `dir`; the mean time per update.
fn single_updates(vfs: &Arc<dyn Vfs>, dir: &Path, updates: usize, flush: SingleFlush) -> f64 {
    let (refs, logs) = (dir.join("refs"), dir.join("logs"));
    vfs.create_dir_all(&refs).unwrap();
    vfs.create_dir_all(&logs).unwrap();
    let start = Instant::now();
    for i in 0..updates {
        let lock = refs.join(format!("r{i}.lock"));
        let mut value = vfs.create_exclusive(&lock).unwrap();
        value
            .write_all(b"0123456789abcdef0123456789abcdef01234567\n")
            .unwrap();
        let mut log = vfs.open_append(&logs.join(format!("r{i}"))).unwrap();
        log.write_all(&[b'x'; 176]).unwrap();
        log.write_all(b"\n").unwrap();
        match flush {
            SingleFlush::Batch(method, mechanism) => {
                let mut batch = FlushBatch::new(vfs.clone(), method, dir).with_mechanism(mechanism);
                batch.stage(value).unwrap();
                batch.stage(log).unwrap();
                batch.flush_files().unwrap();
                vfs.rename(&lock, &lock.with_extension("")).unwrap();
                batch.dir_changed(&refs);
                batch.dir_changed(&logs);
                batch.flush_dirs().unwrap();
            }
            SingleFlush::OneByOne { writeback_first } => {
                if writeback_first {
                    value.start_writeout().unwrap();
                    log.start_writeout().unwrap();
                }
                value.fdatasync().unwrap();
                log.fdatasync().unwrap();
                vfs.rename(&lock, &lock.with_extension("")).unwrap();
                vfs.fsync_dir(&refs).unwrap();
                vfs.fsync_dir(&logs).unwrap();
            }
        }
    }
    start.elapsed().as_secs_f64() / updates as f64
}

/// Prints the table of one-ref updates.
fn single_table(vfs: &Arc<dyn Vfs>, run: &Path, rounds: usize) {
    const UPDATES: usize = 100;
    println!();
    println!("One-ref updates ({UPDATES} in a row: a new ref and its new reflog in two directories), time per update:");
    println!();
    let names: Vec<&str> = SINGLE_VARIANTS.iter().map(|v| v.0).collect();
    println!("| {} |", names.join(" | "));
    println!("|{}", "---:|".repeat(names.len()));
    let mut counter = 0;
    let medians: Vec<f64> = SINGLE_VARIANTS
        .iter()
        .map(|&(_, flush)| {
            let mut samples: Vec<f64> = (0..rounds)
                .map(|_| {
                    counter += 1;
                    single_updates(vfs, &run.join(format!("single-{counter}")), UPDATES, flush)
                })
                .collect();
            median(&mut samples)
        })
        .collect();
    let cells: Vec<String> = medians
        .iter()
        .map(|m| format!("{:.3} ms ({:.1}x)", m * 1000.0, m / medians[0]))
        .collect();
    println!("| {} |", cells.join(" | "));
}

fn main() {
    let mut args = std::env::args().skip(1);
    let root = PathBuf::from(args.next().unwrap_or_else(|| "flush-bench".into()));
    let rounds: usize = args
        .next()
        .map_or(7, |r| r.parse().expect("ROUNDS is a number"));
    let vfs: Arc<dyn Vfs> = Arc::new(RealFs::new());
    // Each run gets a directory of its own; nothing is deleted during the
    // run, since ext4 creates files slowly right after mass deletions.
    let run = root.join(format!("run-{}", std::process::id()));
    let sizes = [1usize, 10, 100, 1000];

    let uring = io_uring::IoUring::new(2).is_ok();
    let mut names: Vec<&str> = VARIANTS.iter().map(|v| v.0).collect();
    if uring {
        names.push(URING);
    }
    println!("| files | {} |", names.join(" | "));
    println!("|---:|{}", "---:|".repeat(names.len()));
    let mut counter = 0;
    for &n in &sizes {
        let mut medians = Vec::new();
        for variant in 0..VARIANTS.len() {
            let mut samples: Vec<f64> = (0..rounds)
                .map(|_| {
                    counter += 1;
                    transaction(&vfs, &run.join(counter.to_string()), n, variant)
                })
                .collect();
            medians.push(median(&mut samples));
        }
        if uring {
            let mut samples: Vec<f64> = (0..rounds)
                .map(|_| {
                    counter += 1;
                    uring_transaction(&run.join(counter.to_string()), n)
                })
                .collect();
            medians.push(median(&mut samples));
        }
        let base = medians[0];
        let cells: Vec<String> = medians
            .iter()
            .map(|m| format!("{:.2} ms ({:.1}x)", m * 1000.0, m / base))
            .collect();
        println!("| {n} | {} |", cells.join(" | "));
    }
    single_table(&vfs, &run, rounds);
}
