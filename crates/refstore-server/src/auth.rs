//! Who a client is over HTTP: Basic credentials checked against the
//! credentials file (`--credentials`). A push always needs such a user;
//! with `--access` rules, reads and the admin endpoint may too.
//!
//! The file holds one `user:secret` line per user, where the secret is
//! either a bcrypt hash as `htpasswd -B` writes it (`$2y$...`, `$2b$...`,
//! `$2a$...`) or, for tests and throw-away setups, the password itself.
//! Blank lines and lines starting with `#` are ignored.
//!
//! The time a refusal takes tells an attacker nothing useful: every check
//! verifies exactly one bcrypt hash of the file's cost (the highest cost
//! in the file, htpasswd's default 5 without bcrypt lines): the user's own,
//! or, for an unknown user or one with a plain password, a decoy of that
//! cost made when the file is read. Plain passwords are then compared
//! through their SHA-256 digests with a comparison that reads every byte,
//! and every user name is compared. Users whose hashes have a lower cost
//! than others in the file can still be told apart by timing, and plain
//! passwords are readable by whoever reads the file: [`Credentials::warnings`]
//! says so, for the server to log at startup. Guessing is slowed down by
//! [`crate::throttle`].

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// One user's stored secret.
#[derive(Clone)]
enum Secret {
    Bcrypt(String),
    /// The SHA-256 digest of the password.
    Plain([u8; 32]),
}

/// htpasswd's default bcrypt cost, the decoy's cost for a file without
/// bcrypt hashes.
const DEFAULT_COST: u32 = 5;

/// The cost of a bcrypt hash (`$2y$<cost>$...`).
fn cost_of(hash: &str) -> Option<u32> {
    hash.get(4..6)?.parse().ok()
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// True if `a` and `b` are equal, in a time that does not depend on where
/// they differ.
fn same_bytes(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(difference) == 0
}

/// The users allowed to push.
#[derive(Clone, Default)]
pub struct Credentials {
    users: Vec<(String, Secret)>,
    /// A bcrypt hash of the file's cost that no password is checked
    /// against for real (see the module's documentation).
    decoy: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print secrets, not even hashes.
        let names: Vec<&str> = self.users.iter().map(|(u, _)| u.as_str()).collect();
        f.debug_struct("Credentials")
            .field("users", &names)
            .finish()
    }
}

/// A line of a credentials file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct CredentialsError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl Credentials {
    /// Parses a credentials file.
    pub fn parse(text: &str) -> Result<Credentials, CredentialsError> {
        let mut users = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line_no = index + 1;
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((user, secret)) = line.split_once(':') else {
                return Err(CredentialsError {
                    line: line_no,
                    reason: "expected user:password or user:<bcrypt hash>",
                });
            };
            if user.is_empty() || secret.is_empty() {
                return Err(CredentialsError {
                    line: line_no,
                    reason: "empty user name or secret",
                });
            }
            let secret = if ["$2y$", "$2b$", "$2a$"]
                .iter()
                .any(|p| secret.starts_with(p))
            {
                Secret::Bcrypt(secret.to_owned())
            } else if secret.starts_with('$') || secret.starts_with("{SHA}") {
                return Err(CredentialsError {
                    line: line_no,
                    reason: "unsupported hash; use bcrypt (htpasswd -B) or a plain password",
                });
            } else {
                Secret::Plain(digest(secret.as_bytes()))
            };
            users.push((user.to_owned(), secret));
        }
        let cost = users
            .iter()
            .filter_map(|(_, secret)| match secret {
                Secret::Bcrypt(hash) => cost_of(hash),
                Secret::Plain(_) => None,
            })
            .max()
            .unwrap_or(DEFAULT_COST);
        // The salt is random, so the decoy's password need not be.
        let decoy = bcrypt::hash("refstore decoy", cost).map_err(|_| CredentialsError {
            line: 0,
            reason: "a bcrypt hash with a cost outside 4..=31",
        })?;
        Ok(Credentials { users, decoy })
    }

    /// What an operator should know about the file: users with plain-text
    /// passwords, and bcrypt costs that differ between users (a login's
    /// time then tells those users apart).
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        let plain: Vec<&str> = self
            .users
            .iter()
            .filter(|(_, secret)| matches!(secret, Secret::Plain(_)))
            .map(|(name, _)| name.as_str())
            .collect();
        if !plain.is_empty() {
            warnings.push(format!(
                "plain-text passwords for {}: anyone who can read the file can log in as them; store bcrypt hashes instead (htpasswd -B)",
                plain.join(", ")
            ));
        }
        let mut costs: Vec<u32> = self
            .users
            .iter()
            .filter_map(|(_, secret)| match secret {
                Secret::Bcrypt(hash) => cost_of(hash),
                Secret::Plain(_) => None,
            })
            .collect();
        costs.sort_unstable();
        costs.dedup();
        if costs.len() > 1 {
            warnings.push(format!(
                "bcrypt hashes of different costs ({}): logins of users with cheaper hashes take less time, which tells them apart; give every user the same cost (htpasswd -B -C)",
                costs.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            ));
        }
        warnings
    }

    /// The user name of a Basic `Authorization` header value, unchecked,
    /// for throttling before the password is checked.
    pub fn basic_user(header: &str) -> Option<String> {
        let (user, _) = decode_basic(header)?;
        Some(user)
    }

    /// The number of users.
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// True if no user may push.
    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }

    /// The user an `Authorization` header value authenticates, if any.
    pub fn check_header(&self, header: &str) -> Option<&str> {
        let (user, password) = decode_basic(header)?;
        self.check(&user, &password)
    }

    /// The user's name if `password` is theirs.
    pub fn check(&self, user: &str, password: &str) -> Option<&str> {
        let wanted = digest(user.as_bytes());
        let mut found = None;
        for (index, (name, _)) in self.users.iter().enumerate() {
            if same_bytes(&digest(name.as_bytes()), &wanted) && found.is_none() {
                found = Some(index);
            }
        }
        let Some(index) = found else {
            let _ = std::hint::black_box(bcrypt::verify(password, &self.decoy));
            return None;
        };
        let (name, secret) = &self.users[index];
        let ok = match secret {
            Secret::Bcrypt(hash) => bcrypt::verify(password, hash).unwrap_or(false),
            Secret::Plain(stored) => {
                let _ = std::hint::black_box(bcrypt::verify(password, &self.decoy));
                same_bytes(stored, &digest(password.as_bytes()))
            }
        };
        ok.then_some(name.as_str())
    }
}

