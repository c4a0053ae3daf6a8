//! A repository's record: what the cluster says about one repository name,
//! apart from its refs. Every node serves a repository only while its
//! record says the cluster holds it, and shapes its local copy after it.
//!
//! A record is kept at `<prefix>records/<name>` ([`crate::keys::RecordKeys`])
//! as `key value` lines:
//!
//! ```text
//! state live
//! id 00001764300000000000-n1-0
//! object-format sha1
//! ref-format files
//! head refs/heads/main
//! ```
//!
//! `state` is `live` or `deleted`: a deleted repository keeps its record,
//! so that a node that was down while it was deleted still learns to remove
//! its copy when it returns. `id` names one incarnation of the name: a
//! repository created again after a deletion gets a new one, and a node's
//! copy carries the id it was made for, so an old copy is never taken for
//! the new repository. A renamed repository keeps its id under its new
//! name, which is how a node finds the copy to move.

use refstore_refs::ObjectFormat;

/// Whether the cluster holds the repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Served by every node.
    Live,
    /// Deleted (or renamed away): no node serves it, and a node's copy of
    /// this incarnation is removed.
    Deleted,
}

/// The ref storage format of the nodes' local copies (refs themselves live
/// in etcd; the format is what a copy is created with and what an export
/// would give back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefFormat {
    /// Loose refs and `packed-refs`.
    Files,
    /// A reftable stack.
    Reftable,
}

impl RefFormat {
    /// Parses `files` or `reftable`.
    pub fn from_name(name: &str) -> Option<RefFormat> {
        match name {
            "files" => Some(RefFormat::Files),
            "reftable" => Some(RefFormat::Reftable),
            _ => None,
        }
    }

    /// The format's name.
    pub fn name(self) -> &'static str {
        match self {
            RefFormat::Files => "files",
            RefFormat::Reftable => "reftable",
        }
    }
}

/// One repository's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Whether the cluster holds it.
    pub state: State,
    /// The incarnation (see the module's documentation).
    pub id: String,
    /// Its object format.
    pub object_format: ObjectFormat,
    /// Its ref format.
    pub ref_format: RefFormat,
    /// What HEAD pointed at when it was created or imported (`refs/heads/…`),
    /// empty for a detached HEAD.
    pub head: String,
}

impl Record {
    /// The stored form.
    pub fn encode(&self) -> Vec<u8> {
        let state = match self.state {
            State::Live => "live",
            State::Deleted => "deleted",
        };
        format!(
            "state {state}\nid {}\nobject-format {}\nref-format {}\nhead {}\n",
            self.id,
            self.object_format.name(),
            self.ref_format.name(),
            self.head
        )
        .into_bytes()
    }

    /// Reads a stored record; `None` if it is not one.
    pub fn decode(raw: &[u8]) -> Option<Record> {
        let text = std::str::from_utf8(raw).ok()?;
        let field = |key: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(key)?.strip_prefix(' '))
        };
        let state = match field("state")? {
            "live" => State::Live,
            "deleted" => State::Deleted,
            _ => return None,
        };
        let id = field("id").filter(|id| !id.is_empty())?;
        Some(Record {
            state,
            id: id.to_owned(),
            object_format: ObjectFormat::from_name(field("object-format")?)?,
            ref_format: RefFormat::from_name(field("ref-format")?)?,
            head: field("head").unwrap_or_default().to_owned(),
        })
    }

    /// True if the cluster holds the repository.
    pub fn is_live(&self) -> bool {
        self.state == State::Live
    }
}

/// How many path components a name may have (`team/r.git` has two): as
/// deep as a node looks for repositories below its root.
pub const MAX_COMPONENTS: usize = 4;

/// The longest component, in bytes (most filesystems' limit).
const MAX_COMPONENT_BYTES: usize = 255;

/// Why a name cannot be a repository of the cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{name}' is not a valid repository name: {reason}")]
pub struct BadName {
    /// The name given.
    pub name: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Checks that `name` can name a repository of the cluster: a relative
/// path of one to [`MAX_COMPONENTS`] components separated by `/`, each made
/// of letters and digits (any script) and `-`, `_`, `.`, none starting
/// with `.`; the last one ends in `.git` (once) after at least one other
/// character, and no other one does (no repository inside another). So a
/// name is exactly the path the server names the directory it opens by
/// ([`refstore-server`'s `Served::name`]), and nothing a client types can
/// reach outside the root or a hidden directory.
pub fn check_name(name: &str) -> Result<(), BadName> {
    let bad = |reason| BadName {
        name: name.to_owned(),
        reason,
    };
    let components: Vec<&str> = name.split('/').collect();
    if components.len() > MAX_COMPONENTS {
        return Err(bad("more than 4 path components"));
    }
    for (index, component) in components.iter().enumerate() {
        if component.is_empty() {
            return Err(bad(
                "an empty path component (leading, trailing or double '/')",
            ));
        }
        if component.starts_with('.') {
            return Err(bad("a path component starts with '.'"));
        }
        if component.len() > MAX_COMPONENT_BYTES {
            return Err(bad("a path component longer than 255 bytes"));
        }
        if !component
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(bad(
                "only letters, digits, '-', '_', '.' and '/' between components are allowed",
            ));
        }
        let last = index + 1 == components.len();
        match component.strip_suffix(".git") {
            Some(stem) if last && (stem.is_empty() || stem.ends_with(".git")) => {
                return Err(bad(
                    "the name must end in one '.git' after a non-empty stem",
                ))
            }
            Some(_) if !last => {
                return Err(bad(
                    "a repository cannot be inside another ('.git' before the last component)",
                ))
            }
            None if last => return Err(bad("the name must end in '.git'")),
            _ => {}
        }
    }
    Ok(())
}

/// What a client is told about a repository the cluster does not hold.
pub fn not_in_cluster(name: &str) -> String {
    format!(
        "repository '{name}' is not in the cluster; create it with `refstore cluster create` \
         or import it with `refstore cluster import`"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        for state in [State::Live, State::Deleted] {
            let record = Record {
                state,
                id: "1-n1-0".into(),
                object_format: ObjectFormat::Sha256,
                ref_format: RefFormat::Reftable,
                head: "refs/heads/main".into(),
            };
            assert_eq!(Record::decode(&record.encode()), Some(record));
        }
        assert_eq!(Record::decode(b"state live\nid x\n"), None);
        assert_eq!(Record::decode(b"garbage"), None);
    }

    #[test]
    fn names() {
        for good in [
            "a.git",
            "team/r.git",
            "a/b/c/d.git",
            "ünï-cödé_1.2.git",
            "日本.git",
        ] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "a",
            ".git",
            "a.git.git",
            "x.GIT",
            "../a.git",
            "a/../b.git",
            "/a.git",
            "a.git/",
            "a//b.git",
            "a.git/b.git",
            ".hidden.git",
            "a/.b.git",
            "a b.git",
            "a\\b.git",
            "a\0.git",
            "a\n.git",
            "a/b/c/d/e.git",
            "a:b.git",
            "~a.git",
            "a\u{202e}.git",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
    }
}
