//! Partial clone: the `filter <spec>` a client sends (`git clone
//! --filter=...`), which objects of the walk it leaves out, and which specs
//! the server's configuration allows.
//!
//! The specs are git's (`rev-list --filter`): `blob:none`,
//! `blob:limit=<n>[kmg]` (blobs of at least n bytes are left out),
//! `tree:<depth>` (trees and blobs at least `depth` levels below a root
//! tree are left out; an object met at several depths counts at its
//! smallest), `object:type=<type>` (only objects of that type are sent) and
//! `combine:<spec>+<spec>...` (URL-encoded parts; an object is sent only if
//! every part sends it) and `sparse:oid=<blob-ish>` (blobs whose paths
//! the sparse-checkout patterns of that blob include, `sparse_oid.rs`;
//! every tree is sent).
//!
//! Objects the client names in `want` lines are sent whatever the filter
//! says, as git does: that is how a partial clone fetches the blobs it
//! lacks, one `want` each, with the filter of the clone still on.
//!
//! The walk that applies a filter is `filtered_walk.rs`.

use super::sparse_patterns::SparsePatterns;
use super::UploadPackError;
use gix_object::Kind;
use refstore_fs::config::Config;
use std::collections::HashMap;
use std::sync::Arc;

/// A parsed filter spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Filter {
    /// `blob:none`.
    BlobNone,
    /// `blob:limit=<n>`: blobs of `n` bytes or more are left out.
    BlobLimit(u64),
    /// `tree:<depth>`.
    TreeDepth(u64),
    /// `object:type=<type>`.
    ObjectType(Kind),
    /// `sparse:oid=<blob-ish>`, as the client named the blob.
    SparseOid(String),
    /// `sparse:oid=` with the patterns of its blob read: what a walk
    /// applies. `slot` numbers the sparse parts of one filter, each
    /// keeping its own answers for the directories of the walk.
    Sparse {
        slot: usize,
        patterns: Arc<SparsePatterns>,
    },
    /// `combine:<spec>+...`.
    Combine(Vec<Filter>),
}

/// Characters git wants percent-encoded in the parts of `combine:`.
const RESERVED: &[u8] = b"~`!@#$^&*()[]{}\\;'\",<>?";

impl Filter {
    /// Parses `spec` as git does, with git's messages for bad specs.
    pub(crate) fn parse(spec: &[u8]) -> Result<Filter, UploadPackError> {
        let text = String::from_utf8_lossy(spec);
        let bad = |message: String| UploadPackError::request(message);
        if spec == b"blob:none" {
            return Ok(Filter::BlobNone);
        }
        if let Some(value) = spec.strip_prefix(b"blob:limit=") {
            if let Some(n) = parse_ulong(value) {
                return Ok(Filter::BlobLimit(n));
            }
        } else if let Some(value) = spec.strip_prefix(b"tree:") {
            return parse_ulong(value)
                .map(Filter::TreeDepth)
                .ok_or_else(|| bad("expected 'tree:<depth>'".into()));
        } else if let Some(value) = spec.strip_prefix(b"sparse:oid=") {
            return Ok(Filter::SparseOid(String::from_utf8_lossy(value).into()));
        } else if spec.starts_with(b"sparse:path=") {
            return Err(bad("sparse:path filters support has been dropped".into()));
        } else if let Some(value) = spec.strip_prefix(b"object:type=") {
            let kind = Kind::from_bytes(value).map_err(|_| {
                bad(format!(
                    "'{}' for 'object:type=<type>' is not a valid object type",
                    String::from_utf8_lossy(value)
                ))
            })?;
            return Ok(Filter::ObjectType(kind));
        } else if let Some(value) = spec.strip_prefix(b"combine:") {
            return Self::parse_combine(value);
        }
        Err(bad(format!("invalid filter-spec '{text}'")))
    }

    fn parse_combine(value: &[u8]) -> Result<Filter, UploadPackError> {
        if value.is_empty() {
            return Err(UploadPackError::request(
                "expected something after combine:",
            ));
        }
        let mut parts = Vec::new();
        for part in value.split(|&b| b == b'+') {
            if let Some(&c) = part.iter().find(|&&c| c <= b' ' || RESERVED.contains(&c)) {
                return Err(UploadPackError::request(format!(
                    "must escape char in sub-filter-spec: '{}'",
                    c as char
                )));
            }
            parts.push(Filter::parse(&percent_decode(part))?);
        }
        Ok(Filter::Combine(parts))
    }

