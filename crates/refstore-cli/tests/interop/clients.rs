//! The third-party clients of the interop suite and how to run them: the
//! machine's git directly, and JGit, dulwich, pygit2 and go-git through
//! their drivers (JGit's in long-lived sessions,
//! [`super::jgit_sessions`]), which all take the command line described in
//! `interop/clients/driver_args.py` (`clone`, `fetch`, `push`,
//! `ls-remote`) and answer with exit 0 (done), 1 (refused or failed) or 3
//! (the client has no way to do it).
//!
//! The Python clients live in a virtual environment that
//! `scripts/install-deps` makes in the clients' cache directory; go-git's
//! driver is built from `interop/go-git` and JGit's with Maven, here.

use super::jgit_sessions::Sessions;
use super::servers::{Target, Transport, Who};
use crate::support::isolate;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where `scripts/install-deps` puts the clients it installs:
/// `$REFSTORE_INTEROP_CLIENTS`, else `~/.cache/refstore/interop-clients`
/// (the same rule as the script's).
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("REFSTORE_INTEROP_CLIENTS") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").expect("HOME is not set");
    Path::new(&home).join(".cache/refstore/interop-clients")
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One client: its name in the matrix, its version, and the command that
/// runs its driver (empty for git, which is run directly), or its
/// sessions (JGit).
pub struct Client {
    pub name: &'static str,
    pub version: String,
    driver: Vec<OsString>,
    sessions: Option<Sessions>,
}

/// What a client run gave.
#[derive(Debug)]
pub struct Ran {
    pub code: i32,
    pub out: String,
    pub err: String,
}

impl Ran {
    pub fn ok(&self) -> bool {
        self.code == 0
    }

    /// The client said it has no way to do what was asked.
    pub fn unsupported(&self) -> bool {
        self.code == 3
    }

    /// Everything it printed, for messages.
    pub fn text(&self) -> String {
        format!("{}{}", self.out, self.err).trim().to_owned()
    }
}

