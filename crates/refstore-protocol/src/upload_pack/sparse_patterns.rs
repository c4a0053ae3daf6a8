//! Sparse-checkout patterns as the `sparse:oid=` filter reads them from
//! a blob (gitignore syntax, git's non-cone mode), and whether they
//! include a path.
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

use gix_glob::wildmatch;

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
