//! The `sparse:oid=<blob-ish>` filter: the blob it names, resolved in the
//! served repository, holds sparse-checkout patterns (gitignore syntax,
//! git's non-cone mode), and a blob of the walk is sent when its path is
//! included by them.
//!
//! As in git, the last pattern matching a path decides (a `!` pattern
//! excludes); a path no pattern matches takes the answer of its nearest
//! directory that had one, and the root's default is "not included".
//! Patterns without a slash (other than a trailing one) match the last
//! component of a path; others match the whole path from the root; a
//! trailing slash makes a pattern match directories only, and what a
//! directory decides applies to everything below it unless a deeper
//! pattern says otherwise. With `core.ignoreCase`, letters match in
//! either case, as in git.
//!
//! The blob is named by an object id (whole or abbreviated), or as
//! `<rev>:<path>` where `<rev>` is a ref name as git completes it or an
//! object id; other revision syntax (`main~2`, `v1^{tree}`, reflogs) names
//! nothing here. What names no object is refused with git's "unable to
//! access sparse blob in '<spec>'", an object that is not a blob (or is
//! missing) with "unable to parse sparse filter data in <id>".

use super::filter::Filter;
use super::graph::Graph;
use super::refs::RefSnapshot;
use super::UploadPackError;
use gix_glob::wildmatch;
use gix_hash::ObjectId;
use gix_object::Kind;
use refstore_fs::config::Config;

/// One line of a sparse-checkout specification.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    /// The glob, without `!`, a trailing slash, or the leading slash of an
    /// anchored pattern.
    glob: Vec<u8>,
    /// `!`: a match excludes.
    negative: bool,
    /// A trailing slash: only directories match.
    directory_only: bool,
    /// No slash but a trailing one: the last path component is matched.
    basename: bool,
}

/// The patterns of a sparse-checkout specification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SparsePatterns {
    lines: Vec<Line>,
    ignore_case: bool,
}

impl SparsePatterns {
    /// Reads a specification as git reads one from a blob: a UTF-8 BOM is
    /// skipped, empty lines and `#` comments ignored, a `\r` before the
    /// newline dropped, trailing spaces trimmed unless escaped.
    pub(crate) fn parse(text: &[u8], ignore_case: bool) -> SparsePatterns {
        let text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
        let mut lines = Vec::new();
        for line in text.split(|&b| b == b'\n') {
            if line.is_empty() || line[0] == b'#' {
                continue;
            }
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let mut pattern = trim_trailing_spaces(line);
            let negative = pattern.first() == Some(&b'!');
            if negative {
                pattern = &pattern[1..];
            }
            let directory_only = pattern.last() == Some(&b'/');
            if directory_only {
                pattern = &pattern[..pattern.len() - 1];
            }
            let basename = !pattern.contains(&b'/');
            if !basename {
                pattern = pattern.strip_prefix(b"/").unwrap_or(pattern);
            }
            lines.push(Line {
                glob: pattern.to_vec(),
                negative,
                directory_only,
                basename,
            });
        }
        SparsePatterns { lines, ignore_case }
    }

    /// Whether the patterns include (`Some(true)`) or exclude
    /// (`Some(false)`) `path` (relative to the root, empty for the root
    /// tree), or say nothing of it (`None`).
    pub(crate) fn decide(&self, path: &[u8], is_dir: bool) -> Option<bool> {
        let name = match path.iter().rposition(|&b| b == b'/') {
            Some(slash) => &path[slash + 1..],
            None => path,
        };
        self.lines
            .iter()
            .rev()
            .find(|line| line.matches(path, name, is_dir, self.ignore_case))
            .map(|line| !line.negative)
    }
}

impl Line {
    fn matches(&self, path: &[u8], name: &[u8], is_dir: bool, ignore_case: bool) -> bool {
        if self.directory_only && !is_dir {
            return false;
        }
        let case = match ignore_case {
            true => wildmatch::Mode::IGNORE_CASE,
            false => wildmatch::Mode::empty(),
        };
        if self.basename {
            return wildmatch(self.glob[..].into(), name.into(), case);
        }
        // A pattern with a slash never matches the root itself.
        !path.is_empty()
            && wildmatch(
                self.glob[..].into(),
                path.into(),
                wildmatch::Mode::NO_MATCH_SLASH_LITERAL | case,
            )
    }
}

