//! Push hooks and object quarantine of `refstore receive-pack`, behind real
//! `git push` over file://. Where git 2.39 behaves as refstore means to,
//! the same push with the same hook scripts goes into a repository served
//! by refstore and one served by git's receive-pack, and what the hooks
//! saw (arguments, standard input, environment, the quarantine) and what
//! the client printed (`remote:` lines, the per-ref summary) must agree.

mod served;
mod support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use support::push_pair::PushPair;
use support::{git, git_ok, stderr, stdout};

/// A work repository `src` and two bare targets: `ours` served by
/// refstore, `theirs` by git.
struct Setup(PushPair);

impl std::ops::Deref for Setup {
    type Target = PushPair;
    fn deref(&self) -> &PushPair {
        &self.0
    }
}

/// What a push printed and left behind.
#[derive(Debug, PartialEq, Eq)]
struct Pushed {
    code: Option<i32>,
    summary: String,
    /// The client's `remote:` lines.
    remote: Vec<String>,
    refs: String,
    /// What the hooks wrote to `hook.log` in the git directory.
    log: String,
}

impl Setup {
    fn new() -> Setup {
        let pair = PushPair::new(&["--bare"]);
        // git 2.39 offers push options only when asked to.
        pair.config("receive.advertisePushOptions", "true");
        pair.commit("first");
        Setup(pair)
    }

    /// Installs hook `name` with shell `body` in both targets.
    fn hook(&self, name: &str, body: &str) {
        for target in self.targets() {
            install_hook(&target.join("hooks"), name, body);
        }
    }

    fn push_into(&self, target: &Path, args: &[&str], ours: bool) -> Pushed {
        let (out, url) = self.push_to(ours, args);
        let log_path = target.join("hook.log");
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        let _ = std::fs::remove_file(&log_path);
        Pushed {
            code: out.status.code(),
            summary: stdout(&out).replace(&url, "<url>"),
            remote: remote_lines(&stderr(&out)),
            refs: if ours {
                // refstore reads reftable repositories, git 2.39 does not.
                stdout(&support::refstore(&self.home, target, &["for-each-ref"]))
            } else {
                git_ok(&self.home, target, &["for-each-ref"])
            },
            log,
        }
    }

    /// Pushes into both targets and requires the same outcome.
    fn push(&self, args: &[&str]) -> Pushed {
        let ours = self.push_into(&self.ours, args, true);
        let theirs = self.push_into(&self.theirs, args, false);
        assert_eq!(ours, theirs, "git push {args:?}");
        let fsck = git(&self.home, &self.ours, &["fsck", "--no-progress"]);
        assert!(fsck.status.success(), "fsck: {}", stderr(&fsck));
        ours
    }
}

fn install_hook(dir: &Path, name: &str, body: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The client's `remote:` lines, without the padding git's client adds.
fn remote_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.starts_with("remote:"))
        .map(|l| l.trim_end().to_owned())
        .collect()
}

/// Every file below `dir` with its size: what a push left in `objects/`.
fn tree(dir: &Path) -> BTreeMap<PathBuf, u64> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                pending.push(entry.path());
                files.insert(entry.path().strip_prefix(dir).unwrap().to_owned(), 0);
            } else {
                files.insert(
                    entry.path().strip_prefix(dir).unwrap().to_owned(),
                    meta.len(),
                );
            }
        }
    }
    files
}

/// A hook that logs its arguments, standard input and the variables git
/// sets, and greets the user on standard output and standard error.
const LOGGING: &str = r#"
input=$(cat)
{
  echo "== $HOOK $*"
  [ "$GIT_DIR" = . ] && [ "$(pwd -P)" = "$(cd "$GIT_DIR" && pwd -P)" ] && echo "runs in GIT_DIR"
  env | grep '^GIT_PUSH_OPTION' | sort
  [ -n "$GIT_QUARANTINE_PATH" ] && echo "quarantine"
  [ -n "$input" ] && echo "$input"
} >>hook.log
echo "$HOOK says hello"
echo "$HOOK warns" >&2
"#;

