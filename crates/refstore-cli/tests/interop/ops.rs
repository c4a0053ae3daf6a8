//! The operations of the interop matrix. Each gets a repository of its own
//! on the server it runs against (made from [`Fixtures`] by the machine's
//! git), drives one client through it, and checks what came of it: the
//! server's refs (the machine's git, or `refstore show-ref` for reftable),
//! the clone's refs and `git fsck`, and the exact refusal where one is
//! expected. The same operation runs against git's own server as the
//! control (see the suite's doc).

use super::clients::{Client, Ran};
use super::fixtures::Fixtures;
use super::servers::{Servers, Target, Transport, Who};
use crate::support::{git, isolate, stderr, stdout};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why an operation did not pass.
#[derive(Debug)]
pub enum Failure {
    /// The check failed: what was wrong.
    Failed(String),
    /// The client said it has no way to do it (driver exit 3).
    Unsupported(String),
}

type Checked = Result<(), Failure>;

/// Ref names to ids.
type Refs = BTreeMap<String, String>;

fn failed<T>(why: impl Into<String>) -> Result<T, Failure> {
    Err(Failure::Failed(why.into()))
}

/// One operation of the matrix.
pub struct Op {
    pub name: &'static str,
    pub run: fn(&Ctx) -> Checked,
    /// Whether it means anything over `transport` (a password is no SSH
    /// credential).
    pub applies: fn(Transport) -> bool,
}

fn always(_: Transport) -> bool {
    true
}

fn not_ssh(t: Transport) -> bool {
    t != Transport::Ssh
}

pub const OPS: &[Op] = &[
    Op {
        name: "clone",
        run: clone,
        applies: always,
    },
    Op {
        name: "depth-1 clone, fetch",
        run: shallow_fetch,
        applies: always,
    },
    Op {
        name: "deepen (depth 2)",
        run: deepen,
        applies: always,
    },
    Op {
        name: "unshallow",
        run: unshallow,
        applies: always,
    },
    Op {
        name: "fetch new commits",
        run: fetch_new,
        applies: always,
    },
    Op {
        name: "push new branch",
        run: push_branch,
        applies: always,
    },
    Op {
        name: "fast-forward",
        run: fast_forward,
        applies: always,
    },
    Op {
        name: "force push",
        run: force_push,
        applies: always,
    },
    Op {
        name: "non-ff refused",
        run: non_ff_refused,
        applies: always,
    },
    Op {
        name: "delete branch",
        run: delete_branch,
        applies: always,
    },
    Op {
        name: "200 refs in, out",
        run: many_refs,
        applies: always,
    },
    Op {
        name: "atomic, one fails",
        run: atomic,
        applies: always,
    },
    Op {
        name: "push options",
        run: push_options,
        applies: always,
    },
    Op {
        name: "ls-remote v0",
        run: ls_remote_v0,
        applies: always,
    },
    Op {
        name: "ls-remote v2",
        run: ls_remote_v2,
        applies: always,
    },
    Op {
        name: "tags peeled",
        run: tags_peeled,
        applies: always,
    },
    Op {
        name: "sha256 repo",
        run: sha256,
        applies: always,
    },
    Op {
        name: "reftable repo",
        run: reftable,
        applies: always,
    },
    Op {
        name: "anonymous push",
        run: anonymous_push,
        applies: always,
    },
    Op {
        name: "wrong password",
        run: wrong_password,
        applies: not_ssh,
    },
    Op {
        name: "access rule",
        run: access_rule,
        applies: always,
    },
];

/// One operation's run: a client against one server over one transport.
pub struct Ctx<'a> {
    pub home: &'a Path,
    pub client: &'a Client,
    pub servers: &'a Servers,
    pub fixtures: &'a Fixtures,
    pub transport: Transport,
    pub control: bool,
    /// Unique to this run, to name its repositories and directories.
    pub label: String,
}

/// A repository on the server of a run.
pub struct ServedRepo {
    pub name: String,
    pub path: PathBuf,
    pub reftable: bool,
}

/// How a served repository starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Seed {
    Sha1,
    Sha256,
    /// SHA-1, refs in a reftable (on refstore's side; git 2.39 serves
    /// none, and the format is invisible to clients, so the control's
    /// repository keeps files).
    Reftable,
}