    /// The name git's configuration uses for the filter's kind
    /// (`uploadpackfilter.<name>.allow`).
    pub(crate) fn config_name(&self) -> &'static str {
        match self {
            Filter::BlobNone => "blob:none",
            Filter::BlobLimit(_) => "blob:limit",
            Filter::TreeDepth(_) => "tree",
            Filter::ObjectType(_) => "object:type",
            Filter::SparseOid(_) | Filter::Sparse { .. } => "sparse:oid",
            Filter::Combine(_) => "combine",
        }
    }

    /// Whether an unrequested commit (or tag) is sent.
    pub(crate) fn shows(&self, kind: Kind) -> bool {
        match self {
            Filter::ObjectType(wanted) => *wanted == kind,
            Filter::Combine(parts) => parts.iter().all(|p| p.shows(kind)),
            _ => true,
        }
    }

    /// For a tree at `depth` below a root tree (0 for the root): whether
    /// it is sent, and whether anything below it can be.
    pub(crate) fn tree(&self, depth: u64) -> (bool, bool) {
        match self {
            Filter::BlobNone
            | Filter::BlobLimit(_)
            | Filter::SparseOid(_)
            | Filter::Sparse { .. } => (true, true),
            Filter::TreeDepth(limit) => (depth < *limit, depth.saturating_add(1) < *limit),
            Filter::ObjectType(kind) => {
                (*kind == Kind::Tree, matches!(kind, Kind::Tree | Kind::Blob))
            }
            Filter::Combine(parts) => parts.iter().fold((true, true), |(show, down), p| {
                let (s, d) = p.tree(depth);
                (show && s, down && d)
            }),
        }
    }

    /// Whether a blob at `depth` and `place` is sent; its size is asked
    /// for only when it matters.
    pub(crate) fn blob(
        &self,
        depth: u64,
        place: &Place<'_>,
        size: &mut dyn FnMut() -> Result<u64, UploadPackError>,
    ) -> Result<bool, UploadPackError> {
        Ok(match self {
            Filter::BlobNone => false,
            Filter::BlobLimit(limit) => size()? < *limit,
            Filter::TreeDepth(limit) => depth < *limit,
            Filter::ObjectType(kind) => *kind == Kind::Blob,
            Filter::SparseOid(_) => true,
            Filter::Sparse { slot, patterns } => patterns
                .decide(place.path, false)
                .unwrap_or(place.included[*slot]),
            Filter::Combine(parts) => {
                for part in parts {
                    if !part.blob(depth, place, size)? {
                        return Ok(false);
                    }
                }
                true
            }
        })
    }

    /// Reads the patterns of every `sparse:oid=` part with `load`,
    /// numbering them from `*slots` on.
    pub(crate) fn resolve(
        &self,
        slots: &mut usize,
        load: &mut dyn FnMut(&str) -> Result<SparsePatterns, UploadPackError>,
    ) -> Result<Filter, UploadPackError> {
        Ok(match self {
            Filter::SparseOid(spec) => {
                let patterns = Arc::new(load(spec)?);
                *slots += 1;
                Filter::Sparse {
                    slot: *slots - 1,
                    patterns,
                }
            }
            Filter::Combine(parts) => Filter::Combine(
                parts
                    .iter()
                    .map(|part| part.resolve(slots, load))
                    .collect::<Result<_, _>>()?,
            ),
            other => other.clone(),
        })
    }

    /// Records in `included`, for each sparse part, whether the directory
    /// at `path` is included; on entry `included` holds its parent's
    /// answers (for the root tree: not included).
    pub(crate) fn enter_directory(&self, path: &[u8], included: &mut [bool]) {
        match self {
            Filter::Sparse { slot, patterns } => {
                if let Some(decided) = patterns.decide(path, true) {
                    included[*slot] = decided;
                }
            }
            Filter::Combine(parts) => {
                for part in parts {
                    part.enter_directory(path, included);
                }
            }
            _ => {}
        }
    }

    /// How many `sparse:oid=` parts with their patterns read the filter
    /// has.
    pub(crate) fn sparse_parts(&self) -> usize {
        match self {
            Filter::Sparse { .. } => 1,
            Filter::Combine(parts) => parts.iter().map(Filter::sparse_parts).sum(),
            _ => 0,
        }
    }

    /// True if the depth of an object changes what is sent.
    pub(crate) fn uses_depth(&self) -> bool {
        match self {
            Filter::TreeDepth(_) => true,
            Filter::Combine(parts) => parts.iter().any(Filter::uses_depth),
            _ => false,
        }
    }
}