#[test]
fn hooks_get_gits_input_and_environment_and_their_output_reaches_the_client() {
    let s = Setup::new();
    for name in ["pre-receive", "update", "post-receive", "post-update"] {
        s.hook(name, &format!("HOOK={name}\n{LOGGING}"));
    }
    let pushed = s.push(&["-o", "ci.skip", "-o", "reason=a b", "main"]);
    assert_eq!(pushed.code, Some(0), "{pushed:?}");
    for expected in [
        "remote: pre-receive says hello",
        "remote: pre-receive warns",
        "remote: update says hello",
        "remote: post-receive says hello",
        "remote: post-update warns",
    ] {
        assert!(pushed.remote.iter().any(|l| l == expected), "{pushed:?}");
    }
    assert!(
        pushed.log.contains("GIT_PUSH_OPTION_1=reason=a b"),
        "{}",
        pushed.log
    );
    assert!(
        pushed.log.contains("== post-update refs/heads/main"),
        "{}",
        pushed.log
    );

    // An update of several refs, one deleted, without push options.
    s.commit("second");
    s.push(&["main", "main:refs/heads/other", "main:refs/tags/t"]);
    s.commit("third");
    let pushed = s.push(&["main", ":refs/heads/other"]);
    assert!(
        pushed.log.contains("== update refs/heads/other"),
        "{}",
        pushed.log
    );
}

#[test]
fn a_declining_pre_receive_leaves_no_object_and_no_ref() {
    let s = Setup::new();
    s.hook("pre-receive", "echo \"no entry\"; exit 1");
    // Small pushes are stored loose, bigger ones as a pack: neither stays.
    for limit in ["100", "1"] {
        s.config("receive.unpackLimit", limit);
        s.commit(&format!("limit {limit}"));
        let before = tree(&s.ours.join("objects"));
        let pushed = s.push(&["main", "main:refs/heads/copy"]);
        assert_ne!(pushed.code, Some(0));
        assert!(
            pushed.summary.contains(
                "!\trefs/heads/main:refs/heads/main\t[remote rejected] (pre-receive hook declined)"
            ),
            "{}",
            pushed.summary
        );
        assert_eq!(pushed.remote, ["remote: no entry"]);
        assert_eq!(pushed.refs, "");
        assert_eq!(tree(&s.ours.join("objects")), before, "limit {limit}");
    }
}

#[test]
fn pre_receive_reads_the_quarantined_objects_the_repository_lacks() {
    let s = Setup::new();
    let hook = r#"
read old new ref
echo "type $(git cat-file -t "$new")"
if env -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES -u GIT_QUARANTINE_PATH git cat-file -e "$new" 2>/dev/null
then echo "repository has it"
else echo "repository lacks it"
fi
case "$GIT_QUARANTINE_PATH" in
  "$GIT_OBJECT_DIRECTORY") ;;
  *) echo "GIT_OBJECT_DIRECTORY is not the quarantine" ;;
esac
case "$GIT_QUARANTINE_PATH" in
  */objects/tmp_objdir-incoming-*) [ -d "$GIT_QUARANTINE_PATH" ] && echo "quarantine in objects/" ;;
esac
[ "$(cd "$GIT_ALTERNATE_OBJECT_DIRECTORIES" && pwd -P)" = "$(cd objects && pwd -P)" ] && echo "alternate: the repository's objects"
"#;
    s.hook("pre-receive", hook);
    for limit in ["100", "1"] {
        s.config("receive.unpackLimit", limit);
        let pushed = s.push(&["main"]);
        assert_eq!(
            pushed.remote,
            [
                "remote: type commit",
                "remote: repository lacks it",
                "remote: quarantine in objects/",
                "remote: alternate: the repository's objects",
            ],
            "limit {limit}"
        );
        s.commit(&format!("after limit {limit}"));
    }
    // Accepted: the objects are in the repository, no quarantine is left.
    for entry in std::fs::read_dir(s.ours.join("objects")).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(
            !name.to_string_lossy().starts_with("tmp_objdir"),
            "{name:?}"
        );
    }
}