impl Ctx<'_> {
    fn target(&self, who: Who) -> Result<Target, Failure> {
        match self.servers.target(self.transport, self.control, who) {
            Some(t) => Ok(t),
            None => failed("no control server for this transport (sshd is not installed)"),
        }
    }

    fn serve(&self, seed: Seed) -> Result<ServedRepo, Failure> {
        let root = self.target(Who::Alice)?.root;
        let name = format!("{}.git", self.label);
        let path = root.join(&name);
        let source = match seed {
            Seed::Sha256 => &self.fixtures.sha256,
            _ => &self.fixtures.sha1,
        };
        self.git_ok(
            self.home,
            &[
                "clone",
                "-q",
                "--bare",
                source.to_str().unwrap(),
                path.to_str().unwrap(),
            ],
        );
        let reftable = seed == Seed::Reftable && !self.control;
        if reftable {
            let o = isolate(&mut Command::new(env!("CARGO_BIN_EXE_refstore")), self.home)
                .args(["refs", "migrate", "--ref-format=reftable"])
                .current_dir(&path)
                .output()
                .unwrap();
            assert!(o.status.success(), "refs migrate: {}", stderr(&o));
        }
        Ok(ServedRepo {
            name,
            path,
            reftable,
        })
    }

    fn git_ok(&self, cwd: &Path, args: &[&str]) -> String {
        let o = git(self.home, cwd, args);
        assert!(
            o.status.success(),
            "git {args:?} in {}: {}",
            cwd.display(),
            stderr(&o)
        );
        stdout(&o).trim().to_owned()
    }

    fn run(&self, who: Who, args: &[String]) -> Result<Ran, Failure> {
        let target = self.target(who)?;
        Ok(self.client.run(self.home, &target, who, args))
    }

    /// Runs a driver command that must succeed.
    fn must(&self, who: Who, args: &[String]) -> Result<Ran, Failure> {
        let ran = self.run(who, args)?;
        if ran.unsupported() {
            return Err(Failure::Unsupported(ran.text()));
        }
        if !ran.ok() {
            return failed(format!("{} failed: {}", args[0], ran.text()));
        }
        Ok(ran)
    }

    fn url(&self, repo: &ServedRepo) -> Result<String, Failure> {
        Ok(self.target(Who::Alice)?.url(&repo.name))
    }

    /// A clone of `repo` by the client, as alice.
    fn clone(&self, repo: &ServedRepo, depth: Option<u32>) -> Result<PathBuf, Failure> {
        let dir = self.home.join("clones").join(&self.label);
        let mut args = vec!["clone".to_owned(), self.url(repo)?, path_arg(&dir)];
        if let Some(depth) = depth {
            args.extend(["--depth".to_owned(), depth.to_string()]);
        }
        self.must(Who::Alice, &args)?;
        Ok(dir)
    }

    fn fetch(&self, dir: &Path, flags: &[&str]) -> Checked {
        let mut args = vec!["fetch".to_owned(), path_arg(dir)];
        args.extend(flags.iter().map(|f| f.to_string()));
        self.must(Who::Alice, &args).map(drop)
    }

    fn push(&self, who: Who, dir: &Path, flags: &[&str], specs: &[String]) -> Result<Ran, Failure> {
        let mut args = vec!["push".to_owned(), path_arg(dir)];
        args.extend(flags.iter().map(|f| f.to_string()));
        args.extend(specs.iter().cloned());
        let ran = self.run(who, &args)?;
        if ran.unsupported() {
            return Err(Failure::Unsupported(ran.text()));
        }
        Ok(ran)
    }

    /// A push that must succeed.
    fn push_ok(&self, dir: &Path, specs: &[String]) -> Checked {
        let ran = self.push(Who::Alice, dir, &[], specs)?;
        if !ran.ok() {
            return failed(format!("push failed: {}", ran.text()));
        }
        Ok(())
    }

    /// Every ref of the served repository: name to id.
    fn server_refs(&self, repo: &ServedRepo) -> BTreeMap<String, String> {
        let listing = if repo.reftable {
            let o = isolate(&mut Command::new(env!("CARGO_BIN_EXE_refstore")), self.home)
                .arg("show-ref")
                .current_dir(&repo.path)
                .output()
                .unwrap();
            stdout(&o)
        } else {
            self.git_ok(
                &repo.path,
                &["for-each-ref", "--format=%(objectname) %(refname)"],
            )
        };
        parse_refs(&listing)
    }

    fn server_ref(&self, repo: &ServedRepo, name: &str) -> Option<String> {
        self.server_refs(repo).remove(name)
    }

    /// A new commit in the clone `dir` on `parent`, at `refs/heads/<branch>`.
    fn commit(&self, dir: &Path, parent: &str, branch: &str) -> String {
        let tree = self.git_ok(dir, &["rev-parse", &format!("{parent}^{{tree}}")]);
        let message = format!("{branch} by {}", self.label);
        let oid = self.git_ok(dir, &["commit-tree", &tree, "-p", parent, "-m", &message]);
        self.git_ok(dir, &["update-ref", &format!("refs/heads/{branch}"), &oid]);
        oid
    }

    /// Moves the server's `main` to the fixtures' next commit (and makes
    /// `fresh` there), as another pusher would; returns that commit.
    fn advance(&self, repo: &ServedRepo) -> String {
        let source = &self.fixtures.sha1;
        self.git_ok(
            source,
            &[
                "push",
                "-q",
                repo.path.to_str().unwrap(),
                "refs/extra/next:refs/heads/main",
                "refs/extra/next:refs/heads/fresh",
            ],
        );
        self.git_ok(source, &["rev-parse", "refs/extra/next"])
    }

    fn configure(&self, repo: &ServedRepo, key: &str, value: &str) {
        self.git_ok(&repo.path, &["config", key, value]);
    }
}

