//! Reference names and git's rules for them (`git check-ref-format`).
//!
//! A name is a sequence of bytes, split into components by `/`. It is valid
//! when:
//!
//! - no component is empty, starts with `.`, or ends with `.lock`;
//! - it contains no `..` and no `@{`, and is not `@` alone;
//! - it contains no ASCII control character, DEL, space, `~`, `^`, `:`, `?`,
//!   `[`, `\`, and no `*` (unless it is a refspec pattern, which may hold
//!   one `*`);
//! - it does not end with `.`;
//! - it has at least two components, unless one-level names are allowed.
//!
//! Bytes from 0x80 up are allowed: git does not require UTF-8.

#![deny(missing_docs, unsafe_code)]

use std::fmt;

/// Which of git's optional relaxations apply (`check-ref-format` flags).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckOptions {
    /// Accept names of one component (`HEAD`, `main`).
    pub allow_onelevel: bool,
    /// Accept one `*` anywhere (one side of a refspec).
    pub refspec_pattern: bool,
}

/// What makes a name invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameError {
    /// The name is empty.
    Empty,
    /// Two slashes in a row, or a leading or trailing slash.
    EmptyComponent,
    /// A component starts with `.`.
    ComponentStartsWithDot,
    /// A component ends with `.lock`.
    ComponentEndsWithLock,
    /// The name contains `..`.
    DoubleDot,
    /// The name contains `@{`.
    AtBrace,
    /// The name is `@`.
    SingleAt,
    /// A control character, DEL, space or one of `~^:?[\`.
    ForbiddenByte(u8),
    /// A `*` where no pattern is allowed, or a second `*`.
    Asterisk,
    /// The name ends with `.`.
    EndsWithDot,
    /// The name has a single component where two are required.
    OneLevel,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Empty => f.write_str("it is empty"),
            NameError::EmptyComponent => {
                f.write_str("it has an empty component (a leading, trailing or doubled '/')")
            }
            NameError::ComponentStartsWithDot => f.write_str("a component starts with '.'"),
            NameError::ComponentEndsWithLock => f.write_str("a component ends with '.lock'"),
            NameError::DoubleDot => f.write_str("it contains '..'"),
            NameError::AtBrace => f.write_str("it contains '@{'"),
            NameError::SingleAt => f.write_str("'@' alone is not a reference name"),
            NameError::ForbiddenByte(b) if b.is_ascii_graphic() => {
                write!(f, "it contains the forbidden character '{}'", *b as char)
            }
            NameError::ForbiddenByte(b) => {
                write!(f, "it contains the forbidden character 0x{b:02x}")
            }
            NameError::Asterisk => f.write_str("it contains '*' (allowed once, in patterns only)"),
            NameError::EndsWithDot => f.write_str("it ends with '.'"),
            NameError::OneLevel => {
                f.write_str("it has only one component (full names look like 'refs/heads/main')")
            }
        }
    }
}

impl std::error::Error for NameError {}

/// An invalid name together with the reason, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidName {
    /// The rejected name.
    pub name: Vec<u8>,
    /// Why it was rejected.
    pub reason: NameError,
}

impl fmt::Display for InvalidName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' is not a valid reference name: {}",
            String::from_utf8_lossy(&self.name),
            self.reason
        )
    }
}

impl std::error::Error for InvalidName {}

fn forbidden(b: u8) -> bool {
    b < 0x20 || b == 0x7f || matches!(b, b' ' | b'~' | b'^' | b':' | b'?' | b'[' | b'\\')
}

/// Checks `name` against git's rules with the given relaxations.
pub fn check(name: &[u8], options: CheckOptions) -> Result<(), NameError> {
    if !options.refspec_pattern && is_plainly_valid(name, options.allow_onelevel) {
        return Ok(());
    }
    explain(name, options)
}

/// How [`is_plainly_valid`] treats a byte.
const ORDINARY: u8 = 0;
const SLASH: u8 = 1;
const DOT: u8 = 2;
const BRACE: u8 = 3;
/// Bytes no name may hold here (the forbidden ones, and `*`).
const REJECT: u8 = 4;

