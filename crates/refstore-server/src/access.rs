//! Who may read and who may push which repository: `--access <file>`.
//!
//! The file holds one rule per line, `<user|*> <read|write|admin> <repo-glob>`:
//!
//! ```text
//! # anyone may clone the public repositories
//! *     read  pub/*
//! alice write *
//! bob   read  priv/*
//! ```
//!
//! `write` implies `read`; `admin` implies both and also lets the user
//! create, delete and rename the matching repositories through a cluster
//! node's admin endpoint (`/_refstore/admin/repositories`), where every
//! request is authenticated, anonymous ones never allowed. `*` as the user matches everyone, anonymous
//! clients included; a push always needs an authenticated user (an HTTP
//! user of `--credentials` or an SSH key), so `* write` grants pushes to
//! every authenticated user. In the glob, `*` and `?` match any characters
//! including `/` (`*` alone matches every repository), `[...]` a class.
//! Globs match the path below the served root of the directory that is
//! opened, symbolic links followed and `.git` included as on disk
//! ([`crate::authorize`]), whatever name the client used, so a link cannot
//! open a private repository under a public name. A work tree's repository
//! (`dir/.git`) is named `dir`. Blank lines and lines starting with `#`
//! are ignored.
//!
//! [`decide`] turns the rules (or their absence: anonymous reads,
//! authenticated pushes with `--allow-push`) into what a transport
//! answers. A client that may not read a repository is never told whether
//! it exists.

use std::sync::{Arc, RwLock};

/// What a request does to a repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// Fetch, clone, ls-remote.
    Read,
    /// Push.
    Write,
}

/// One line of an access file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    /// `None` for `*`.
    user: Option<String>,
    write: bool,
    admin: bool,
    glob: String,
}

/// The rules of an access file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessRules {
    rules: Vec<Rule>,
}

/// A line of an access file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct AccessError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
}

impl AccessRules {
    /// Parses an access file.
    pub fn parse(text: &str) -> Result<AccessRules, AccessError> {
        let mut rules = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let error = |reason: String| AccessError {
                line: index + 1,
                reason,
            };
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [user, right, glob] = fields[..] else {
                return Err(error(format!(
                    "expected '<user|*> <read|write|admin> <repo-glob>', found '{line}'"
                )));
            };
            let (write, admin) = match right {
                "read" => (false, false),
                "write" => (true, false),
                "admin" => (true, true),
                other => {
                    return Err(error(format!(
                        "'{other}' is not 'read', 'write' or 'admin'"
                    )))
                }
            };
            rules.push(Rule {
                user: (user != "*").then(|| user.to_owned()),
                write,
                admin,
                glob: glob.trim_matches('/').to_owned(),
            });
        }
        Ok(AccessRules { rules })
    }

    /// True if `user` (`None`: anonymous) may do `want` to the repository
    /// at `repo` (its path below the served root, `/`-separated, without
    /// leading or trailing slashes).
    pub fn allows(&self, user: Option<&str>, repo: &str, want: Want) -> bool {
        self.rules.iter().any(|rule| {
            (rule.write || want == Want::Read)
                && rule.user.as_deref().is_none_or(|name| Some(name) == user)
                && glob_matches(&rule.glob, repo)
        })
    }

    /// True if `user` (authenticated) may create, delete and rename the
    /// repository `repo` (a name, or a name to be).
    pub fn allows_admin(&self, user: &str, repo: &str) -> bool {
        self.rules.iter().any(|rule| {
            rule.admin
                && rule.user.as_deref().is_none_or(|name| name == user)
                && glob_matches(&rule.glob, repo)
        })
    }

    /// True if some rule grants `user` administration of some repository:
    /// who may list repositories at all.
    pub fn grants_admin(&self, user: &str) -> bool {
        self.rules
            .iter()
            .any(|rule| rule.admin && rule.user.as_deref().is_none_or(|name| name == user))
    }
}

fn glob_matches(glob: &str, repo: &str) -> bool {
    gix_glob::wildmatch(glob.into(), repo.into(), gix_glob::wildmatch::Mode::empty())
}

/// What a transport answers a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go ahead.
    Allowed,
    /// The client must say who it is (HTTP 401 with a Basic challenge, so
    /// git asks for credentials).
    AuthenticationRequired,
    /// The user may not read the repository: answer as if it did not
    /// exist (HTTP 404, "repository not found").
    NotFound,
    /// The user may read but not do this (HTTP 403); the reason is for
    /// the user.
    Forbidden(String),
}

/// Decides a request of `user` (`None`: anonymous, or a failed HTTP
/// login) to the repository `repo`. Without `rules` (no `--access`):
/// everyone reads, and authenticated users push if `allow_push`. With
/// rules, they alone decide (pushes need no `--allow-push`).
pub fn decide(
    rules: Option<&AccessRules>,
    allow_push: bool,
    user: Option<&str>,
    repo: &str,
    want: Want,
) -> Verdict {
    let Some(rules) = rules else {
        return match want {
            Want::Read => Verdict::Allowed,
            Want::Write if !allow_push => Verdict::Forbidden(
                "pushing is disabled on this server (start `refstore serve` with --allow-push)"
                    .to_owned(),
            ),
            Want::Write if user.is_none() => Verdict::AuthenticationRequired,
            Want::Write => Verdict::Allowed,
        };
    };
    let Some(name) = user else {
        return if want == Want::Read && rules.allows(None, repo, Want::Read) {
            Verdict::Allowed
        } else {
            Verdict::AuthenticationRequired
        };
    };
    if rules.allows(user, repo, want) {
        Verdict::Allowed
    } else if want == Want::Write && rules.allows(user, repo, Want::Read) {
        Verdict::Forbidden(format!("user '{name}' may not push to '{repo}'"))
    } else {
        Verdict::NotFound
    }
}