fn path_arg(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

fn parse_refs(listing: &str) -> BTreeMap<String, String> {
    listing
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(oid, name)| (name.trim().to_owned(), oid.to_owned()))
        .collect()
}

fn local_ref(ctx: &Ctx, dir: &Path, name: &str) -> Option<String> {
    let o = git(ctx.home, dir, &["rev-parse", "--verify", "-q", name]);
    o.status.success().then(|| stdout(&o).trim().to_owned())
}

fn expect_eq(what: &str, got: Option<String>, want: Option<&str>) -> Checked {
    if got.as_deref() == want {
        Ok(())
    } else {
        failed(format!("{what}: {got:?}, expected {want:?}"))
    }
}

fn fsck(ctx: &Ctx, dir: &Path) -> Checked {
    let o = git(ctx.home, dir, &["fsck", "--no-dangling"]);
    if o.status.success() {
        Ok(())
    } else {
        failed(format!(
            "git fsck of the clone: {}{}",
            stdout(&o),
            stderr(&o)
        ))
    }
}

/// The clone's remote-tracking branches and tags are the server's, and
/// git finds it complete.
fn check_clone(ctx: &Ctx, dir: &Path, repo: &ServedRepo) -> Checked {
    for (name, oid) in ctx.server_refs(repo) {
        let local = if let Some(branch) = name.strip_prefix("refs/heads/") {
            format!("refs/remotes/origin/{branch}")
        } else {
            name.clone()
        };
        expect_eq(&local, local_ref(ctx, dir, &local), Some(&oid))?;
    }
    fsck(ctx, dir)
}

fn commits_in(ctx: &Ctx, dir: &Path, rev: &str) -> usize {
    let o = git(ctx.home, dir, &["rev-list", "--count", rev]);
    stdout(&o).trim().parse().unwrap_or(0)
}

fn clone(ctx: &Ctx) -> Checked {
    let repo = ctx.serve(Seed::Sha1)?;
    let dir = ctx.clone(&repo, None)?;
    check_clone(ctx, &dir, &repo)
}

fn shallow_clone(ctx: &Ctx) -> Result<(ServedRepo, PathBuf), Failure> {
    let repo = ctx.serve(Seed::Sha1)?;
    let dir = ctx.clone(&repo, Some(1))?;
    let main = ctx.server_ref(&repo, "refs/heads/main");
    expect_eq(
        "origin/main",
        local_ref(ctx, &dir, "refs/remotes/origin/main"),
        main.as_deref(),
    )?;
    if !dir.join(".git/shallow").exists() || commits_in(ctx, &dir, "refs/remotes/origin/main") != 1
    {
        return failed("the depth-1 clone is not one commit deep");
    }
    Ok((repo, dir))
}