/// Drops trailing spaces that no backslash escapes.
fn trim_trailing_spaces(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    let mut first_space = None;
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b' ' => {
                first_space.get_or_insert(i);
            }
            b'\\' => {
                i += 1;
                first_space = None;
            }
            _ => first_space = None,
        }
        i += 1;
    }
    if let Some(space) = first_space {
        end = space;
    }
    &line[..end]
}

/// `filter` with the patterns of its `sparse:oid=` parts read, matching
/// letters in either case when `config` sets `core.ignoreCase`.
pub(crate) fn resolve_filter(
    filter: &Filter,
    graph: &mut Graph,
    refs: &RefSnapshot,
    config: &Config,
) -> Result<Filter, UploadPackError> {
    let ignore_case = config
        .bool("core.ignoreCase")
        .map_err(|e| UploadPackError::Objects(e.to_string()))?
        == Some(true);
    filter.resolve(&mut 0, &mut |spec| load(graph, refs, spec, ignore_case))
}

/// Reads the patterns of the blob `spec` names, with git's messages when
/// it names nothing or something else than a blob.
fn load(
    graph: &mut Graph,
    refs: &RefSnapshot,
    spec: &str,
    ignore_case: bool,
) -> Result<SparsePatterns, UploadPackError> {
    let id = resolve(graph, refs, spec)?.ok_or_else(|| {
        UploadPackError::request(format!("unable to access sparse blob in '{spec}'"))
    })?;
    match graph.read(&id)? {
        Some((Kind::Blob, data)) => Ok(SparsePatterns::parse(data, ignore_case)),
        _ => Err(UploadPackError::request(format!(
            "unable to parse sparse filter data in {id}"
        ))),
    }
}

/// The object `spec` names, `None` if it names none.
fn resolve(
    graph: &mut Graph,
    refs: &RefSnapshot,
    spec: &str,
) -> Result<Option<ObjectId>, UploadPackError> {
    let Some((rev, path)) = spec.split_once(':') else {
        return revision(graph, refs, spec);
    };
    let Some(start) = revision(graph, refs, rev)? else {
        return Ok(None);
    };
    let mut tree = match graph.peel(&start, |_| {})? {
        Some((id, Kind::Commit)) => match graph.commit(&id)? {
            Some(commit) => commit.tree,
            None => return Ok(None),
        },
        Some((id, Kind::Tree)) => id,
        _ => return Ok(None),
    };
    let hash = graph.hash_kind();
    for component in path.split('/').filter(|c| !c.is_empty()) {
        let Some((Kind::Tree, data)) = graph.read(&tree)? else {
            return Ok(None);
        };
        let entry = gix_object::TreeRefIter::from_bytes(data, hash)
            .filter_map(Result::ok)
            .find(|entry| entry.filename == component.as_bytes())
            .map(|entry| entry.oid.to_owned());
        match entry {
            Some(id) => tree = id,
            None => return Ok(None),
        }
    }
    Ok(Some(tree))
}

/// A full object id, a ref found the way git finds a short name
/// (`<name>`, `refs/<name>`, `refs/tags/<name>`, `refs/heads/<name>`,
/// `refs/remotes/<name>`, `refs/remotes/<name>/HEAD`), or an abbreviated
/// object id (of 4 digits or more) naming one object, or one blob among
/// the objects it names.
fn revision(
    graph: &mut Graph,
    refs: &RefSnapshot,
    name: &str,
) -> Result<Option<ObjectId>, UploadPackError> {
    if name.len() == graph.hash_kind().len_in_hex() {
        if let Ok(id) = ObjectId::from_hex(name.as_bytes()) {
            return Ok(Some(id));
        }
    }
    if let Some(id) = named_by_ref(refs, name) {
        return Ok(Some(id));
    }
    abbreviated(graph, name)
}

