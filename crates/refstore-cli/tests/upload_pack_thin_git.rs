//! `git fetch` through `refstore upload-pack` asks for a thin pack and gets
//! one (deltas against objects the client has, which it completes), in
//! protocol v0 and v2; `git clone` gets a pack that stands alone. The
//! packs are taken as git received them (GIT_TRACE_PACKFILE).

mod support;

use std::path::{Path, PathBuf};
use support::{git, git_ok, isolate, stderr};

fn refstore_upload_pack() -> String {
    format!("{} upload-pack", env!("CARGO_BIN_EXE_refstore"))
}

/// Commits a new version of growing files, at the top and in a
/// subdirectory, in `repo`.
fn commit(home: &Path, repo: &Path, n: usize) {
    std::fs::create_dir_all(repo.join("src/deep")).unwrap();
    for (i, name) in ["README", "src/main.c", "src/deep/util.c"]
        .iter()
        .enumerate()
    {
        let path = repo.join(name);
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        for line in 0..10 + i * 5 {
            text.push_str(&format!(
                "version {n}, line {line}: text shared by every version\n"
            ));
        }
        std::fs::write(&path, text).unwrap();
    }
    git_ok(home, repo, &["add", "-A"]);
    git_ok(home, repo, &["commit", "-q", "-m", &format!("version {n}")]);
}

/// Runs `git <args>` in `cwd` through refstore's upload-pack in protocol
/// `version`; the pack it received.
fn through_refstore(home: &Path, cwd: &Path, version: &str, args: &[&str]) -> Vec<u8> {
    let trace = home.join("packfile");
    let _ = std::fs::remove_file(&trace);
    let mut full: Vec<String> = vec!["-c".into(), format!("protocol.version={version}")];
    full.push(args[0].into());
    full.push(format!("--upload-pack={}", refstore_upload_pack()));
    full.extend(args[1..].iter().map(|a| a.to_string()));
    let out = isolate(&mut std::process::Command::new("git"), home)
        .args(&full)
        .current_dir(cwd)
        .env("GIT_TRACE_PACKFILE", &trace)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {full:?}: {}", stderr(&out));
    std::fs::read(&trace).expect("git traced the pack")
}

/// Whether `git index-pack` accepts `pack` in an empty repository: a pack
/// with deltas against objects it does not hold (thin) is refused.
fn stands_alone(home: &Path, pack: &[u8]) -> bool {
    let dir = home.join("alone");
    let _ = std::fs::remove_dir_all(&dir);
    git_ok(home, home, &["init", "-q", "--bare", dir.to_str().unwrap()]);
    let out = support::run_with_input(
        isolate(&mut std::process::Command::new("git"), home)
            .args(["index-pack", "--stdin"])
            .current_dir(&dir),
        pack,
    );
    if !out.status.success() {
        assert!(
            stderr(&out).contains("unresolved delta"),
            "index-pack: {}",
            stderr(&out)
        );
    }
    out.status.success()
}

fn fsck(home: &Path, repo: &Path) {
    let out = git(home, repo, &["fsck", "--strict", "--no-dangling"]);
    assert!(out.status.success(), "fsck: {}", stderr(&out));
    assert!(stderr(&out).is_empty(), "fsck: {}", stderr(&out));
}

#[test]
fn fetches_get_thin_packs_and_clones_whole_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let source: PathBuf = tmp.path().join("source");
    git_ok(&home, tmp.path(), &["init", "-q", "-b", "main", "source"]);
    for n in 0..6 {
        commit(&home, &source, n);
    }
    git_ok(&home, &source, &["gc", "-q"]);
    let url = format!("file://{}", source.display());
    let mut next = 6;
    for version in ["0", "2"] {
        let clone = tmp.path().join(format!("clone-v{version}"));
        let pack = through_refstore(
            &home,
            tmp.path(),
            version,
            &[
                "clone",
                "-q",
                "--bare",
                "--no-local",
                &url,
                clone.to_str().unwrap(),
            ],
        );
        assert!(
            stands_alone(&home, &pack),
            "a clone's pack holds every base"
        );
        fsck(&home, &clone);

        // New history, loose on the server, then packed.
        for packed in [false, true] {
            commit(&home, &source, next);
            commit(&home, &source, next + 1);
            next += 2;
            if packed {
                git_ok(&home, &source, &["repack", "-dq"]);
            }
            let pack = through_refstore(
                &home,
                &clone,
                version,
                &["fetch", "-q", "origin", "+refs/heads/*:refs/heads/*"],
            );
            assert!(
                !stands_alone(&home, &pack),
                "v{version}: the fetch's pack is thin ({} bytes)",
                pack.len()
            );
            fsck(&home, &clone);
            assert_eq!(
                git_ok(&home, &clone, &["rev-parse", "main"]),
                git_ok(&home, &source, &["rev-parse", "main"])
            );
        }
    }
}
