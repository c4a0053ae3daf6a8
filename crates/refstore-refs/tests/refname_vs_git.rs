//! Differential test: refstore's reference-name rules give the same answer as
//! the machine's `git check-ref-format` on thousands of generated names
//! biased towards the rules' edge cases, under every flag combination.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use refstore_refs::name::{check_ref_format, CheckOptions};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

/// Pieces names are built from: ordinary text, separators, and every
/// construct one of git's rules is about.
const PIECES: &[&[u8]] = &[
    b"refs",
    b"heads",
    b"tags",
    b"main",
    b"a",
    b"b1",
    b"x-y_z",
    b"/",
    b"//",
    b".",
    b"..",
    b"...",
    b"@",
    b"{",
    b"@{",
    b"}",
    b".lock",
    b"lock",
    b"*",
    b" ",
    b"~",
    b"^",
    b":",
    b"?",
    b"[",
    b"]",
    b"\\",
    b"\t",
    b"\x01",
    b"\x1f",
    b"\x7f",
    b"\xc3\xbc",
    b"\xe6\x97\xa5",
    b"\xff",
    b"\x80",
    b"-",
    b"HEAD",
    b"=",
    b"#",
    b"!",
    b",",
    b"+",
    b"%",
    b"'",
    b"\"",
];

fn name_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(PIECES), 1..9)
        .prop_map(|pieces| pieces.concat())
        // git takes a leading '-' as an option; such names are not names.
        .prop_filter("leading dash", |n| !n.starts_with(b"-"))
}

const FLAG_SETS: &[&[&str]] = &[
    &[],
    &["--allow-onelevel"],
    &["--refspec-pattern"],
    &["--normalize"],
    &["--allow-onelevel", "--refspec-pattern"],
    &["--normalize", "--allow-onelevel"],
    &["--normalize", "--refspec-pattern", "--allow-onelevel"],
];

/// git's answer: exit code and stdout.
fn git_answer(name: &[u8], flags: &[&str]) -> (i32, Vec<u8>) {
    let out = Command::new("git")
        .arg("check-ref-format")
        .args(flags)
        .arg(OsStr::from_bytes(name))
        .output()
        .expect("cannot run git: the differential test needs git on PATH");
    (out.status.code().unwrap_or(-1), out.stdout)
}

fn our_answer(name: &[u8], flags: &[&str]) -> (i32, Vec<u8>) {
    let options = CheckOptions {
        allow_onelevel: flags.contains(&"--allow-onelevel"),
        refspec_pattern: flags.contains(&"--refspec-pattern"),
    };
    let normalize = flags.contains(&"--normalize");
    match check_ref_format(name, options, normalize) {
        Ok(mut printed) if normalize => {
            printed.push(b'\n');
            (0, printed)
        }
        Ok(_) => (0, Vec::new()),
        Err(_) => (1, Vec::new()),
    }
}

fn compare_all(names: Vec<Vec<u8>>) {
    let cases: Vec<(Vec<u8>, &[&str])> = names
        .into_iter()
        .flat_map(|n| FLAG_SETS.iter().map(move |f| (n.clone(), *f)))
        .collect();
    let threads = 4;
    let chunk = cases.len().div_ceil(threads);
    let mismatches: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .filter_map(|(name, flags)| {
                            let git = git_answer(name, flags);
                            let ours = our_answer(name, flags);
                            (git != ours).then(|| {
                                format!(
                                    "{:?} {flags:?}: git {:?} {:?}, refstore {:?} {:?}",
                                    String::from_utf8_lossy(name),
                                    git.0,
                                    String::from_utf8_lossy(&git.1),
                                    ours.0,
                                    String::from_utf8_lossy(&ours.1)
                                )
                            })
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(
        mismatches.is_empty(),
        "{} disagreements with git, first ones:\n{}",
        mismatches.len(),
        mismatches[..mismatches.len().min(20)].join("\n")
    );
}

#[test]
fn generated_names_agree_with_git() {
    let mut runner = TestRunner::new(Config {
        rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
        ..Config::default()
    });
    let strategy = name_strategy();
    let names: Vec<Vec<u8>> = (0..1500)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect();
    // The sample must reach both outcomes often, or it proves little.
    let valid = names
        .iter()
        .filter(|n| our_answer(n, &["--allow-onelevel"]).0 == 0)
        .count();
    assert!(valid > 150 && valid < 1350, "{valid} of 1500 valid");
    compare_all(names);
}

#[test]
fn hand_picked_names_agree_with_git() {
    let names: Vec<Vec<u8>> = [
        "refs/heads/main",
        "HEAD",
        "@",
        "refs/@",
        "refs/heads/@{u}",
        "refs/a@b",
        "foo.lock",
        "refs/heads/foo.lock",
        "refs/heads/foo.lock/bar",
        "refs/heads/.hidden",
        "refs/heads/x.",
        "refs/heads/x/",
        "/refs/heads/x",
        "//refs//heads//x",
        "refs/heads/a..b",
        "refs/heads/a.b",
        "refs/*",
        "refs/*/*",
        "*",
        "refs/heads/*x",
        "refs/heads/ü",
        "",
        "/",
        ".",
        "..",
        "refs/.",
        "refs/heads/x.lockx",
        "refs/heads/lock",
        "refs/heads/.lock",
        "a/.lock/b",
        "refs/tags/v1.0",
        "refs/heads/with space",
        "refs/heads/tab\there",
        "refs/heads/ctl\x01",
        "refs/heads/del\x7f",
        "refs/heads/a~1",
        "refs/heads/a^",
        "refs/heads/a:b",
        "refs/heads/a?",
        "refs/heads/a[b",
        "refs/heads/a\\b",
        "refs/heads/{}",
        "refs/heads/@",
        "refs/heads/a@",
        "refs/heads/x@{",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .chain([b"refs/heads/\xff\xfe".to_vec(), b"refs/\x80".to_vec()])
    .collect();
    compare_all(names);
}