const BYTE_CLASSES: [u8; 256] = {
    let mut classes = [ORDINARY; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        classes[b] = match byte {
            b'/' => SLASH,
            b'.' => DOT,
            b'{' => BRACE,
            b'*' | b' ' | b'~' | b'^' | b':' | b'?' | b'[' | b'\\' | 0x7f => REJECT,
            _ if byte < 0x20 => REJECT,
            _ => ORDINARY,
        };
        b += 1;
    }
    classes
};

/// True when `name` is valid without a pattern `*`: one pass with a byte
/// class table, because a large `packed-refs` has a million names to
/// check. Anything it does not accept goes to [`explain`], which names
/// the first rule broken; the two agree on validity (a test compares
/// them on random names).
fn is_plainly_valid(name: &[u8], allow_onelevel: bool) -> bool {
    is_plainly_valid_from(name, 0, allow_onelevel)
}

/// [`is_plainly_valid`] for a name whose first `known` bytes are also the
/// start of a name that passed: every rule looks only at a byte, the one
/// before it and its component, so the pass can start at `known`, with
/// the state those bytes leave.
fn is_plainly_valid_from(name: &[u8], known: usize, allow_onelevel: bool) -> bool {
    if name.is_empty() || name == b"@" {
        return false;
    }
    let known = known.min(name.len());
    let (mut component_start, mut components) = match name[..known].iter().rposition(|&b| b == b'/')
    {
        Some(slash) => (slash + 1, 2),
        None => (0, 1),
    };
    let mut previous = if known == 0 { b'/' } else { name[known - 1] };
    for (i, &b) in name.iter().enumerate().skip(known) {
        match BYTE_CLASSES[b as usize] {
            ORDINARY => {}
            SLASH => {
                if previous == b'/' || name[..i].ends_with(b".lock") {
                    return false;
                }
                component_start = i + 1;
                components += 1;
            }
            DOT => {
                if i == component_start || previous == b'.' {
                    return false;
                }
            }
            BRACE => {
                if previous == b'@' {
                    return false;
                }
            }
            _ => return false,
        }
        previous = b;
    }
    previous != b'/'
        && previous != b'.'
        && !name.ends_with(b".lock")
        && (components > 1 || allow_onelevel)
}

/// Checks `name` rule by rule, returning the first one broken.
fn explain(name: &[u8], options: CheckOptions) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name == b"@" {
        return Err(NameError::SingleAt);
    }
    let mut asterisk_allowed = options.refspec_pattern;
    let mut components = 0;
    for component in name.split(|&b| b == b'/') {
        components += 1;
        if component.is_empty() {
            return Err(NameError::EmptyComponent);
        }
        if component[0] == b'.' {
            return Err(NameError::ComponentStartsWithDot);
        }
        let mut previous = 0u8;
        for &b in component {
            match b {
                b'.' if previous == b'.' => return Err(NameError::DoubleDot),
                b'{' if previous == b'@' => return Err(NameError::AtBrace),
                b'*' if asterisk_allowed => asterisk_allowed = false,
                b'*' => return Err(NameError::Asterisk),
                b if forbidden(b) => return Err(NameError::ForbiddenByte(b)),
                _ => {}
            }
            previous = b;
        }
        if component.ends_with(b".lock") {
            return Err(NameError::ComponentEndsWithLock);
        }
    }
    if name.ends_with(b".") {
        return Err(NameError::EndsWithDot);
    }
    if components < 2 && !options.allow_onelevel {
        return Err(NameError::OneLevel);
    }
    Ok(())
}

/// Removes leading slashes and collapses runs of slashes, as
/// `check-ref-format --normalize` does before checking.
pub fn collapse_slashes(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len());
    for &b in name {
        if b == b'/' && out.last().is_none_or(|&last| last == b'/') {
            continue;
        }
        out.push(b);
    }
    out
}

