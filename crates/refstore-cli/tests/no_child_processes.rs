//! refstore runs no other program: reading configuration must not start
//! `git` (a server cannot depend on one, and a process costs more than a
//! whole ref update). Checked by tracing `execve` with strace.

mod support;
use std::process::Command;
use support::*;

#[test]
fn commands_start_no_processes() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(home, home, &["init", "-q", "repo"]);
    let repo = home.join("repo");
    let trace = home.join("trace");
    for args in [
        &["rev-parse", "--git-dir"][..],
        &["for-each-ref"],
        &["show-ref", "--head"],
    ] {
        // Without GIT_CONFIG_NOSYSTEM, so the system configuration is
        // looked for as on a real machine.
        let status = isolate(&mut Command::new("strace"), home)
            .env_remove("GIT_CONFIG_NOSYSTEM")
            .args(["-f", "-qq", "-e", "trace=execve,execveat", "-o"])
            .arg(&trace)
            .arg(env!("CARGO_BIN_EXE_refstore"))
            .args(args)
            .current_dir(&repo)
            .output()
            .expect("cannot run strace: install strace (scripts/install-deps does)");
        assert!(status.status.code().is_some(), "{args:?}");
        let log = std::fs::read_to_string(&trace).unwrap();
        let execs: Vec<&str> = log.lines().filter(|l| l.contains("execve")).collect();
        assert_eq!(execs.len(), 1, "{args:?} started other programs:\n{log}");
    }
}