fn shallow_fetch(ctx: &Ctx) -> Checked {
    let (repo, dir) = shallow_clone(ctx)?;
    let next = ctx.advance(&repo);
    ctx.fetch(&dir, &["--depth", "1"])?;
    expect_eq(
        "origin/main after fetch",
        local_ref(ctx, &dir, "refs/remotes/origin/main"),
        Some(&next),
    )?;
    if !dir.join(".git/shallow").exists() {
        return failed("the clone is no longer shallow");
    }
    fsck(ctx, &dir)
}

fn deepen(ctx: &Ctx) -> Checked {
    let (_repo, dir) = shallow_clone(ctx)?;
    ctx.fetch(&dir, &["--depth", "2"])?;
    // Two commits of main at least (topic, a commit behind, is deepened
    // too and brings a third), and still shallow.
    let n = commits_in(ctx, &dir, "refs/remotes/origin/main");
    let all = commits_in(ctx, &ctx.fixtures.sha1, "refs/heads/main");
    if n < 2 || n >= all || !dir.join(".git/shallow").exists() {
        return failed(format!("{n} of {all} commits after deepening to 2"));
    }
    fsck(ctx, &dir)
}

fn unshallow(ctx: &Ctx) -> Checked {
    let (_repo, dir) = shallow_clone(ctx)?;
    ctx.fetch(&dir, &["--unshallow"])?;
    if dir.join(".git/shallow").exists() {
        return failed(".git/shallow is still there");
    }
    let want = commits_in(ctx, &ctx.fixtures.sha1, "refs/heads/main");
    let n = commits_in(ctx, &dir, "refs/remotes/origin/main");
    if n != want {
        return failed(format!("{n} commits after unshallow, {want} on the server"));
    }
    fsck(ctx, &dir)
}

fn fetch_new(ctx: &Ctx) -> Checked {
    let repo = ctx.serve(Seed::Sha1)?;
    let dir = ctx.clone(&repo, None)?;
    ctx.advance(&repo);
    ctx.fetch(&dir, &[])?;
    check_clone(ctx, &dir, &repo)
}

fn branch_spec(branch: &str) -> String {
    format!("refs/heads/{branch}:refs/heads/{branch}")
}

fn push_branch(ctx: &Ctx) -> Checked {
    let repo = ctx.serve(Seed::Sha1)?;
    let dir = ctx.clone(&repo, None)?;
    let oid = ctx.commit(&dir, "refs/remotes/origin/main", "feature");
    ctx.push_ok(&dir, &[branch_spec("feature")])?;
    expect_eq(
        "feature on the server",
        ctx.server_ref(&repo, "refs/heads/feature"),
        Some(&oid),
    )?;
    server_fsck(ctx, &repo)
}

/// The served repository is complete by git's reading.
fn server_fsck(ctx: &Ctx, repo: &ServedRepo) -> Checked {
    let o = git(ctx.home, &repo.path, &["fsck", "--no-dangling"]);
    if o.status.success() {
        Ok(())
    } else {
        failed(format!("git fsck on the server: {}", stderr(&o)))
    }
}

fn fast_forward(ctx: &Ctx) -> Checked {
    let repo = ctx.serve(Seed::Sha1)?;
    let dir = ctx.clone(&repo, None)?;
    let oid = ctx.commit(&dir, "refs/remotes/origin/main", "main");
    ctx.push_ok(&dir, &[branch_spec("main")])?;
    expect_eq(
        "main on the server",
        ctx.server_ref(&repo, "refs/heads/main"),
        Some(&oid),
    )?;
    server_fsck(ctx, &repo)
}

fn force_push(ctx: &Ctx) -> Checked {
    let repo = ctx.serve(Seed::Sha1)?;
    let dir = ctx.clone(&repo, None)?;
    let oid = ctx.commit(&dir, "refs/remotes/origin/main~1", "main");
    ctx.push_ok(&dir, &[format!("+{}", branch_spec("main"))])?;
    expect_eq(
        "main on the server",
        ctx.server_ref(&repo, "refs/heads/main"),
        Some(&oid),
    )?;
    server_fsck(ctx, &repo)
}