/// What `check-ref-format [--normalize]` does: normalizes the name if asked,
/// checks it, and returns the name to print.
pub fn check_ref_format(
    name: &[u8],
    options: CheckOptions,
    normalize: bool,
) -> Result<Vec<u8>, NameError> {
    let name = if normalize {
        collapse_slashes(name)
    } else {
        name.to_vec()
    };
    check(&name, options)?;
    Ok(name)
}

/// A valid, full reference name as stored in a ref database: a name below
/// `refs/`, or a root ref such as `HEAD` or `FETCH_HEAD`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RefName(Box<[u8]>);

impl RefName {
    /// Validates a full reference name: git's rules, and either below
    /// `refs/` or a root ref (upper case letters and `_`, like `HEAD`).
    pub fn new(name: impl AsRef<[u8]>) -> Result<Self, InvalidName> {
        let name = name.as_ref();
        Self::validate(name).map_err(|reason| InvalidName {
            name: name.to_vec(),
            reason,
        })?;
        Ok(RefName(name.into()))
    }

    /// Checks `name` as [`new`](Self::new) does, without building a name:
    /// stores check every name they read, most of them only to show it.
    pub fn validate(name: &[u8]) -> Result<(), NameError> {
        Self::validate_continuing(name, 0)
    }

    /// [`validate`](Self::validate) for a name whose first `known` bytes
    /// are also the start of a name that passed it: only the rest is
    /// checked. Sorted names share long prefixes, so a store reading many
    /// in order checks each mostly once.
    pub fn validate_continuing(name: &[u8], known: usize) -> Result<(), NameError> {
        // Names with one level are rare and have their own rule: the full
        // check handles them.
        if is_plainly_valid_from(name, known, false) {
            return Ok(());
        }
        let one_level = !name.contains(&b'/');
        check(
            name,
            CheckOptions {
                allow_onelevel: one_level,
                refspec_pattern: false,
            },
        )?;
        if one_level && !is_root_ref_syntax(name) {
            return Err(NameError::OneLevel);
        }
        Ok(())
    }

    /// Wraps bytes already known to be a valid name (read back from a ref
    /// store that only holds valid names). Checked in debug builds.
    pub fn from_trusted(name: impl Into<Box<[u8]>>) -> Self {
        let name = name.into();
        debug_assert!(
            RefName::new(&name).is_ok(),
            "{:?}",
            String::from_utf8_lossy(&name)
        );
        RefName(name)
    }

    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The name as text, if it is UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// True for one-level names such as `HEAD` (not below `refs/`).
    pub fn is_root_ref(&self) -> bool {
        !self.0.contains(&b'/')
    }

    /// The name's components.
    pub fn components(&self) -> impl Iterator<Item = &[u8]> {
        self.0.split(|&b| b == b'/')
    }

    /// Every proper prefix that is a directory of this name, shortest first:
    /// `refs`, `refs/heads`, `refs/heads/a` for `refs/heads/a/b`. A ref at
    /// any of them would conflict with this one.
    pub fn prefixes(&self) -> impl Iterator<Item = &[u8]> {
        let name = &self.0;
        name.iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'/')
            .map(move |(i, _)| &name[..i])
    }

    /// The short form `%(refname:short)` shows when it is unambiguous:
    /// `refs/heads/x`, `refs/tags/x` and `refs/remotes/x` become `x`, `refs/x`
    /// becomes `x`.
    pub fn shorten(&self) -> &[u8] {
        for prefix in [
            &b"refs/heads/"[..],
            b"refs/tags/",
            b"refs/remotes/",
            b"refs/",
        ] {
            if let Some(rest) = self.0.strip_prefix(prefix) {
                if !rest.is_empty() {
                    return rest;
                }
            }
        }
        &self.0
    }
}

/// The rules by which git expands a short name, most specific last:
/// `x`, `refs/x`, `refs/tags/x`, `refs/heads/x`, `refs/remotes/x`,
/// `refs/remotes/x/HEAD`.
const EXPANSION_RULES: [(&[u8], &[u8]); 6] = [
    (b"", b""),
    (b"refs/", b""),
    (b"refs/tags/", b""),
    (b"refs/heads/", b""),
    (b"refs/remotes/", b""),
    (b"refs/remotes/", b"/HEAD"),
];

