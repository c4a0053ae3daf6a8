//! The servers the interop suite runs its clients against: `refstore
//! serve` over HTTP, HTTPS and its built-in SSH server, and, as controls,
//! git's own servers (`git http-backend` behind [`super::cgi`], and
//! OpenSSH's sshd running git's `git-upload-pack`/`git-receive-pack`,
//! [`super::sshd`]), all on loopback with the same users and rules:
//! anyone may read, alice may push, bob may only read.

use super::{cgi::CgiServer, sshd::Sshd};
use crate::served::Served;
use crate::ssh_served::{keygen, SshServed};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Http,
    Https,
    Ssh,
}

impl Transport {
    pub const ALL: [Transport; 3] = [Transport::Http, Transport::Https, Transport::Ssh];

    pub fn name(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::Https => "https",
            Transport::Ssh => "ssh",
        }
    }
}

/// Who a client acts as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Who {
    /// May push.
    Alice,
    /// May read, not push.
    Bob,
    /// No credentials (over SSH: a key the server does not know).
    Anonymous,
    /// alice's name with a wrong password (HTTP only).
    WrongPassword,
}

impl Who {
    /// The user and password sent over HTTP, if any.
    pub fn login(self) -> Option<(&'static str, &'static str)> {
        match self {
            Who::Alice => Some(("alice", "alice-pw")),
            Who::Bob => Some(("bob", "bob-pw")),
            Who::WrongPassword => Some(("alice", "a-guess")),
            Who::Anonymous => None,
        }
    }
}

const USERS: &str = "alice:alice-pw\nbob:bob-pw\n";
const ACCESS: &str = "* read *\nalice write *\n";

/// SSH keys: alice's, bob's and a stranger's, made by ssh-keygen (ECDSA,
/// which every client's SSH implementation reads).
#[derive(Clone, Debug)]
pub struct Keys {
    pub alice: (PathBuf, String),
    pub bob: (PathBuf, String),
    pub stranger: PathBuf,
}

impl Keys {
    fn make(home: &Path) -> Keys {
        Keys {
            alice: keygen(home, "alice_key", "ecdsa", "alice"),
            bob: keygen(home, "bob_key", "ecdsa", "bob"),
            stranger: keygen(home, "stranger_key", "ecdsa", "stranger").0,
        }
    }

    pub fn key(&self, who: Who) -> PathBuf {
        match who {
            Who::Alice | Who::WrongPassword => self.alice.0.clone(),
            Who::Bob => self.bob.0.clone(),
            Who::Anonymous => self.stranger.clone(),
        }
    }
}

/// Where a client goes: a server's URL prefix for a transport, and the
/// directory its repositories are in.
#[derive(Clone, Debug)]
pub struct Target {
    pub transport: Transport,
    base: String,
    pub root: PathBuf,
    /// The certificate to trust (HTTPS).
    pub ca: Option<PathBuf>,
    pub keys: Keys,
}

impl Target {
    pub fn url(&self, repo: &str) -> String {
        format!("{}{repo}", self.base)
    }
}

/// Every server of the suite, stopped when dropped.
pub struct Servers {
    /// refstore over HTTP and SSH.
    plain: SshServed,
    /// refstore over HTTPS.
    tls: Served,
    /// refstore over HTTP and HTTPS for wrong passwords only, so that the
    /// throttle of failed logins never slows the other operations.
    guessed: Served,
    guessed_tls: Served,
    cgi: CgiServer,
    /// None where sshd is not installed: SSH has no control then.
    sshd: Option<Sshd>,
    pub served_root: PathBuf,
    pub control_root: PathBuf,
    cert: PathBuf,
    keys: Keys,
}

/// A self-signed certificate for 127.0.0.1: (certificate, key).
fn certificate(home: &Path) -> (PathBuf, PathBuf) {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let cert = home.join("server.crt");
    let key = home.join("server.key");
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

impl Servers {
    pub fn start(home: &Path) -> Servers {
        let served_root = home.join("served");
        let control_root = home.join("control");
        std::fs::create_dir_all(&served_root).unwrap();
        std::fs::create_dir_all(&control_root).unwrap();
        let keys = Keys::make(home);
        let users = home.join("users");
        std::fs::write(&users, USERS).unwrap();
        let access = home.join("access");
        std::fs::write(&access, ACCESS).unwrap();
        let (cert, key) = certificate(home);
        // One address holds at most half the workers' services: room for
        // every client and transport at once.
        let common = [
            "--workers",
            "32",
            "--allow-push",
            "--credentials",
            users.to_str().unwrap(),
            "--access",
            access.to_str().unwrap(),
        ];
        let tls_args: Vec<&str> = common
            .iter()
            .copied()
            .chain([
                "--tls-cert",
                cert.to_str().unwrap(),
                "--tls-key",
                key.to_str().unwrap(),
            ])
            .collect();
        let authorized = format!(
            "{} alice\n{} bob\n",
            first_two_fields(&keys.alice.1),
            first_two_fields(&keys.bob.1)
        );
        Servers {
            plain: SshServed::start(home, &served_root, &authorized, &common),
            tls: Served::start(home, &served_root, &tls_args),
            guessed: Served::start(home, &served_root, &common),
            guessed_tls: Served::start(home, &served_root, &tls_args),
            cgi: CgiServer::start(&control_root, USERS, &["alice"]),
            sshd: Sshd::start(home, &keys),
            served_root,
            control_root,
            cert,
            keys,
        }
    }

    /// Where to go for `transport`: refstore, or git's server if
    /// `control`; with a wrong password, refstore's servers kept for
    /// that. None for SSH controls where sshd is missing.
    pub fn target(&self, transport: Transport, control: bool, who: Who) -> Option<Target> {
        let guessing = who == Who::WrongPassword;
        let base = match (transport, control) {
            (Transport::Http, false) if guessing => format!("http://{}/", self.guessed.addr),
            (Transport::Http, false) => format!("http://{}/", self.plain.http),
            (Transport::Https, false) if guessing => {
                format!("https://{}/", self.guessed_tls.addr)
            }
            (Transport::Https, false) => format!("https://{}/", self.tls.addr),
            (Transport::Ssh, false) => format!("ssh://git@127.0.0.1:{}/", self.plain.port),
            // git's HTTP control is plain HTTP for both HTTP and HTTPS.
            (Transport::Http | Transport::Https, true) => format!("http://{}/", self.cgi.addr),
            (Transport::Ssh, true) => self.sshd.as_ref()?.base(&self.control_root),
        };
        Some(Target {
            transport,
            base,
            root: if control {
                self.control_root.clone()
            } else {
                self.served_root.clone()
            },
            ca: (transport == Transport::Https && !control).then(|| self.cert.clone()),
            keys: self.keys.clone(),
        })
    }

    /// Whether refstore's HTTP or HTTPS server logged a request whose
    /// URL holds `url` (waiting up to `limit`: the access line follows the
    /// answer).
    pub fn logged_request(&self, transport: Transport, url: &str, limit: Duration) -> bool {
        let text = format!("url={url}");
        match transport {
            Transport::Http => self.plain.logged_within(&text, limit),
            Transport::Https => self.tls.logged_within(&text, limit),
            Transport::Ssh => panic!("SSH requests have no URL"),
        }
    }

    pub fn has_ssh_control(&self) -> bool {
        self.sshd.is_some()
    }
}

fn first_two_fields(public: &str) -> String {
    public
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}
