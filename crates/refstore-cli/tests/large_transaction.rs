//! A transaction of many refs needs neither one open descriptor per ref nor
//! per reflog: 3000 refs are created under a limit of 256 open files.

mod support;
use std::process::Command;
use support::*;

#[test]
fn thousands_of_refs_under_a_low_descriptor_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(home, tmp.path(), &["init", "-q", "-b", "main", "r"]);
    let repo = tmp.path().join("r");
    git_ok(home, &repo, &["commit", "-q", "--allow-empty", "-m", "x"]);
    let head = git_ok(home, &repo, &["rev-parse", "HEAD"]);
    let input: String = (0..3000)
        .map(|i| format!("create refs/heads/many/r{i:04} {}", head))
        .collect();
    std::fs::write(tmp.path().join("input"), input).unwrap();
    for fsync in ["batch", "fsync"] {
        let script = format!(
            "ulimit -n 256 && exec \"$0\" -c core.fsyncMethod={fsync} update-ref -m many --stdin < ../input"
        );
        let mut cmd = Command::new("sh");
        let out = isolate(&mut cmd, home)
            .args(["-c", &script, env!("CARGO_BIN_EXE_refstore")])
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(out.status.success(), "{fsync}: {}", stderr(&out));
        let count = git_ok(home, &repo, &["for-each-ref", "refs/heads/many/"])
            .lines()
            .count();
        assert_eq!(count, 3000);
        git_ok(home, &repo, &["update-ref", "-d", "refs/heads/many/r0000"]);
        let out = refstore(
            home,
            &repo,
            &["show-ref", "--verify", "-q", "refs/heads/many/r2999"],
        );
        assert!(out.status.success());
        // Start over for the next method.
        let script = "rm -rf .git/refs/heads/many .git/logs/refs/heads/many";
        assert!(Command::new("sh")
            .args(["-c", script])
            .current_dir(&repo)
            .status()
            .unwrap()
            .success());
    }
}
