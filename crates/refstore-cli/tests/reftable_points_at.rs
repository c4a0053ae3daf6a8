//! Tags in a reftable repository: refs written by refstore that name an
//! annotated tag carry its peeled value (JGit finds them by the peeled
//! object through the tables' object index), and `for-each-ref
//! --points-at` answers through that index exactly what git answers on
//! the same refs in the files format.

mod support;
use support::jgit;

use std::path::Path;
use support::{git_ok, isolate, run_with_input, stderr, stdout, Work};

fn refstore(home: &Path, cwd: &Path, args: &[&str], input: &str) -> String {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_refstore"));
    isolate(&mut cmd, home).args(args).current_dir(cwd);
    let out = run_with_input(&mut cmd, input.as_bytes());
    assert!(out.status.success(), "refstore {args:?}: {}", stderr(&out));
    stdout(&out)
}

/// Objects and refs written by git in the files format.
struct Repo {
    commit: String,
    other: String,
    tag: String,
    nested: String,
    tree: String,
}

fn files_repository(home: &Path, dir: &Path) -> Repo {
    git_ok(
        home,
        home,
        &["init", "-q", "-b", "main", &dir.to_string_lossy()],
    );
    let git = |args: &[&str]| git_ok(home, dir, args).trim().to_owned();
    git(&["commit", "-q", "--allow-empty", "-m", "one"]);
    git(&["tag", "-a", "-m", "annotated", "v1"]);
    Work::at(home, dir).nested_tag("v2", "v1");
    git(&["tag", "light"]);
    git(&["symbolic-ref", "refs/sym", "refs/heads/main"]);
    let commit = git(&["rev-parse", "HEAD"]);
    git(&["commit", "-q", "--allow-empty", "-m", "two"]);
    git(&["branch", "other"]);
    git(&["reset", "-q", "--hard", &commit]);
    Repo {
        other: git(&["rev-parse", "other"]),
        tag: git(&["rev-parse", "v1"]),
        nested: git(&["rev-parse", "v2"]),
        tree: git(&["rev-parse", "HEAD^{tree}"]),
        commit,
    }
}

#[test]
fn tags_are_peeled_and_points_at_agrees_with_git() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let files = home.join("files");
    let repo = files_repository(home, &files);

    // The same refs, written by refstore into a reftable repository that
    // shares the objects.
    refstore(
        home,
        home,
        &["init", "-q", "--ref-format=reftable", "-b", "main", "table"],
        "",
    );
    let table = home.join("table");
    std::fs::remove_dir_all(table.join(".git/objects")).unwrap();
    let copied = std::process::Command::new("cp")
        .args(["-r"])
        .arg(files.join(".git/objects"))
        .arg(table.join(".git/objects"))
        .status()
        .unwrap();
    assert!(copied.success());
    let listing = git_ok(
        home,
        &files,
        &["for-each-ref", "--format=%(refname) %(objectname)"],
    );
    let mut stdin = String::new();
    for line in listing.lines() {
        let (name, id) = line.split_once(' ').unwrap();
        if name != "refs/sym" {
            stdin.push_str(&format!("create {name} {id}\n"));
        }
    }
    refstore(home, &table, &["update-ref", "--stdin"], &stdin);
    refstore(
        home,
        &table,
        &["symbolic-ref", "refs/sym", "refs/heads/main"],
        "",
    );

    // JGit looks refs up by object through the object index, which holds
    // peeled values only where the records carry them: both tags peel to
    // the commit. (JGit adds the symbolic refs that resolve to a match.)
    let tips = jgit::run(
        &["tips", &table.join(".git").to_string_lossy(), &repo.commit],
        "",
    );
    let c = &repo.commit;
    assert_eq!(
        tips,
        format!(
            "tip {c} HEAD\ntip {c} refs/heads/main\ntip {c} refs/sym\ntip {c} refs/tags/light\ntip {c} refs/tags/v1\ntip {c} refs/tags/v2\n"
        )
    );
    assert_eq!(
        refstore(home, &table, &["show-ref", "-d", "--tags"], ""),
        git_ok(home, &files, &["show-ref", "-d", "--tags"])
    );

    for object in [
        &repo.commit,
        &repo.other,
        &repo.tag,
        &repo.nested,
        &repo.tree,
    ] {
        let arg = format!("--points-at={object}");
        for format in [
            "%(refname) %(objectname)",
            "%(refname:short) %(*objectname)",
        ] {
            let format = format!("--format={format}");
            assert_eq!(
                refstore(home, &table, &["for-each-ref", &arg, &format], ""),
                git_ok(home, &files, &["for-each-ref", &arg, &format]),
                "for-each-ref {arg}"
            );
        }
    }
    // A prefix limits the answer as it does without --points-at.
    let arg = format!("--points-at={}", repo.commit);
    assert_eq!(
        refstore(home, &table, &["for-each-ref", &arg, "refs/tags"], ""),
        git_ok(home, &files, &["for-each-ref", &arg, "refs/tags"])
    );
}