/// The user and password of a Basic `Authorization` header value.
fn decode_basic(header: &str) -> Option<(String, String)> {
    let (scheme, encoded) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_passwords_and_comments() {
        let c = Credentials::parse("# pushers\nalice:s3cret\n\nbob:pa:ss\n").unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c.check("alice", "s3cret"), Some("alice"));
        assert_eq!(c.check("alice", "s3cre"), None);
        assert_eq!(c.check("alice", "s3cret!"), None);
        assert_eq!(c.check("bob", "pa:ss"), Some("bob"));
        assert_eq!(c.check("carol", "s3cret"), None);
        let header = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("alice:s3cret")
        );
        assert_eq!(c.check_header(&header), Some("alice"));
        assert_eq!(c.check_header("Bearer abc"), None);
        assert_eq!(c.check_header("Basic !!!"), None);
        assert!(!format!("{c:?}").contains("s3cret"));
    }

    #[test]
    fn comparison_reads_every_byte_and_ignores_length() {
        let a = digest(b"secret");
        assert!(same_bytes(&a, &digest(b"secret")));
        for other in [&b"secreT"[..], b"Secret", b"secret\0", b"", b"secre"] {
            assert!(!same_bytes(&a, &digest(other)), "{other:?}");
        }
        // A difference in the last byte only is seen, as in the first.
        let mut last = a;
        last[31] ^= 1;
        assert!(!same_bytes(&a, &last));
        let mut first = a;
        first[0] ^= 0x80;
        assert!(!same_bytes(&a, &first));
    }

    #[test]
    fn stored_passwords_are_kept_as_digests_only() {
        let c = Credentials::parse("alice:s3cret\n").unwrap();
        let Secret::Plain(stored) = &c.users[0].1 else {
            panic!("not a plain secret")
        };
        assert_eq!(stored, &digest(b"s3cret"));
    }

    #[test]
    fn the_decoy_has_the_file_s_kind_and_cost() {
        let c = Credentials::parse(
            "alice:$2y$06$Rvjv7GA2kaZVQn4GWzt9m.Ljuo1wDFzOICOo0ByR6MCozVmjKQtfm\n",
        )
        .unwrap();
        assert_eq!(cost_of(&c.decoy), Some(6));
        assert!(c.decoy.starts_with("$2"));
        assert_eq!(c.check("bob", "x"), None);
        assert_eq!(c.check("alice", ""), None);
        let plain = Credentials::parse("bob:pw\n").unwrap();
        assert_eq!(cost_of(&plain.decoy), Some(DEFAULT_COST));
    }

    #[test]
    fn plain_passwords_and_mixed_costs_are_warned_about() {
        let c = Credentials::parse(concat!(
            "alice:pw\n",
            "bob:$2y$05$Rvjv7GA2kaZVQn4GWzt9m.Ljuo1wDFzOICOo0ByR6MCozVmjKQtfm\n",
            "carol:$2y$07$Rvjv7GA2kaZVQn4GWzt9m.Ljuo1wDFzOICOo0ByR6MCozVmjKQtfm\n",
        ))
        .unwrap();
        let warnings = c.warnings();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("plain-text passwords for alice"));
        assert!(warnings[1].contains("(5, 7)"));
        assert_eq!(cost_of(&c.decoy), Some(7));
        let hashed = "bob:$2y$05$Rvjv7GA2kaZVQn4GWzt9m.Ljuo1wDFzOICOo0ByR6MCozVmjKQtfm\n";
        assert!(Credentials::parse(hashed).unwrap().warnings().is_empty());
    }

    #[test]
    fn bad_lines_are_reported_with_their_number() {
        assert_eq!(
            Credentials::parse("alice:x\nnocolon\n").unwrap_err().line,
            2
        );
        assert_eq!(Credentials::parse(":x\n").unwrap_err().line, 1);
        assert!(Credentials::parse("a:{SHA}abc\n").is_err());
        assert!(Credentials::parse("a:$apr1$xyz\n").is_err());
    }
}