impl RefName {
    /// The shortest name that still means this ref, as git's
    /// `%(refname:short)` and `symbolic-ref --short` print it: the name
    /// with a rule's prefix removed, unless expanding the short name by any
    /// other rule gives a ref that `exists` (git's strict ambiguity check,
    /// `core.warnAmbiguousRefs`). The full name when every rule is
    /// ambiguous.
    pub fn shorten_unambiguous(&self, exists: impl Fn(&[u8]) -> bool) -> Vec<u8> {
        let name = self.as_bytes();
        for (i, (prefix, suffix)) in EXPANSION_RULES.iter().enumerate().skip(1).rev() {
            let Some(short) = name
                .strip_prefix(*prefix)
                .and_then(|rest| rest.strip_suffix(*suffix))
                .filter(|s| !s.is_empty())
            else {
                continue;
            };
            let ambiguous = EXPANSION_RULES
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .any(|(_, (p, s))| exists(&[*p, short, *s].concat()));
            if !ambiguous {
                return short.to_vec();
            }
        }
        name.to_vec()
    }
}

/// Root refs are one-level names of upper-case letters and underscores
/// (`HEAD`, `FETCH_HEAD`, `ORIG_HEAD`, ...), as git's pseudoref syntax.
pub fn is_root_ref_syntax(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| b.is_ascii_uppercase() || b == b'_')
}

impl fmt::Display for RefName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

impl fmt::Debug for RefName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RefName({:?})", String::from_utf8_lossy(&self.0))
    }
}

impl AsRef<[u8]> for RefName {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl std::str::FromStr for RefName {
    type Err = InvalidName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RefName::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: CheckOptions = CheckOptions {
        allow_onelevel: false,
        refspec_pattern: false,
    };

    #[test]
    fn rules() {
        let ok = |n: &str| check(n.as_bytes(), NONE);
        assert_eq!(ok("refs/heads/main"), Ok(()));
        assert_eq!(ok("refs/heads/ü/日本"), Ok(()));
        assert_eq!(ok("main"), Err(NameError::OneLevel));
        assert_eq!(ok("refs//x"), Err(NameError::EmptyComponent));
        assert_eq!(ok("/refs/x"), Err(NameError::EmptyComponent));
        assert_eq!(ok("refs/x/"), Err(NameError::EmptyComponent));
        assert_eq!(ok("refs/.x"), Err(NameError::ComponentStartsWithDot));
        assert_eq!(ok("refs/x.lock/y"), Err(NameError::ComponentEndsWithLock));
        assert_eq!(ok("refs/a..b"), Err(NameError::DoubleDot));
        assert_eq!(ok("refs/a@{b"), Err(NameError::AtBrace));
        assert_eq!(ok("refs/a@b/@"), Ok(()));
        assert_eq!(ok("refs/a b"), Err(NameError::ForbiddenByte(b' ')));
        assert_eq!(ok("refs/a\x7f"), Err(NameError::ForbiddenByte(0x7f)));
        assert_eq!(ok("refs/x."), Err(NameError::EndsWithDot));
        assert_eq!(ok("refs/*"), Err(NameError::Asterisk));
        let pattern = CheckOptions {
            refspec_pattern: true,
            ..NONE
        };
        assert_eq!(check(b"refs/*/x", pattern), Ok(()));
        assert_eq!(check(b"refs/*/x*", pattern), Err(NameError::Asterisk));
        assert_eq!(check(b"@", pattern), Err(NameError::SingleAt));
    }

    /// The one-pass check and the rule-by-rule one agree on every name,
    /// built here from the pieces the rules care about.
    #[test]
    fn fast_check_agrees_with_the_rules() {
        use proptest::prelude::*;
        let pieces: Vec<&[u8]> = vec![
            b"a", b"b", b".", b"/", b"@", b"{", b"*", b"~", b" ", b"\x01", b"\x7f", b"\xc3",
            b".lock", b"lock", b"^", b":", b"?", b"[", b"\\",
        ];
        let piece = proptest::sample::select(pieces);
        proptest!(|(parts in proptest::collection::vec(piece, 0..10), allow_onelevel: bool)| {
            let name = parts.concat();
            let options = CheckOptions { allow_onelevel, refspec_pattern: false };
            prop_assert_eq!(
                is_plainly_valid(&name, allow_onelevel),
                explain(&name, options).is_ok(),
                "{:?}",
                String::from_utf8_lossy(&name)
            );
        });
    }

