//! The `sparse:oid=<blob-ish>` filter: the blob it names, resolved in the
//! served repository, holds sparse-checkout patterns
//! ([`SparsePatterns`]), and a blob of the walk is sent when its path is
//! included by them.
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
use super::sparse_patterns::SparsePatterns;
use super::UploadPackError;
use gix_object::Kind;
use refstore_fs::config::Config;
use refstore_refs::ObjectId;

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
    let hash = graph.object_format().gix_kind();
    for component in path.split('/').filter(|c| !c.is_empty()) {
        let Some((Kind::Tree, data)) = graph.read(&tree)? else {
            return Ok(None);
        };
        let entry = gix_object::TreeRefIter::from_bytes(data, hash)
            .filter_map(Result::ok)
            .find(|entry| entry.filename == component.as_bytes())
            .map(|entry| ObjectId::from_gix(entry.oid));
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
    let format = graph.object_format();
    if let Ok(id) = ObjectId::from_hex_any_case(name.as_bytes(), format) {
        return Ok(Some(id));
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
        Some(Ok(id)) => Ok(Some(ObjectId::from_gix(&id))),
        Some(Err(())) => {
            let mut candidates = std::collections::HashSet::new();
            lookup(Some(&mut candidates))?;
            let mut blobs = Vec::new();
            for id in candidates.iter().map(|id| ObjectId::from_gix(id)) {
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
            .map(|r| r.id)
    })
}
