//! The SSH control: OpenSSH's sshd on a loopback port, run as the user
//! running the tests, which runs the machine's `git-upload-pack` and
//! `git-receive-pack` on absolute paths. alice's key may do anything; bob's
//! runs through a forced command that refuses `git-receive-pack` as
//! refstore's access rules do; the stranger's key is unknown.
//!
//! Missing sshd (`openssh-server`, which `scripts/install-deps` installs)
//! means no SSH control: then no SSH failure can be put down to a client.

use super::servers::Keys;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Sshd {
    child: Child,
    port: u16,
    user: String,
}

const SSHD: &str = "/usr/sbin/sshd";

/// bob's forced command: reads as asked, refuses pushes.
const READ_ONLY: &str = "case \"$SSH_ORIGINAL_COMMAND\" in *receive-pack*) echo \"user 'bob' may not push\" >&2; exit 1;; esac; exec sh -c \"$SSH_ORIGINAL_COMMAND\"";

impl Sshd {
    pub fn start(home: &Path, keys: &Keys) -> Option<Sshd> {
        if !Path::new(SSHD).exists() {
            return None;
        }
        let dir = home.join("sshd");
        std::fs::create_dir_all(&dir).unwrap();
        let host_key = crate::ssh_served::keygen(&dir, "host_key", "ed25519", "host").0;
        let authorized = dir.join("authorized_keys");
        let public = |line: &str| {
            line.split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
        };
        std::fs::write(
            &authorized,
            format!(
                "{}\ncommand=\"{}\",no-pty {}\n",
                public(&keys.alice.1),
                READ_ONLY.replace('"', "\\\""),
                public(&keys.bob.1)
            ),
        )
        .unwrap();
        let root = unsafe { libc::geteuid() } == 0;
        if root {
            // sshd's privilege separation directory, which a container's
            // fresh /run lacks.
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = dir.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "ListenAddress 127.0.0.1:{port}\nHostKey {}\nAuthorizedKeysFile {}\nPidFile none\nStrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nAcceptEnv GIT_PROTOCOL\nMaxStartups 100\nLogLevel ERROR\n",
                host_key.display(),
                authorized.display()
            ),
        )
        .unwrap();
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_owned();
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if started.elapsed() > Duration::from_secs(10) {
                let mut child = child;
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Sshd { child, port, user })
    }

    /// The URL prefix of the repositories below `root`.
    pub fn base(&self, root: &Path) -> String {
        let root: PathBuf = root.canonicalize().unwrap();
        format!(
            "ssh://{}@127.0.0.1:{}{}/",
            self.user,
            self.port,
            root.display()
        )
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
