//! A short run of every fuzz target on the stable toolchain: each committed
//! corpus entry, each regression input (crashers found before, kept in
//! `fuzz/regressions/<target>/`), then deterministic pseudo-random
//! mutations of them. libFuzzer explores far more (see `fuzz/README.md`);
//! this keeps what it found from coming back.

use refstore_fuzz_targets::TARGETS;
use std::path::{Path, PathBuf};

/// Mutated inputs per target: a few seconds for all targets together.
const MUTATIONS: usize = 2000;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir`, sorted by name; none if it does not exist.
fn inputs(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// xorshift64*: the same mutations on every run and machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One to four of libFuzzer's kinds of change: bit flips, special bytes,
/// insertions, deletions, duplicated runs, splices of another input.
fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    const SPECIAL: &[u8] = b"\0\n\t #^<>:/.0fF\x7f\xff";
    let mut data = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(data.len() + 1);
        match rng.below(7) {
            0 if !data.is_empty() => {
                let i = rng.below(data.len());
                data[i] ^= 1 << rng.below(8);
            }
            1 if !data.is_empty() => {
                let i = rng.below(data.len());
                data[i] = SPECIAL[rng.below(SPECIAL.len())];
            }
            2 => data.insert(at, SPECIAL[rng.below(SPECIAL.len())]),
            3 => {
                let end = (at + 1 + rng.below(16)).min(data.len());
                data.drain(at.min(end)..end);
            }
            4 => {
                let end = (at + 1 + rng.below(32)).min(data.len());
                let run = data[at.min(end)..end].to_vec();
                data.splice(at..at, run);
            }
            5 if !other.is_empty() => {
                let from = rng.below(other.len());
                let end = (from + 1 + rng.below(64)).min(other.len());
                data.splice(at.., other[from..end].iter().copied());
            }
            _ => data.truncate(at),
        }
    }
    data
}

fn smoke(name: &str) {
    let target = TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no target {name}"))
        .1;
    let corpus = inputs(&fuzz_dir().join("corpus").join(name));
    assert!(
        !corpus.is_empty(),
        "fuzz/corpus/{name} is empty: run fuzz/seed-corpora"
    );
    let regressions = inputs(&fuzz_dir().join("regressions").join(name));
    let mut all: Vec<Vec<u8>> = Vec::new();
    for (path, bytes) in corpus.into_iter().chain(regressions) {
        // A panic names the file through the backtrace of this call.
        eprintln!("{}", path.display());
        target(&bytes);
        all.push(bytes);
    }
    let mut rng =
        Rng(0x9e37_79b9_7f4a_7c15 ^ name.len() as u64 ^ (name.as_bytes()[0] as u64) << 32);
    for _ in 0..MUTATIONS {
        let input = &all[rng.below(all.len())];
        let other = &all[rng.below(all.len())];
        let mutated = mutate(&mut rng, input, other);
        target(&mutated);
    }
    target(b"");
}

macro_rules! smoke_tests {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { smoke(stringify!($name)); })*

        #[test]
        fn every_target_has_a_smoke_test_and_a_corpus() {
            let tested = [$(stringify!($name)),*];
            let targets: Vec<&str> = TARGETS.iter().map(|(n, _)| *n).collect();
            assert_eq!(targets, tested);
            for dir in ["corpus", "regressions"] {
                let Ok(entries) = std::fs::read_dir(fuzz_dir().join(dir)) else {
                    continue;
                };
                for entry in entries {
                    let name = entry.unwrap().file_name();
                    let name = name.to_str().unwrap();
                    assert!(
                        targets.contains(&name),
                        "fuzz/{dir}/{name} belongs to no target"
                    );
                }
            }
        }
    };
}

smoke_tests!(
    pkt_line,
    upload_pack_v2,
    upload_pack_v0,
    receive_pack,
    reftable_table,
    reftable_blocks,
    tables_list,
    packed_refs,
    loose_ref,
    reflog_line,
    update_ref_stdin,
    update_ref_stdin_z,
    config,
);
