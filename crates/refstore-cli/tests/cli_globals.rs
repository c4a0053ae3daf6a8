//! Global options, repository discovery and configuration as seen through the
//! binary, compared with git where git has the same answer.

mod support;
use std::path::Path;
use support::*;

fn rev_parse(home: &Path, cwd: &Path, extra: &[&str], flags: &[&str]) -> (String, String) {
    let args: Vec<&str> = extra
        .iter()
        .copied()
        .chain(["rev-parse"])
        .chain(flags.iter().copied())
        .collect();
    let ours = refstore(home, cwd, &args);
    let theirs = git(home, cwd, &args);
    assert_eq!(
        ours.status.code(),
        theirs.status.code(),
        "{args:?}: {} / {}",
        stderr(&ours),
        stderr(&theirs)
    );
    (stdout(&ours), stdout(&theirs))
}

#[test]
fn discovery_agrees_with_git() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = tmp.path().canonicalize().unwrap();
    git_ok(home, &root, &["init", "-q", "work"]);
    git_ok(home, &root, &["init", "-q", "--bare", "bare.git"]);
    std::fs::create_dir_all(root.join("work/a/b")).unwrap();
    std::fs::create_dir_all(root.join("linked")).unwrap();
    std::fs::write(root.join("linked/.git"), "gitdir: ../work/.git\n").unwrap();
    let flags = [
        "--git-dir",
        "--absolute-git-dir",
        "--is-bare-repository",
        "--show-object-format",
    ];
    for (cwd, extra) in [
        ("work", vec![]),
        ("work/a/b", vec![]),
        ("bare.git", vec![]),
        ("bare.git/refs", vec![]),
        ("linked", vec![]),
        (".", vec!["-C", "work", "-C", "a"]),
        (".", vec!["--git-dir=bare.git"]),
        (".", vec!["--git-dir", "work/.git"]),
    ] {
        let (ours, theirs) = rev_parse(home, &root.join(cwd), &extra, &flags);
        assert_eq!(ours, theirs, "in {cwd} with {extra:?}");
    }
    let (ours, theirs) = rev_parse(home, &root.join("work/a"), &[], &["--show-toplevel"]);
    assert_eq!(ours, theirs);
}

#[test]
fn outside_a_repository_is_fatal_128_with_gits_message() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    std::fs::create_dir_all(tmp.path().join("empty")).unwrap();
    let cwd = tmp.path().join("empty");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_refstore"));
    let out = isolate(&mut cmd, home)
        .env("GIT_CEILING_DIRECTORIES", tmp.path())
        .args(["rev-parse", "--git-dir"])
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(
        stderr(&out),
        "fatal: not a git repository (or any of the parent directories): .git\n"
    );
    let out = refstore(home, &cwd, &["--git-dir=nowhere", "rev-parse", "--git-dir"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).starts_with("fatal: not a git repository: '"),
        "{}",
        stderr(&out)
    );
    let out = refstore(home, &cwd, &["-C", "missing", "rev-parse", "--git-dir"]);
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(
        stderr(&out),
        "fatal: cannot change to 'missing': No such file or directory\n"
    );
}

#[test]
fn invalid_configuration_is_fatal_with_gits_message() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(home, tmp.path(), &["init", "-q", "r"]);
    let repo = tmp.path().join("r");
    git_ok(home, &repo, &["commit", "-q", "--allow-empty", "-m", "x"]);
    for (key, value) in [
        ("core.bare", "maybe"),
        ("core.filesRefLockTimeout", "abc"),
        ("core.logAllRefUpdates", "sometimes"),
    ] {
        let setting = format!("{key}={value}");
        let ours = refstore(home, &repo, &["-c", &setting, "rev-parse", "--git-dir"]);
        let theirs = git(
            home,
            &repo,
            &["-c", &setting, "update-ref", "refs/heads/x", "HEAD"],
        );
        assert_eq!(ours.status.code(), Some(128), "{setting}");
        assert_eq!(stderr(&ours), stderr(&theirs), "{setting}");
    }
    // Repository format: version 0 with a v1-only extension is refused.
    git_ok(
        home,
        &repo,
        &["config", "extensions.objectFormat", "sha256"],
    );
    let out = refstore(home, &repo, &["rev-parse", "--git-dir"]);
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(
        stderr(&out),
        "fatal: repo version is 0, but v1-only extension found:\n\tobjectformat\n"
    );
}

#[test]
fn config_precedence_global_repo_parameters_and_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    std::fs::write(
        home.join(".gitconfig"),
        "[init]\n\tdefaultBranch = global\n",
    )
    .unwrap();
    let head = |dir: &str| std::fs::read_to_string(tmp.path().join(dir).join(".git/HEAD")).unwrap();
    refstore(home, home, &["init", "-q", "a"]);
    assert_eq!(head("a"), "ref: refs/heads/global\n");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_refstore"));
    isolate(&mut cmd, home)
        .env("GIT_CONFIG_PARAMETERS", "'init.defaultbranch'='params'")
        .args(["init", "-q", "b"])
        .current_dir(home)
        .status()
        .unwrap();
    assert_eq!(head("b"), "ref: refs/heads/params\n");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_refstore"));
    isolate(&mut cmd, home)
        .env("GIT_CONFIG_PARAMETERS", "'init.defaultbranch'='params'")
        .args(["-c", "init.defaultBranch=cli", "init", "-q", "c"])
        .current_dir(home)
        .status()
        .unwrap();
    assert_eq!(head("c"), "ref: refs/heads/cli\n");
    // An include in the global file is followed.
    std::fs::write(
        home.join("extra.cfg"),
        "[init]\n\tdefaultBranch = included\n",
    )
    .unwrap();
    std::fs::write(
        home.join(".gitconfig"),
        "[init]\n\tdefaultBranch = global\n[include]\n\tpath = extra.cfg\n",
    )
    .unwrap();
    refstore(home, home, &["init", "-q", "d"]);
    assert_eq!(head("d"), "ref: refs/heads/included\n");
    let out = refstore(home, home, &["-c", "nosection", "init", "-q", "e"]);
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(
        stderr(&out),
        "fatal: key does not contain a section: nosection\n"
    );
}

#[test]
fn version_and_usage() {
    let tmp = tempfile::tempdir().unwrap();
    let out = refstore(tmp.path(), tmp.path(), &["--version"]);
    assert_eq!(
        stdout(&out),
        format!("refstore version {}\n", env!("CARGO_PKG_VERSION"))
    );
    let out = refstore(tmp.path(), tmp.path(), &["no-such-command"]);
    assert_eq!(out.status.code(), Some(129));
    let out = refstore(tmp.path(), tmp.path(), &["--help"]);
    assert!(out.status.success() && stdout(&out).contains("check-ref-format"));
}
