//! Without `GIT_COMMITTER_DATE`, a reflog line records the current time in
//! the local time zone, as git records it: both read `TZ` the C library's
//! way, so a POSIX zone such as `XYZ-5:30` (five and a half hours east of
//! UTC) gives `+0530` in both, and the times are close.

mod support;

use std::path::Path;
use std::process::Command;
use support::{git_ok, isolate};

/// The time and zone of the last line of a reflog.
fn last_stamp(repo: &Path, name: &str) -> (i64, String) {
    let log = std::fs::read_to_string(repo.join(".git/logs").join(name)).unwrap();
    let line = log.lines().last().unwrap().to_owned();
    let signature = line.split('\t').next().unwrap();
    let mut fields = signature.rsplitn(3, ' ');
    let zone = fields.next().unwrap().to_owned();
    let seconds = fields.next().unwrap().parse().unwrap();
    (seconds, zone)
}

fn run(program: &str, home: &Path, repo: &Path, tz: &str, args: &[&str]) {
    let mut cmd = Command::new(program);
    let status = isolate(&mut cmd, home)
        .env_remove("GIT_COMMITTER_DATE")
        .env("TZ", tz)
        .args(args)
        .current_dir(repo)
        .status()
        .unwrap();
    assert!(status.success(), "{program} {args:?}");
}

#[test]
fn reflogs_record_the_local_zone_as_git_does() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(home, home, &["init", "-q", "-b", "main", "r"]);
    let repo = home.join("r");
    git_ok(home, &repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
    let head = git_ok(home, &repo, &["rev-parse", "HEAD"]);
    let head = head.trim();
    let refstore = env!("CARGO_BIN_EXE_refstore");

    for (tz, expected) in [("XYZ-5:30", "+0530"), ("ABC+3", "-0300"), ("UTC0", "+0000")] {
        let ours = format!("refs/heads/ours-{expected}");
        let theirs = format!("refs/heads/theirs-{expected}");
        run(
            "git",
            home,
            &repo,
            tz,
            &["update-ref", "-m", "m", &theirs, head],
        );
        run(
            refstore,
            home,
            &repo,
            tz,
            &["update-ref", "-m", "m", &ours, head],
        );
        let (git_time, git_zone) = last_stamp(&repo, &theirs);
        let (our_time, our_zone) = last_stamp(&repo, &ours);
        assert_eq!(git_zone, expected, "git under TZ={tz}");
        assert_eq!(our_zone, expected, "refstore under TZ={tz}");
        assert!(
            (our_time - git_time).abs() <= 60,
            "{our_time} vs {git_time}"
        );
    }
}