/// The clients found, and the ones that could not be found with why.
pub struct Found {
    pub clients: Vec<Client>,
    pub missing: Vec<(&'static str, String)>,
}

/// Finds (or builds) one client, or says why it cannot.
type Finder = fn() -> Result<Client, String>;

/// Finds (and builds where need be) every client.
pub fn find_all() -> Found {
    let mut found = Found {
        clients: vec![git()],
        missing: Vec::new(),
    };
    let attempts: [(&'static str, Finder); 4] = [
        ("jgit", jgit),
        ("dulwich", || python("dulwich")),
        ("pygit2", || python("pygit2")),
        ("go-git", go_git),
    ];
    for (name, find) in attempts {
        match find() {
            Ok(client) => found.clients.push(client),
            Err(why) => found.missing.push((name, why)),
        }
    }
    found
}

fn git() -> Client {
    let o = Command::new("git").arg("--version").output().unwrap();
    Client {
        name: "git",
        version: String::from_utf8_lossy(&o.stdout).trim().to_owned(),
        driver: Vec::new(),
        sessions: None,
    }
}

fn jgit() -> Result<Client, String> {
    let classpath = std::panic::catch_unwind(crate::support::jgit::classpath)
        .map_err(|_| "building interop/jgit with Maven failed (see above)".to_owned())?;
    let pom = std::fs::read_to_string(repo_root().join("interop/jgit/pom.xml")).unwrap();
    let version = pom
        .split("<jgit.version>")
        .nth(1)
        .and_then(|s| s.split('<').next())
        .unwrap_or("?");
    Ok(Client {
        name: "jgit",
        version: format!("JGit {version}"),
        driver: Vec::new(),
        sessions: Some(Sessions::new(
            [
                "java",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                classpath,
                "refstore.interop.JGitClient",
            ]
            .iter()
            .map(OsString::from)
            .collect(),
        )),
    })
}

fn python(module: &'static str) -> Result<Client, String> {
    let python = cache_dir().join("venv/bin/python");
    let o = Command::new(&python)
        .args([
            "-c",
            &format!("import {module}; print({module}.__version__)"),
        ])
        .output()
        .map_err(|e| format!("{}: {e} (scripts/install-deps makes it)", python.display()))?;
    if !o.status.success() {
        return Err(format!(
            "{module} is not importable in {}: {}",
            python.display(),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    let version = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let script = repo_root().join(format!("interop/clients/{module}_client.py"));
    Ok(Client {
        name: module,
        version: format!("{module} {version}"),
        driver: vec![python.into(), script.into()],
        sessions: None,
    })
}

fn go_git() -> Result<Client, String> {
    let go = ["/usr/local/go/bin/go", "go"]
        .into_iter()
        .find(|g| Command::new(g).arg("version").output().is_ok())
        .ok_or("Go is not installed (scripts/install-deps installs it)")?;
    let dir = repo_root().join("interop/go-git");
    let binary = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-git-driver");
    let o = Command::new(go)
        .env("GOTOOLCHAIN", "local")
        .args(["build", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(&dir)
        .output()
        .map_err(|e| e.to_string())?;
    if !o.status.success() {
        return Err(format!(
            "go build in interop/go-git: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let gomod = std::fs::read_to_string(dir.join("go.mod")).unwrap();
    let version = gomod
        .lines()
        .find_map(|l| l.trim().strip_prefix("github.com/go-git/go-git/v5 "))
        .unwrap_or("?");
    Ok(Client {
        name: "go-git",
        version: format!("go-git {version}"),
        driver: vec![binary.into()],
        sessions: None,
    })
}

/// The environment that gives a client `who`'s credentials for `target`.
fn credentials_env(target: &Target, who: Who) -> Vec<(&'static str, OsString)> {
    let mut env = Vec::new();
    if let Some(ca) = &target.ca {
        env.push(("INTEROP_CA", ca.clone().into_os_string()));
        env.push(("GIT_SSL_CAINFO", ca.clone().into_os_string()));
    }
    match target.transport {
        Transport::Ssh => {
            let key = target.keys.key(who);
            env.push(("INTEROP_SSH_KEY", key.clone().into_os_string()));
            // The login name of the URL, for go-git, which does not read it.
            let url = target.url("");
            let user = url
                .strip_prefix("ssh://")
                .and_then(|rest| rest.split_once('@'))
                .map_or("git", |(user, _)| user);
            env.push(("INTEROP_SSH_USER", user.into()));
            env.push(("GIT_SSH_COMMAND", ssh_command(&key).into()));
        }
        Transport::Http | Transport::Https => {
            if let Some((user, password)) = who.login() {
                env.push(("INTEROP_USER", user.into()));
                env.push(("INTEROP_PASSWORD", password.into()));
            }
        }
    }
    env
}

/// The OpenSSH client with only `key` and no host checks (for git and
/// dulwich, which run `ssh`).
pub fn ssh_command(key: &Path) -> String {
    format!(
        "ssh -F /dev/null -i {} -o IdentitiesOnly=yes -o IdentityAgent=none -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        key.display()
    )
}

impl Client {
    /// Runs the driver command `args` (see the module's doc) as `who`
    /// against `target`, with `home` as HOME.
    pub fn run(&self, home: &Path, target: &Target, who: Who, args: &[String]) -> Ran {
        let env = credentials_env(target, who);
        if let Some(sessions) = &self.sessions {
            return sessions.run(home, &env, args);
        }
        if self.driver.is_empty() {
            return run_git(home, &env, args);
        }
        let mut cmd = Command::new(&self.driver[0]);
        isolate(&mut cmd, home)
            .args(&self.driver[1..])
            .env("GIT_TERMINAL_PROMPT", "0")
            .envs(env)
            .args(args)
            .current_dir(home);
        finished(cmd.output().expect("cannot run a client driver"))
    }
}

fn finished(o: std::process::Output) -> Ran {
    Ran {
        code: o.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&o.stdout).into_owned(),
        err: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The driver command line done with the machine's git, which asks for
/// credentials through a helper that answers from the same environment as
/// the drivers read.
fn run_git(home: &Path, env: &[(&'static str, OsString)], args: &[String]) -> Ran {
    let git = |cwd: &Path, argv: Vec<String>| {
        let mut cmd = Command::new("git");
        isolate(&mut cmd, home)
            .env("GIT_TERMINAL_PROMPT", "0")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .args([
                "-c",
                "credential.helper=",
                "-c",
                "credential.helper=!f() { test \"$1\" = get && test -n \"$INTEROP_USER\" && echo username=$INTEROP_USER && echo password=$INTEROP_PASSWORD; }; f",
            ])
            .args(argv)
            .current_dir(cwd);
        finished(cmd.output().expect("cannot run git"))
    };
    let (command, rest) = args.split_first().expect("a driver command");
    let mut flags = Vec::new();
    let mut positional = Vec::new();
    let mut protocol = None;
    let mut i = 0;
    while i < rest.len() {
        match rest[i].as_str() {
            "--depth" => {
                flags.push(format!("--depth={}", rest[i + 1]));
                i += 1;
            }
            "--option" => {
                flags.push(format!("--push-option={}", rest[i + 1]));
                i += 1;
            }
            "--protocol" => {
                protocol = Some(rest[i + 1].clone());
                i += 1;
            }
            "--unshallow" | "--atomic" => flags.push(rest[i].clone()),
            other => positional.push(other.to_owned()),
        }
        i += 1;
    }
    match command.as_str() {
        "clone" => {
            let mut argv = vec![
                "clone".to_owned(),
                "-q".to_owned(),
                "--no-single-branch".to_owned(),
            ];
            argv.extend(flags);
            argv.extend(positional);
            git(home, argv)
        }
        "fetch" => {
            let dir = PathBuf::from(&positional[0]);
            let mut argv = vec!["fetch".to_owned(), "-q".to_owned()];
            argv.extend(flags);
            argv.push("origin".to_owned());
            git(&dir, argv)
        }
        "push" => {
            let dir = PathBuf::from(&positional[0]);
            let mut argv = vec!["push".to_owned(), "--porcelain".to_owned()];
            argv.extend(flags);
            argv.push("origin".to_owned());
            argv.extend(positional[1..].iter().cloned());
            let ran = git(&dir, argv);
            // "<flag>\t<from>:<to>\t<summary>" lines, '!' for a refused ref.
            let mut out = String::new();
            for line in ran.out.lines() {
                let fields: Vec<&str> = line.split('\t').collect();
                if let [flag, spec, summary] = fields[..] {
                    let to = spec.rsplit(':').next().unwrap_or(spec);
                    if flag == "!" {
                        out.push_str(&format!("ng {to} {summary}\n"));
                    } else {
                        out.push_str(&format!("ok {to}\n"));
                    }
                }
            }
            Ran {
                code: if ran.ok() { 0 } else { 1 },
                out,
                err: ran.err,
            }
        }
        "ls-remote" => {
            let mut argv = Vec::new();
            if let Some(version) = protocol {
                argv.push("-c".to_owned());
                argv.push(format!("protocol.version={version}"));
            }
            argv.push("ls-remote".to_owned());
            argv.extend(positional);
            let ran = git(home, argv);
            Ran {
                out: ran.out.replace('\t', " "),
                ..ran
            }
        }
        other => panic!("no driver command {other}"),
    }
}