/// Where a blob is met in a walk: its path from the root tree and, for
/// each sparse part of the filter, whether its directory is included.
pub(crate) struct Place<'a> {
    pub path: &'a [u8],
    pub included: &'a [bool],
}

#[cfg(test)]
impl Place<'_> {
    /// For filters with no sparse part: no path is needed.
    pub(crate) const NOWHERE: Place<'static> = Place {
        path: b"",
        included: &[],
    };
}

/// git's unsigned number with an optional `k`, `m` or `g` unit.
fn parse_ulong(value: &[u8]) -> Option<u64> {
    let digits = value.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let n: u64 = std::str::from_utf8(&value[..digits]).ok()?.parse().ok()?;
    let factor = match &value[digits..] {
        b"" => 1,
        b"k" | b"K" => 1 << 10,
        b"m" | b"M" => 1 << 20,
        b"g" | b"G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(factor)
}

/// Decodes `%XX` escapes (a `+` stays a `+`).
fn percent_decode(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if text[i] == b'%' && i + 2 < text.len() {
            if let (Some(h), Some(l)) = (hex(text[i + 1]), hex(text[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(text[i]);
        i += 1;
    }
    out
}

/// Which filters the server's configuration allows (git's
/// `uploadpack.allowFilter`, `uploadpackfilter.allow`,
/// `uploadpackfilter.<filter>.allow`, `uploadpackfilter.tree.maxDepth`).
#[derive(Debug, Clone, Default)]
pub(crate) struct FilterPolicy {
    /// `uploadpack.allowFilter`: the capability is offered (git: off).
    pub allow_filter: bool,
    /// `uploadpackfilter.allow`: filters not named otherwise (git: on).
    fallback: bool,
    /// `uploadpackfilter.<name>.allow`, by name.
    by_name: HashMap<&'static str, bool>,
    /// `uploadpackfilter.tree.maxDepth`.
    tree_max_depth: Option<u64>,
}

const FILTER_NAMES: [&str; 6] = [
    "blob:none",
    "blob:limit",
    "tree",
    "object:type",
    "sparse:oid",
    "combine",
];

impl FilterPolicy {
    /// Reads the policy from `config`.
    pub(crate) fn read(config: &Config) -> Result<Self, UploadPackError> {
        let bad = |e: refstore_fs::config::ConfigError| UploadPackError::Objects(e.to_string());
        let mut by_name = HashMap::new();
        for name in FILTER_NAMES {
            if let Some(allow) = config
                .bool(&format!("uploadpackfilter.{name}.allow"))
                .map_err(bad)?
            {
                by_name.insert(name, allow);
            }
        }
        let tree_max_depth = config
            .int("uploadpackfilter.tree.maxDepth")
            .map_err(bad)?
            .map(|d| d.max(0) as u64);
        // Setting a maximum depth allows the tree filter (in git, unless
        // a later `allow = false` says otherwise; here an explicit `allow`
        // wins whatever its place).
        if tree_max_depth.is_some() {
            by_name.entry("tree").or_insert(true);
        }
        Ok(FilterPolicy {
            allow_filter: config.bool("uploadpack.allowFilter").map_err(bad)? == Some(true),
            fallback: config.bool("uploadpackfilter.allow").map_err(bad)? != Some(false),
            by_name,
            tree_max_depth,
        })
    }

    /// Refuses a filter (or part of a `combine:`) the configuration does
    /// not allow, in git's words.
    pub(crate) fn check(&self, filter: &Filter) -> Result<(), UploadPackError> {
        let name = filter.config_name();
        let allowed = self.by_name.get(name).copied().unwrap_or(self.fallback);
        if !allowed {
            return Err(UploadPackError::request(format!(
                "filter '{name}' not supported"
            )));
        }
        match filter {
            Filter::TreeDepth(depth) => {
                if let Some(max) = self.tree_max_depth.filter(|max| depth > max) {
                    return Err(UploadPackError::request(format!(
                        "tree filter allows max depth {max}, but got {depth}"
                    )));
                }
            }
            Filter::Combine(parts) => {
                for part in parts {
                    self.check(part)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Every filter allowed (for the request parsers' fuzz targets).
    pub(crate) fn permissive() -> Self {
        FilterPolicy {
            allow_filter: true,
            fallback: true,
            ..FilterPolicy::default()
        }
    }

    /// Parses and checks the spec of a `filter` line.
    pub(crate) fn accept(&self, spec: &[u8]) -> Result<Filter, UploadPackError> {
        let filter = Filter::parse(spec)?;
        self.check(&filter)?;
        Ok(filter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_as_in_git() {
        assert_eq!(Filter::parse(b"blob:none").unwrap(), Filter::BlobNone);
        assert_eq!(
            Filter::parse(b"blob:limit=1k").unwrap(),
            Filter::BlobLimit(1024)
        );
        assert_eq!(Filter::parse(b"tree:0").unwrap(), Filter::TreeDepth(0));
        assert_eq!(
            Filter::parse(b"object:type=tag").unwrap(),
            Filter::ObjectType(Kind::Tag)
        );
        assert_eq!(
            Filter::parse(b"combine:blob%3Anone+tree%3A3").unwrap(),
            Filter::Combine(vec![Filter::BlobNone, Filter::TreeDepth(3)])
        );
        for (bad, message) in [
            ("blob:limit=x", "invalid filter-spec 'blob:limit=x'"),
            ("tree:-1", "expected 'tree:<depth>'"),
            ("object:type=bolb", "'bolb' for 'object:type=<type>'"),
            ("combine:", "expected something after combine:"),
            (
                "combine:blob:none+tree:~",
                "must escape char in sub-filter-spec: '~'",
            ),
            ("nothing", "invalid filter-spec 'nothing'"),
        ] {
            let err = Filter::parse(bad.as_bytes()).unwrap_err().to_string();
            assert!(err.contains(message), "{bad}: {err}");
        }
    }

    #[test]
    fn tree_depth_sends_what_is_above_the_limit() {
        let filter = Filter::TreeDepth(2);
        assert_eq!(filter.tree(0), (true, true));
        assert_eq!(filter.tree(1), (true, false));
        assert_eq!(filter.tree(2), (false, false));
        assert_eq!(Filter::TreeDepth(0).tree(0), (false, false));
        let combined = Filter::Combine(vec![Filter::BlobNone, Filter::TreeDepth(2)]);
        assert_eq!(combined.tree(0), (true, true));
        assert!(!combined.blob(1, &Place::NOWHERE, &mut || Ok(0)).unwrap());
    }

    #[test]
    fn sparse_parts_read_their_patterns_and_keep_their_own_answers() {
        let filter = Filter::parse(b"combine:sparse:oid=one+sparse:oid=two").unwrap();
        let mut slots = 0;
        let resolved = filter
            .resolve(&mut slots, &mut |spec| {
                Ok(SparsePatterns::parse(
                    match spec {
                        "one" => b"a/\n",
                        _ => b"*.txt\n",
                    },
                    false,
                ))
            })
            .unwrap();
        assert_eq!(slots, 2);
        assert_eq!(resolved.sparse_parts(), 2);
        let mut included = vec![false, false];
        resolved.enter_directory(b"a", &mut included);
        assert_eq!(included, [true, false]);
        for (path, sent) in [(&b"a/x.txt"[..], true), (b"a/x.md", false)] {
            let place = Place {
                path,
                included: &included,
            };
            assert_eq!(resolved.blob(1, &place, &mut || Ok(0)).unwrap(), sent);
        }
        let err = filter
            .resolve(&mut 0, &mut |spec| {
                Err(UploadPackError::request(format!("no {spec}")))
            })
            .unwrap_err();
        assert_eq!(err.to_string(), "no one");
    }

    #[test]
    fn the_configuration_restricts_filters() {
        let config = Config::from_local_bytes(
            b"[uploadpack]\nallowFilter\n[uploadpackfilter]\nallow = false\n\
              [uploadpackfilter \"blob:none\"]\nallow = true\n\
              [uploadpackfilter \"tree\"]\nmaxDepth = 1\n",
        )
        .unwrap();
        let policy = FilterPolicy::read(&config).unwrap();
        assert!(policy.allow_filter);
        assert!(policy.accept(b"blob:none").is_ok());
        assert!(policy.accept(b"tree:1").is_ok());
        let err = policy.accept(b"tree:2").unwrap_err().to_string();
        assert_eq!(err, "tree filter allows max depth 1, but got 2");
        let err = policy.accept(b"blob:limit=1").unwrap_err().to_string();
        assert_eq!(err, "filter 'blob:limit' not supported");
        let err = policy.accept(b"combine:blob:none+tree:1").unwrap_err();
        assert_eq!(err.to_string(), "filter 'combine' not supported");
        let default = FilterPolicy::read(&Config::from_local_bytes(b"").unwrap()).unwrap();
        assert!(!default.allow_filter);
    }
}