#[test]
fn an_update_hook_declines_one_ref_of_several() {
    let s = Setup::new();
    s.hook("update", "echo \"checking $1\"; [ \"$1\" != refs/heads/b ]");
    let pushed = s.push(&[
        "main:refs/heads/a",
        "main:refs/heads/b",
        "main:refs/heads/c",
    ]);
    assert!(
        pushed
            .summary
            .contains("!\trefs/heads/main:refs/heads/b\t[remote rejected] (hook declined)"),
        "{}",
        pushed.summary
    );
    assert!(
        pushed
            .remote
            .contains(&"remote: error: hook declined to update refs/heads/b".to_owned()),
        "{pushed:?}"
    );
    assert!(pushed.refs.contains("refs/heads/a") && pushed.refs.contains("refs/heads/c"));
    assert!(!pushed.refs.contains("refs/heads/b"));
    // Atomic: one declined ref refuses them all.
    s.commit("second");
    let pushed = s.push(&["--atomic", "main:refs/heads/a", "main:refs/heads/b"]);
    assert_ne!(pushed.code, Some(0));
    assert!(!pushed.refs.contains("refs/heads/b"));
}

#[test]
fn reference_transaction_sees_prepared_and_committed() {
    let s = Setup::new();
    s.hook(
        "reference-transaction",
        "HOOK=reference-transaction\n{ echo \"== $1\"; cat; } >>hook.log",
    );
    let first = s.commit("second");
    let pushed = s.push(&["main"]);
    let zero = "0".repeat(40);
    // HEAD names the branch: its update is announced too, last, as git
    // announces it.
    let lines = format!("{zero} {first} refs/heads/main\n{zero} {first} HEAD\n");
    assert_eq!(
        pushed.log,
        format!("== prepared\n{lines}== committed\n{lines}")
    );
    // A ref HEAD does not name; a deletion (git 2.39 also runs the hook
    // for an empty transaction of its packed-refs file, aborted: an
    // internal step of its files backend that refstore does not mimic).
    s.push(&["main:refs/heads/topic"]);
    let pushed = s.push_into(&s.ours, &[":refs/heads/topic"], true);
    let line = format!("{first} {zero} refs/heads/topic\n");
    assert_eq!(
        pushed.log,
        format!("== prepared\n{line}== committed\n{line}")
    );
}

#[test]
fn reference_transaction_aborts_in_prepared() {
    // git 2.39's receive-pack dies when the hook aborts; refstore reports
    // the push as failed, as later gits do.
    let s = Setup::new();
    install_hook(
        &s.ours.join("hooks"),
        "reference-transaction",
        "{ echo \"== $1\"; cat; } >>hook.log; echo \"state $1\"; [ \"$1\" != prepared ]",
    );
    let tip = s.commit("second");
    let pushed = s.push_into(&s.ours, &["main", "main:refs/heads/copy"], true);
    assert_ne!(pushed.code, Some(0));
    assert_eq!(pushed.refs, "");
    let zero = "0".repeat(40);
    let lines =
        format!("{zero} {tip} refs/heads/main\n{zero} {tip} refs/heads/copy\n{zero} {tip} HEAD\n");
    assert_eq!(
        pushed.log,
        format!("== prepared\n{lines}== aborted\n{lines}")
    );
    assert!(
        pushed
            .summary
            .contains("[remote rejected] (failed to update ref)"),
        "{}",
        pushed.summary
    );
    assert!(
        pushed.remote.iter().any(|l| l
            == "remote: error: in 'prepared' phase, update aborted by the reference-transaction hook"),
        "{pushed:?}"
    );
    assert!(pushed.remote.contains(&"remote: state aborted".to_owned()));
    // No lock is left behind: the next push goes through.
    std::fs::remove_file(s.ours.join("hooks/reference-transaction")).unwrap();
    let pushed = s.push_into(&s.ours, &["main"], true);
    assert_eq!(pushed.code, Some(0), "{pushed:?}");
}

