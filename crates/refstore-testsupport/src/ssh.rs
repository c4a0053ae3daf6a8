//! OpenSSH as tests use it: key pairs made by ssh-keygen, and the client
//! command line that uses one key and no configuration, agent or host
//! checks, alone or as git's `GIT_SSH_COMMAND`.

use crate::process::stderr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Makes a key pair `home/<name>` of `kind` (`ed25519`, `rsa`, ...) with
/// ssh-keygen; returns the private key's path and the public key's line,
/// with `comment` as its comment.
pub fn keygen(home: &Path, name: &str, kind: &str, comment: &str) -> (PathBuf, String) {
    let path = home.join(name);
    let o = Command::new("ssh-keygen")
        .args(["-q", "-t", kind, "-N", "", "-C", comment, "-f"])
        .arg(&path)
        .output()
        .expect("cannot run ssh-keygen: install openssh-client (scripts/install-deps does)");
    assert!(o.status.success(), "ssh-keygen: {}", stderr(&o));
    let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    (path, public)
}

/// The OpenSSH client with only `key` and no host checks, as a command
/// line (git's `GIT_SSH_COMMAND`; add `-p <port>` to use it alone).
pub fn ssh_command(key: &Path) -> String {
    format!(
        "ssh -F /dev/null -i {} -o IdentitiesOnly=yes -o IdentityAgent=none -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        key.display()
    )
}