/// A forced non-fast-forward push to a repository with
/// `receive.denyNonFastForwards`: the server refuses the ref.
fn non_ff_refused(ctx: &Ctx) -> Checked {
    let repo = ctx.serve(Seed::Sha1)?;
    ctx.configure(&repo, "receive.denyNonFastForwards", "true");
    let before = ctx.server_refs(&repo);
    let dir = ctx.clone(&repo, None)?;
    ctx.commit(&dir, "refs/remotes/origin/main~1", "main");
    let ran = ctx.push(
        Who::Alice,
        &dir,
        &[],
        &[format!("+{}", branch_spec("main"))],
    )?;
    refused(&ran, &["non-fast-forward"])?;
    unchanged(ctx, &repo, &before)
}

/// The push failed and said one of `reasons` (case aside).
fn refused(ran: &Ran, reasons: &[&str]) -> Checked {
    if ran.ok() {
        return failed(format!("the push was not refused: {}", ran.text()));
    }
    let text = ran.text().to_lowercase();
    if reasons.iter().any(|r| text.contains(r)) {
        Ok(())
    } else {
        failed(format!(
            "refused without saying any of {reasons:?}: {}",
            ran.text()
        ))
    }
}

fn unchanged(ctx: &Ctx, repo: &ServedRepo, before: &BTreeMap<String, String>) -> Checked {
    let after = ctx.server_refs(repo);
    if &after == before {
        Ok(())
    } else {
        failed(format!(
            "the server's refs changed: {before:?} -> {after:?}"
        ))
    }
}

fn delete_branch(ctx: &Ctx) -> Checked {
    let repo = ctx.serve(Seed::Sha1)?;
    let dir = ctx.clone(&repo, None)?;
    let mut expected = ctx.server_refs(&repo);
    expected
        .remove("refs/heads/topic")
        .expect("the fixture has topic");
    ctx.push_ok(&dir, &[":refs/heads/topic".to_owned()])?;
    unchanged(ctx, &repo, &expected)
}