/// A value shared by every connection and replaced as a whole on reload
/// (SIGHUP): readers take the current `Arc` and keep it for their request.
#[derive(Debug, Default)]
pub struct Reloadable<T>(RwLock<Arc<T>>);

impl<T> Reloadable<T> {
    /// Holds `value`.
    pub fn new(value: T) -> Self {
        Reloadable(RwLock::new(Arc::new(value)))
    }

    /// The current value.
    pub fn get(&self) -> Arc<T> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the value; requests already running keep the old one.
    pub fn set(&self, value: T) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = "\
# public repositories
*     read  pub/*
alice write *
bob   read  priv/*
carol write team/*.git
";

    #[test]
    fn write_implies_read_and_star_matches_everyone() {
        let rules = AccessRules::parse(EXAMPLE).unwrap();
        assert!(rules.allows(None, "pub/a.git", Want::Read));
        assert!(rules.allows(Some("bob"), "pub/a.git", Want::Read));
        assert!(!rules.allows(None, "pub/a.git", Want::Write));
        assert!(!rules.allows(Some("bob"), "pub/a.git", Want::Write));
        assert!(rules.allows(Some("alice"), "priv/deep/x.git", Want::Write));
        assert!(rules.allows(Some("alice"), "priv/deep/x.git", Want::Read));
        assert!(rules.allows(Some("bob"), "priv/x.git", Want::Read));
        assert!(!rules.allows(Some("bob"), "priv/x.git", Want::Write));
        assert!(!rules.allows(Some("bob"), "other.git", Want::Read));
        assert!(rules.allows(Some("carol"), "team/x.git", Want::Write));
        assert!(!rules.allows(Some("carol"), "team/x", Want::Read));
        assert!(!rules.allows(None, "private.git", Want::Read));
        // User names are compared whole.
        assert!(!rules.allows(Some("alic"), "x", Want::Read));
        assert!(!rules.allows(Some("alice2"), "x", Want::Read));
    }

    #[test]
    fn verdicts_hide_what_a_user_may_not_read() {
        let rules = AccessRules::parse(EXAMPLE).unwrap();
        let rules = Some(&rules);
        assert_eq!(
            decide(rules, false, None, "pub/a", Want::Read),
            Verdict::Allowed
        );
        assert_eq!(
            decide(rules, false, None, "priv/a", Want::Read),
            Verdict::AuthenticationRequired
        );
        assert_eq!(
            decide(rules, false, None, "pub/a", Want::Write),
            Verdict::AuthenticationRequired
        );
        assert_eq!(
            decide(rules, false, Some("bob"), "secret", Want::Read),
            Verdict::NotFound
        );
        assert_eq!(
            decide(rules, false, Some("bob"), "secret", Want::Write),
            Verdict::NotFound
        );
        assert_eq!(
            decide(rules, false, Some("bob"), "priv/a", Want::Write),
            Verdict::Forbidden("user 'bob' may not push to 'priv/a'".into())
        );
        assert_eq!(
            decide(rules, false, Some("alice"), "priv/a", Want::Write),
            Verdict::Allowed
        );
    }

    #[test]
    fn without_rules_everyone_reads_and_users_push_if_allowed() {
        assert_eq!(decide(None, false, None, "a", Want::Read), Verdict::Allowed);
        assert!(matches!(
            decide(None, false, Some("alice"), "a", Want::Write),
            Verdict::Forbidden(m) if m.contains("--allow-push")
        ));
        assert_eq!(
            decide(None, true, None, "a", Want::Write),
            Verdict::AuthenticationRequired
        );
        assert_eq!(
            decide(None, true, Some("alice"), "a", Want::Write),
            Verdict::Allowed
        );
    }

    #[test]
    fn malformed_lines_are_refused_with_their_number() {
        let error = AccessRules::parse("* read pub/*\nalice owner *\n").unwrap_err();
        assert_eq!(error.line, 2);
        assert!(error.reason.contains("'owner'"), "{error}");
        let error = AccessRules::parse("alice write\n").unwrap_err();
        assert_eq!(error.line, 1);
        assert!(AccessRules::parse("a read b c\n").is_err());
        assert_eq!(
            AccessRules::parse("\n# only comments\n").unwrap(),
            AccessRules::default()
        );
    }

    #[test]
    fn admin_implies_write_and_is_granted_by_name_only() {
        let rules = AccessRules::parse("webapp admin team/*\n* read *\nbob write *\n").unwrap();
        assert!(rules.allows_admin("webapp", "team/a.git"));
        assert!(!rules.allows_admin("webapp", "other.git"));
        assert!(!rules.allows_admin("bob", "team/a.git"));
        assert!(rules.allows(Some("webapp"), "team/a.git", Want::Write));
        assert!(rules.grants_admin("webapp"));
        assert!(!rules.grants_admin("bob"));
    }

    #[test]
    fn reloading_replaces_the_value_for_new_readers_only() {
        let shared = Reloadable::new(1);
        let before = shared.get();
        shared.set(2);
        assert_eq!((*before, *shared.get()), (1, 2));
    }
}