    /// Continuing from the bytes shared with a valid name gives the same
    /// answer as checking the whole name.
    #[test]
    fn continuing_check_agrees_with_the_full_one() {
        use proptest::prelude::*;
        // Valid names are built from pieces that rarely break a rule; the
        // second name keeps a random part of the first and goes on with
        // any pieces.
        let tame: Vec<&[u8]> = vec![b"a", b"b", b"/a", b"/b", b".a", b"@", b"-", b"x.loc"];
        let wild: Vec<&[u8]> = vec![
            b"a", b"/", b".", b"@", b"{", b"~", b".lock", b"k", b"/.", b"..", b"HEAD",
        ];
        let first = proptest::collection::vec(proptest::sample::select(tame), 0..8)
            .prop_map(|parts| [&b"refs/"[..], &parts.concat()].concat());
        let rest = proptest::collection::vec(proptest::sample::select(wild), 0..5)
            .prop_map(|parts| parts.concat());
        proptest!(|(first in first, keep in 0usize..40, rest in rest)| {
            prop_assume!(RefName::validate(&first).is_ok());
            let second = [&first[..keep.min(first.len())], &rest[..]].concat();
            let known = first.iter().zip(&second).take_while(|(a, b)| a == b).count();
            prop_assert_eq!(
                RefName::validate_continuing(&second, known).is_ok(),
                RefName::validate(&second).is_ok(),
                "{:?} after {:?}",
                String::from_utf8_lossy(&second),
                String::from_utf8_lossy(&first)
            );
        });
    }

    #[test]
    fn full_names() {
        assert!(RefName::new("HEAD").unwrap().is_root_ref());
        assert!(RefName::new("FETCH_HEAD").is_ok());
        assert!(RefName::new("main").is_err());
        assert!(RefName::new("refs/heads/a..b").is_err());
        let name = RefName::new("refs/heads/a/b").unwrap();
        let prefixes: Vec<_> = name.prefixes().collect();
        assert_eq!(prefixes, [&b"refs"[..], b"refs/heads", b"refs/heads/a"]);
        assert_eq!(name.shorten(), b"a/b");
        assert_eq!(RefName::new("refs/tags/v1").unwrap().shorten(), b"v1");
        assert_eq!(RefName::new("refs/notes/x").unwrap().shorten(), b"notes/x");
        assert_eq!(RefName::new("HEAD").unwrap().shorten(), b"HEAD");
        let err = RefName::new("refs/heads/a..b").unwrap_err();
        assert_eq!(
            err.to_string(),
            "'refs/heads/a..b' is not a valid reference name: it contains '..'"
        );
    }

    #[test]
    fn normalize() {
        assert_eq!(collapse_slashes(b"//refs///heads/a/"), b"refs/heads/a/");
        assert_eq!(collapse_slashes(b"/"), b"");
    }

    #[test]
    fn shortening_avoids_names_other_rules_would_take() {
        let refs: &[&[u8]] = &[
            b"refs/heads/v1",
            b"refs/tags/v1",
            b"refs/heads/main",
            b"refs/remotes/origin/HEAD",
        ];
        let exists = |n: &[u8]| refs.contains(&n);
        let short = |n: &str| {
            String::from_utf8(RefName::new(n).unwrap().shorten_unambiguous(exists)).unwrap()
        };
        assert_eq!(short("refs/heads/main"), "main");
        assert_eq!(short("refs/heads/v1"), "heads/v1");
        assert_eq!(short("refs/tags/v1"), "tags/v1");
        assert_eq!(short("refs/remotes/origin/HEAD"), "origin");
        assert_eq!(short("refs/other/x"), "other/x");
    }
}