/// 200 branches made in one push, then deleted in one push.
fn many_refs(ctx: &Ctx) -> Checked {
    const N: usize = 200;
    let repo = ctx.serve(Seed::Sha1)?;
    let dir = ctx.clone(&repo, None)?;
    let before = ctx.server_refs(&repo);
    // Each branch its own commit, so no two refs are alike.
    let mut stdin = String::new();
    let tree = ctx.git_ok(&dir, &["rev-parse", "refs/remotes/origin/main^{tree}"]);
    let parent = ctx.git_ok(&dir, &["rev-parse", "refs/remotes/origin/main"]);
    let mut expected = before.clone();
    for i in 0..N {
        let oid = ctx.git_ok(
            &dir,
            &[
                "commit-tree",
                &tree,
                "-p",
                &parent,
                "-m",
                &format!("many {i}"),
            ],
        );
        let name = format!("refs/heads/many/{i:03}");
        stdin.push_str(&format!("create {name} {oid}\n"));
        expected.insert(name, oid);
    }
    let o = crate::support::run_with_input(
        isolate(&mut Command::new("git"), ctx.home)
            .args(["update-ref", "--stdin"])
            .current_dir(&dir),
        stdin.as_bytes(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let specs: Vec<String> = (0..N)
        .map(|i| branch_spec(&format!("many/{i:03}")))
        .collect();
    ctx.push_ok(&dir, &specs)?;
    unchanged(ctx, &repo, &expected).map_err(|e| match e {
        Failure::Failed(why) => Failure::Failed(format!("after creating {N}: {why}")),
        other => other,
    })?;
    let deletions: Vec<String> = (0..N).map(|i| format!(":refs/heads/many/{i:03}")).collect();
    ctx.push_ok(&dir, &deletions)?;
    unchanged(ctx, &repo, &before)
}

/// An atomic push of a new branch and a refused update: nothing changes.
fn atomic(ctx: &Ctx) -> Checked {
    let repo = ctx.serve(Seed::Sha1)?;
    ctx.configure(&repo, "receive.denyNonFastForwards", "true");
    let before = ctx.server_refs(&repo);
    let dir = ctx.clone(&repo, None)?;
    ctx.commit(&dir, "refs/remotes/origin/main~1", "main");
    ctx.commit(&dir, "refs/remotes/origin/main", "atomic-new");
    let ran = ctx.push(
        Who::Alice,
        &dir,
        &["--atomic"],
        &[
            format!("+{}", branch_spec("main")),
            branch_spec("atomic-new"),
        ],
    )?;
    if ran.ok() {
        return failed(format!("the atomic push was not refused: {}", ran.text()));
    }
    unchanged(ctx, &repo, &before)
}

/// Push options reach the pre-receive hook.
fn push_options(ctx: &Ctx) -> Checked {
    let repo = ctx.serve(Seed::Sha1)?;
    ctx.configure(&repo, "receive.advertisePushOptions", "true");
    let seen = ctx.home.join("hook-output").join(&ctx.label);
    std::fs::create_dir_all(seen.parent().unwrap()).unwrap();
    let hook = repo.path.join("hooks/pre-receive");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\n{{ echo \"$GIT_PUSH_OPTION_COUNT\"; i=0; while [ \"$i\" -lt \"${{GIT_PUSH_OPTION_COUNT:-0}}\" ]; do eval \"echo \\\"\\$GIT_PUSH_OPTION_$i\\\"\"; i=$((i+1)); done; }} > '{}'\n",
            seen.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let dir = ctx.clone(&repo, None)?;
    let oid = ctx.commit(&dir, "refs/remotes/origin/main", "with-options");
    let ran = ctx.push(
        Who::Alice,
        &dir,
        &["--option", "ci.skip=yes", "--option", "topic=interop"],
        &[branch_spec("with-options")],
    )?;
    if !ran.ok() {
        return failed(format!("push failed: {}", ran.text()));
    }
    expect_eq(
        "with-options on the server",
        ctx.server_ref(&repo, "refs/heads/with-options"),
        Some(&oid),
    )?;
    let got = std::fs::read_to_string(&seen).unwrap_or_default();
    // go-git sends options from a map, in no set order.
    let mut lines: Vec<&str> = got.lines().collect();
    lines.sort();
    if lines == ["2", "ci.skip=yes", "topic=interop"] {
        Ok(())
    } else {
        failed(format!("the hook saw {got:?}"))
    }
}

/// The refs a client listed, and what the server holds: HEAD, every ref,
/// and every annotated tag peeled; and the repository's name.
fn listed(ctx: &Ctx, protocol: Option<u8>) -> Result<(Refs, Refs, String), Failure> {
    let repo = ctx.serve(Seed::Sha1)?;
    let mut args = vec!["ls-remote".to_owned(), ctx.url(&repo)?];
    if let Some(v) = protocol {
        args.extend(["--protocol".to_owned(), v.to_string()]);
    }
    let ran = ctx.must(Who::Alice, &args)?;
    let shown = ctx.git_ok(&repo.path, &["show-ref", "--head", "-d"]);
    Ok((parse_refs(&ran.out), parse_refs(&shown), repo.name))
}

fn ls_remote(ctx: &Ctx, protocol: u8) -> Checked {
    let (got, want, name) = listed(ctx, Some(protocol))?;
    let unpeeled = |m: &Refs| -> Refs {
        m.iter()
            .filter(|(k, _)| !k.ends_with("^{}"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    if unpeeled(&got) != unpeeled(&want) {
        return failed(format!("listed {got:?}, the server has {want:?}"));
    }
    // Over HTTP the protocol shows: v0 lists refs in the answer to GET
    // info/refs, v2 asks for them in a POST (ls-refs). refstore's access
    // log tells which came.
    if !ctx.control && ctx.transport != Transport::Ssh {
        let post = format!("/{name}/git-upload-pack");
        let posted = ctx.servers.logged_request(
            ctx.transport,
            &post,
            std::time::Duration::from_secs(if protocol == 2 { 5 } else { 1 }),
        );
        if posted != (protocol == 2) {
            return failed(format!(
                "asked for protocol v{protocol}, but the client {} POST {post}",
                if posted { "sent" } else { "never sent" }
            ));
        }
    }
    Ok(())
}

fn ls_remote_v0(ctx: &Ctx) -> Checked {
    ls_remote(ctx, 0)
}

fn ls_remote_v2(ctx: &Ctx) -> Checked {
    ls_remote(ctx, 2)
}

/// ls-remote (the client's own protocol) shows the annotated tag peeled.
fn tags_peeled(ctx: &Ctx) -> Checked {
    let (got, want, _) = listed(ctx, None)?;
    let peeled = |m: &Refs| -> Vec<(String, String)> {
        m.iter()
            .filter(|(k, _)| k.ends_with("^{}"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    if !peeled(&want).is_empty() && peeled(&got) == peeled(&want) {
        Ok(())
    } else {
        failed(format!(
            "peeled tags listed {:?}, expected {:?}",
            peeled(&got),
            peeled(&want)
        ))
    }
}

/// Clone of a SHA-256 repository, and a push to it.
fn sha256(ctx: &Ctx) -> Checked {
    let repo = ctx.serve(Seed::Sha256)?;
    let dir = ctx.clone(&repo, None)?;
    check_clone(ctx, &dir, &repo)?;
    let oid = ctx.commit(&dir, "refs/remotes/origin/main", "feature");
    ctx.push_ok(&dir, &[branch_spec("feature")])?;
    expect_eq(
        "feature on the server",
        ctx.server_ref(&repo, "refs/heads/feature"),
        Some(&oid),
    )?;
    server_fsck(ctx, &repo)
}

/// Clone of a reftable repository, a push of a branch and a deletion.
fn reftable(ctx: &Ctx) -> Checked {
    let repo = ctx.serve(Seed::Reftable)?;
    let dir = ctx.clone(&repo, None)?;
    check_clone(ctx, &dir, &repo)?;
    let mut expected = ctx.server_refs(&repo);
    let oid = ctx.commit(&dir, "refs/remotes/origin/main", "feature");
    ctx.push_ok(
        &dir,
        &[branch_spec("feature"), ":refs/heads/topic".to_owned()],
    )?;
    expected.insert("refs/heads/feature".to_owned(), oid);
    expected.remove("refs/heads/topic");
    unchanged(ctx, &repo, &expected)
}

/// What clients say when the server wants credentials they lack.
const AUTH_REFUSALS: &[&str] = &[
    "401",
    "auth",
    "denied",
    "credential",
    "username",
    "unauthorized",
    "permission",
];

fn refused_push_as(ctx: &Ctx, who: Who, reasons: &[&str]) -> Checked {
    let repo = ctx.serve(Seed::Sha1)?;
    let before = ctx.server_refs(&repo);
    let dir = ctx.clone(&repo, None)?;
    ctx.commit(&dir, "refs/remotes/origin/main", "refused");
    let ran = ctx.push(who, &dir, &[], &[branch_spec("refused")])?;
    refused(&ran, reasons)?;
    unchanged(ctx, &repo, &before)
}

fn anonymous_push(ctx: &Ctx) -> Checked {
    refused_push_as(ctx, Who::Anonymous, AUTH_REFUSALS)
}

fn wrong_password(ctx: &Ctx) -> Checked {
    refused_push_as(ctx, Who::WrongPassword, AUTH_REFUSALS)
}

/// bob may read but not push; alice may push.
fn access_rule(ctx: &Ctx) -> Checked {
    let repo = ctx.serve(Seed::Sha1)?;
    let before = ctx.server_refs(&repo);
    let dir = ctx.clone(&repo, None)?;
    let oid = ctx.commit(&dir, "refs/remotes/origin/main", "ruled");
    let ran = ctx.push(Who::Bob, &dir, &[], &[branch_spec("ruled")])?;
    // JGit shows no reason of the server's for a 403, only its own words.
    refused(&ran, &["may not push", "403", "forbidden", "not permitted"])?;
    unchanged(ctx, &repo, &before)?;
    ctx.push_ok(&dir, &[branch_spec("ruled")])?;
    expect_eq(
        "ruled on the server",
        ctx.server_ref(&repo, "refs/heads/ruled"),
        Some(&oid),
    )
}
