//! Measures what making N small files durable costs with each flush method,
//! and which of the two correct `batch` mechanisms (one `syncfs`, or all
//! `fdatasync` calls issued concurrently) is faster on this machine.
//!
//! Usage: flush_mechanism [DIR] [ROUNDS]
//! DIR must be on the filesystem being measured (default ./flush-bench).
//! Prints a markdown table of medians and ratios against "no flush".

use refstore_bench::median;
use refstore_fs::flush::{BatchMechanism, FlushBatch, FlushMethod};
use refstore_fs::real::RealFs;
use refstore_fs::Vfs;
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

    println!("| files | {} |", VARIANTS.map(|v| v.0).join(" | "));
    println!("|---:|{}", "---:|".repeat(VARIANTS.len()));
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
        let base = medians[0];
        let cells: Vec<String> = medians
            .iter()
            .map(|m| format!("{:.2} ms ({:.1}x)", m * 1000.0, m / base))
            .collect();
        println!("| {n} | {} |", cells.join(" | "));
    }
}
