//! The keys of the SSH server: its host key (an OpenSSH private key file,
//! as `ssh-keygen -t ed25519 -N ''` writes it) and the users' public keys
//! (`--ssh-authorized-keys`, OpenSSH's `authorized_keys` format).
//!
//! In the authorized keys, the comment of each line names the user the
//! key belongs to: `ssh-ed25519 AAAA… alice`. The user name is what
//! `--access` rules match, so it must be one word. Option prefixes
//! (`restrict,command="…" ssh-ed25519 …`) are refused rather than
//! ignored: each of them narrows what a key may do, and a server that
//! dropped them silently would grant more than the file says.

use russh::keys::ssh_key::public::KeyData;
use russh::keys::{Algorithm, PrivateKey, PublicKey};

/// Why a key file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The host key cannot be read.
    #[error("host key: {0}")]
    HostKey(String),
    /// A line of the authorized keys cannot be used.
    #[error("line {line}: {reason}")]
    Authorized {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// Reads the host key from the text of an OpenSSH private key file.
/// Passphrase-protected keys are refused: the server starts unattended.
pub fn host_key(text: &str) -> Result<PrivateKey, KeyError> {
    let key = PrivateKey::from_openssh(text.trim()).map_err(|e| {
        KeyError::HostKey(format!(
            "not an OpenSSH private key ({e}); make one with `ssh-keygen -t ed25519 -N '' -f <file>`"
        ))
    })?;
    if key.is_encrypted() {
        return Err(KeyError::HostKey(
            "the key is protected by a passphrase; the server needs one without (ssh-keygen -p -N '')"
                .to_owned(),
        ));
    }
    Ok(key)
}

/// The users' keys.
#[derive(Debug, Clone, Default)]
pub struct AuthorizedKeys {
    keys: Vec<(KeyData, String)>,
}

/// Key types accepted in the authorized keys.
fn known_type(name: &str) -> bool {
    matches!(
        name,
        "ssh-ed25519"
            | "ssh-rsa"
            | "ecdsa-sha2-nistp256"
            | "ecdsa-sha2-nistp384"
            | "ecdsa-sha2-nistp521"
    )
}

impl AuthorizedKeys {
    /// Parses an `authorized_keys` file. Blank lines and lines starting
    /// with `#` are ignored.
    pub fn parse(text: &str) -> Result<AuthorizedKeys, KeyError> {
        let mut keys: Vec<(KeyData, String)> = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let error = |reason: String| KeyError::Authorized {
                line: index + 1,
                reason,
            };
            let (key, user) = parse_line(line).map_err(error)?;
            if let Some((_, owner)) = keys.iter().find(|(known, _)| *known == key) {
                return Err(error(format!(
                    "the key is listed already, for user '{owner}': a key names one user"
                )));
            }
            keys.push((key, user));
        }
        Ok(AuthorizedKeys { keys })
    }

    /// The user `key` belongs to, if any.
    pub fn user_of(&self, key: &PublicKey) -> Option<&str> {
        self.keys
            .iter()
            .find(|(known, _)| known == key.key_data())
            .map(|(_, user)| user.as_str())
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True if no key is authorized.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

fn parse_line(line: &str) -> Result<(KeyData, String), String> {
    let mut fields = line.split_whitespace();
    let kind = fields.next().unwrap_or_default();
    if !known_type(kind) {
        return Err(
            if kind.contains('=') || kind.contains(',') || fields.clone().any(known_type) {
                format!("options before the key ('{kind}') are not supported; list the bare key")
            } else {
                format!("'{kind}' is not a supported key type (ssh-ed25519, ssh-rsa, ecdsa-sha2-*)")
            },
        );
    }
    let blob = fields
        .next()
        .ok_or_else(|| format!("no key after '{kind}'"))?;
    let key = russh::keys::parse_public_key_base64(blob)
        .map_err(|e| format!("the key cannot be read: {e}"))?;
    let declared: Algorithm = kind
        .parse()
        .map_err(|_| format!("'{kind}' is not a key type"))?;
    if key.algorithm() != declared {
        return Err(format!(
            "the key is a {} key, not {kind}",
            key.algorithm().as_str()
        ));
    }
    let user = fields
        .next()
        .ok_or("no comment naming the key's user (`<type> <key> <user>`)")?;
    if let Some(more) = fields.next() {
        return Err(format!(
            "the comment names the key's user and must be one word, found '{user} {more}…'"
        ));
    }
    Ok((key.key_data().clone(), user.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Keys made with ssh-keygen for these tests only.
    const ED25519: &str = "AAAAC3NzaC1lZDI1NTE5AAAAIHAaKV+6J25tkcyjPvDxDr/jzT0KH5s7hdCwKQWBiWlb";
    const ED25519_OTHER: &str =
        "AAAAC3NzaC1lZDI1NTE5AAAAILv3d/Ki1erXDeK/PzuUZXOhpu7qcT6OBXPX04uYEoR4";

    fn key(blob: &str) -> PublicKey {
        russh::keys::parse_public_key_base64(blob).unwrap()
    }

    #[test]
    fn comments_name_users() {
        let keys = AuthorizedKeys::parse(&format!(
            "# team\n\nssh-ed25519 {ED25519} alice\n  ssh-ed25519 {ED25519_OTHER}   bob  \n"
        ))
        .unwrap();
        assert_eq!(keys.len(), 2);
        assert_eq!(keys.user_of(&key(ED25519)), Some("alice"));
        assert_eq!(keys.user_of(&key(ED25519_OTHER)), Some("bob"));
        let empty = AuthorizedKeys::parse("").unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.user_of(&key(ED25519)), None);
    }

    #[test]
    fn unusable_lines_are_refused_with_their_number() {
        let refused = |text: String| match AuthorizedKeys::parse(&text) {
            Err(KeyError::Authorized { line, reason }) => (line, reason),
            other => panic!("{text}: {other:?}"),
        };
        let (line, reason) = refused(format!(
            "ssh-ed25519 {ED25519} alice\nrestrict ssh-ed25519 {ED25519_OTHER} bob\n"
        ));
        assert_eq!(line, 2);
        assert!(reason.contains("options"), "{reason}");
        let (_, reason) = refused(format!(
            "command=\"echo\",no-pty ssh-ed25519 {ED25519} alice"
        ));
        assert!(reason.contains("options"), "{reason}");
        let (_, reason) = refused(format!("ssh-ed25519 {ED25519}"));
        assert!(reason.contains("user"), "{reason}");
        let (_, reason) = refused(format!("ssh-ed25519 {ED25519} alice at home"));
        assert!(reason.contains("one word"), "{reason}");
        let (_, reason) = refused(format!("ssh-rsa {ED25519} alice"));
        assert!(reason.contains("not ssh-rsa"), "{reason}");
        let (_, reason) = refused("ssh-ed25519 AAAA!! alice".to_owned());
        assert!(reason.contains("cannot be read"), "{reason}");
        let (_, reason) = refused(format!("ssh-dss {ED25519} alice"));
        assert!(reason.contains("not a supported key type"), "{reason}");
        let (line, reason) = refused(format!(
            "ssh-ed25519 {ED25519} alice\nssh-ed25519 {ED25519} mallory\n"
        ));
        assert_eq!(line, 2);
        assert!(reason.contains("'alice'"), "{reason}");
    }

    #[test]
    fn host_keys_must_be_unencrypted_openssh_keys() {
        let error = host_key("not a key").unwrap_err();
        assert!(error.to_string().contains("ssh-keygen"), "{error}");
    }
}