/// The object an abbreviated id names; among several, the only blob.
fn abbreviated(graph: &mut Graph, name: &str) -> Result<Option<ObjectId>, UploadPackError> {
    let hex = name.len() >= 4 && name.bytes().all(|b| b.is_ascii_hexdigit());
    let Some(prefix) = hex.then(|| gix_hash::Prefix::from_hex(name).ok()).flatten() else {
        return Ok(None);
    };
    let handle = graph.handle();
    let lookup = |candidates| {
        handle
            .lookup_prefix(prefix, candidates)
            .map_err(|e| UploadPackError::objects("cannot look up an abbreviated id", e))
    };
    match lookup(None)? {
        None => Ok(None),
        Some(Ok(id)) => Ok(Some(id)),
        Some(Err(())) => {
            let mut candidates = std::collections::HashSet::new();
            lookup(Some(&mut candidates))?;
            let mut blobs = Vec::new();
            for id in candidates {
                if graph.kind(&id)? == Some(Kind::Blob) {
                    blobs.push(id);
                }
            }
            Ok(match blobs[..] {
                [blob] => Some(blob),
                _ => None,
            })
        }
    }
}

/// The object the ref `name` (as git completes a short name) ends at.
fn named_by_ref(refs: &RefSnapshot, name: &str) -> Option<ObjectId> {
    let candidates = [
        name.to_owned(),
        format!("refs/{name}"),
        format!("refs/tags/{name}"),
        format!("refs/heads/{name}"),
        format!("refs/remotes/{name}"),
        format!("refs/remotes/{name}/HEAD"),
    ];
    candidates.iter().find_map(|candidate| {
        refs.offered()
            .find(|r| r.name.as_bytes() == candidate.as_bytes())
            .map(|r| r.id.to_gix())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(patterns: &str, path: &str, is_dir: bool) -> Option<bool> {
        SparsePatterns::parse(patterns.as_bytes(), false).decide(path.as_bytes(), is_dir)
    }

    #[test]
    fn core_ignorecase_matches_either_case() {
        let patterns = SparsePatterns::parse(b"Docs/\n*.TXT\n", true);
        assert_eq!(patterns.decide(b"docs", true), Some(true));
        assert_eq!(patterns.decide(b"a/b.txt", false), Some(true));
        assert_eq!(decide("Docs/\n", "docs", true), None);
    }

    #[test]
    fn the_last_matching_pattern_decides() {
        let spec = "*.txt\n!docs/*.txt\n";
        assert_eq!(decide(spec, "a/b.txt", false), Some(true));
        assert_eq!(decide(spec, "docs/b.txt", false), Some(false));
        assert_eq!(decide(spec, "docs/sub/b.txt", false), Some(true));
        assert_eq!(decide(spec, "b.md", false), None);
    }

    #[test]
    fn directory_patterns_match_directories_only() {
        let spec = "src/\n/top\n";
        assert_eq!(decide(spec, "src", true), Some(true));
        assert_eq!(decide(spec, "a/src", true), Some(true));
        assert_eq!(decide(spec, "src", false), None);
        assert_eq!(decide(spec, "top", false), Some(true));
        assert_eq!(decide(spec, "a/top", false), None);
        // Patterns with a slash never match the root; `*` does.
        assert_eq!(decide(spec, "", true), None);
        assert_eq!(decide("/*\n", "", true), None);
        assert_eq!(decide("*\n", "", true), Some(true));
    }

    #[test]
    fn lines_are_read_as_git_reads_them() {
        let spec = "\u{feff}# comment\n\nkeep  \r\nspace\\ \n\\#hash\n\\!bang";
        assert_eq!(decide(spec, "keep", false), Some(true));
        assert_eq!(decide(spec, "space ", false), Some(true));
        assert_eq!(decide(spec, "#hash", false), Some(true));
        assert_eq!(decide(spec, "!bang", false), Some(true));
        assert_eq!(decide(spec, "comment", false), None);
    }
}