#[test]
fn hooks_path_and_executable_bit() {
    let s = Setup::new();
    // Not executable: not run.
    s.hook("pre-receive", "exit 1");
    for target in [&s.ours, &s.theirs] {
        let hook = target.join("hooks/pre-receive");
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let pushed = s.push(&["main"]);
    assert_eq!(pushed.code, Some(0), "{pushed:?}");
    // core.hooksPath, relative to the git directory.
    s.config("core.hooksPath", "custom-hooks");
    for target in [&s.ours, &s.theirs] {
        install_hook(
            &target.join("custom-hooks"),
            "pre-receive",
            "echo from custom-hooks; exit 1",
        );
    }
    s.commit("second");
    let pushed = s.push(&["main"]);
    assert_ne!(pushed.code, Some(0));
    assert_eq!(pushed.remote, ["remote: from custom-hooks"]);
}

#[test]
fn hooks_and_quarantine_over_http() {
    let s = Setup::new();
    let credentials = s.home.join("users");
    std::fs::write(&credentials, "bob:plain-pw\n").unwrap();
    let server = served::Served::start(
        &s.home,
        &s.home,
        &[
            "--allow-push",
            "--credentials",
            credentials.to_str().unwrap(),
        ],
    );
    let url = server.url_as("bob", "plain-pw", "ours");
    let hooks = s.ours.join("hooks");
    install_hook(
        &hooks,
        "pre-receive",
        "echo \"declined over http: $(cat)\"; exit 1",
    );
    let before = tree(&s.ours.join("objects"));
    let out = served::git_net(&s.home, &s.src, &["push", &url, "main"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("remote: declined over http: 0000000000000000000000000000000000000000 "),
        "{err}"
    );
    assert!(err.contains("(pre-receive hook declined)"), "{err}");
    assert_eq!(tree(&s.ours.join("objects")), before);
    std::fs::remove_file(hooks.join("pre-receive")).unwrap();
    install_hook(&hooks, "post-receive", "echo \"received: $(cat)\"");
    let out = served::git_net(&s.home, &s.src, &["push", &url, "main"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let tip = git_ok(&s.home, &s.src, &["rev-parse", "main"]);
    assert!(
        stderr(&out).contains(&format!(
            "remote: received: {} {} refs/heads/main",
            "0".repeat(40),
            tip.trim()
        )),
        "{}",
        stderr(&out)
    );
}

#[test]
fn reference_transaction_on_a_reftable_repository() {
    let s = Setup::new();
    let out = support::refstore(
        &s.home,
        &s.ours,
        &["refs", "migrate", "--ref-format=reftable"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    install_hook(
        &s.ours.join("hooks"),
        "reference-transaction",
        "{ echo \"== $1\"; cat; } >>hook.log; [ \"$1\" != prepared ] || [ ! -e abort ]",
    );
    let tip = s.commit("second");
    let zero = "0".repeat(40);
    std::fs::write(s.ours.join("abort"), "").unwrap();
    let pushed = s.push_into(&s.ours, &["main"], true);
    assert_ne!(pushed.code, Some(0));
    let lines = format!("{zero} {tip} refs/heads/main\n{zero} {tip} HEAD\n");
    assert_eq!(
        pushed.log,
        format!("== prepared\n{lines}== aborted\n{lines}")
    );
    std::fs::remove_file(s.ours.join("abort")).unwrap();
    let pushed = s.push_into(&s.ours, &["main"], true);
    assert_eq!(pushed.code, Some(0), "{pushed:?}");
    assert_eq!(
        pushed.log,
        format!("== prepared\n{lines}== committed\n{lines}")
    );
    assert!(pushed
        .refs
        .contains(&format!("{tip} commit\trefs/heads/main")));
}

#[test]
fn no_process_is_started_without_hooks() {
    let s = Setup::new();
    // Not executable: no hook, no process.
    install_hook(&s.ours.join("hooks"), "post-receive", "true");
    let hook = s.ours.join("hooks/post-receive");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o644)).unwrap();
    let execs = |s: &Setup| {
        let trace = s.home.join("trace");
        let receive_pack = format!(
            "--receive-pack=strace -f -qq -e trace=execve,execveat -o {} {} receive-pack",
            trace.display(),
            env!("CARGO_BIN_EXE_refstore")
        );
        let url = format!("file://{}", s.ours.display());
        let out = git(&s.home, &s.src, &["push", &receive_pack, &url, "main"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let log = std::fs::read_to_string(&trace)
            .expect("cannot run strace: install strace (scripts/install-deps does)");
        log.lines().filter(|l| l.contains("execve")).count()
    };
    assert_eq!(execs(&s), 1, "receive-pack started other programs");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    s.commit("second");
    assert!(execs(&s) > 1, "the post-receive hook did not run");
}
