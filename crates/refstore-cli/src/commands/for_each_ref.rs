//! `refstore for-each-ref`: list refs with a format, filtered by patterns
//! and by the object they point at, sorted, and counted.

mod format;

use crate::context::{Fatal, Globals};
use format::{Atom, Fields, Objects, Piece};
use refstore_refs::value::{Ref, Target};
use refstore_refs::{Backend, ObjectId, RefName};
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashSet};
use std::io::Write;

use super::update_ref::parse_value;

/// Arguments of `for-each-ref`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The format of each line (default `%(objectname) %(objecttype)\t%(refname)`).
    #[arg(long, value_name = "format")]
    format: Option<String>,
    /// Sort by this field; `-` in front reverses. The last key given sorts first.
    #[arg(long, value_name = "key")]
    sort: Vec<String>,
    /// Show at most this many refs.
    #[arg(long, value_name = "n")]
    count: Option<String>,
    /// Show only refs pointing at this object, directly or through an
    /// annotated tag.
    #[arg(long, value_name = "object")]
    points_at: Option<String>,
    /// Patterns: a ref matches a pattern that is its name, a leading part of
    /// it up to a `/`, or a glob (`*` does not cross `/`).
    patterns: Vec<String>,
}

/// One ref to show.
struct Entry {
    name: RefName,
    id: ObjectId,
    symref: Option<RefName>,
}

/// A sort key: the field and its direction.
struct SortKey {
    atom: Atom,
    descending: bool,
}

fn usage_error(message: &str) -> Result<u8, Fatal> {
    eprintln!("error: {message}");
    eprintln!("usage: refstore for-each-ref [<options>] [<pattern>...]");
    Ok(129)
}

/// What the command line asks to be shown, and how.
struct Wanted {
    pieces: Vec<Piece>,
    /// The sort keys, the one that sorts first first.
    keys: Vec<SortKey>,
    count: usize,
    points_at: Option<ObjectId>,
}

/// Runs `for-each-ref`.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    let repo = globals.open_repo()?;
    let store = repo.refs().map_err(Fatal::new)?;
    let backend = &*store;
    let wanted = match parse_args(&args, backend)? {
        Ok(wanted) => wanted,
        Err(usage) => return usage_error(&usage),
    };
    let objects = RepoObjects {
        odb: super::objects::open(&repo)?,
    };
    let points_at = wanted.points_at.as_ref();
    let indexed = indexed_names(backend, points_at, &objects)?;
    let listing = backend
        .list(&listing_prefix(&args.patterns))
        .map_err(Fatal::new)?;
    for broken in &listing.broken {
        eprintln!("warning: ignoring broken ref {broken}");
    }
    let all_names: HashSet<Vec<u8>> = listing
        .refs
        .iter()
        .map(|r| r.name.as_bytes().to_vec())
        .collect();
    let mut entries = select(
        backend,
        listing.refs,
        &args.patterns,
        points_at,
        indexed.as_ref(),
        &objects,
    )?;

    let head = match backend.read(&RefName::new("HEAD").expect("valid")) {
        Ok(Some(Ref {
            target: Target::Symbolic(t),
            ..
        })) => Some(t),
        _ => None,
    };
    // Other refs in scope decide whether a short name is ambiguous; names
    // outside the listed prefix are looked up in the store.
    let shorten = |name: &RefName| {
        name.shorten_unambiguous(|candidate| {
            all_names.contains(candidate)
                || RefName::new(candidate)
                    .ok()
                    .is_some_and(|n| backend.read(&n).ok().flatten().is_some())
        })
    };
    let render = |atom: &Atom, e: &Entry| {
        let fields = Fields {
            name: &e.name,
            id: &e.id,
            symref: e.symref.as_ref(),
            is_head: head.as_ref() == Some(&e.name),
        };
        format::render_atom(atom, &fields, &objects, &shorten)
    };
    sort(&mut entries, &wanted.keys, &render);
    write_lines(
        &entries[..entries.len().min(wanted.count)],
        &wanted.pieces,
        &render,
    )?;
    Ok(0)
}

/// Reads the format, the sort keys, the count and `--points-at`; a
/// mistake the usage answers is given as its message.
fn parse_args(args: &Args, backend: &dyn Backend) -> Result<Result<Wanted, String>, Fatal> {
    let format_text = args
        .format
        .as_deref()
        .unwrap_or("%(objectname) %(objecttype)\t%(refname)");
    let pieces = match format::parse(format_text) {
        Ok(pieces) => pieces,
        Err(e) if e.usage => return Ok(Err(e.message)),
        Err(e) => return Err(Fatal::new(e.message)),
    };
    let mut keys = Vec::new();
    for key in args.sort.iter().rev() {
        let (descending, field) = match key.strip_prefix('-') {
            Some(field) => (true, field),
            None => (false, key.as_str()),
        };
        let atom = format::parse_atom(field).map_err(|e| Fatal::new(e.message))?;
        keys.push(SortKey { atom, descending });
    }
    let count = match args.count.as_deref().map(str::parse::<usize>) {
        None => usize::MAX,
        Some(Ok(n)) if n > 0 => n,
        Some(Ok(_)) => usize::MAX,
        Some(Err(_)) => {
            let given = args.count.as_deref().unwrap_or_default();
            return Ok(Err(format!("invalid --count argument: `{given}'")));
        }
    };
    let points_at = match &args.points_at {
        None => None,
        Some(object) => match parse_value(backend, object) {
            Some(id) => Some(id),
            None => return Ok(Err(format!("malformed object name '{object}'"))),
        },
    };
    Ok(Ok(Wanted {
        pieces,
        keys,
        count,
        points_at,
    }))
}

/// The names of the refs a reftable's object index holds for `points_at`,
/// the only ones that may point at it; `None` when every ref must be
/// looked at.
fn indexed_names(
    backend: &dyn Backend,
    points_at: Option<&ObjectId>,
    objects: &RepoObjects,
) -> Result<Option<BTreeSet<Vec<u8>>>, Fatal> {
    // The index names the refs whose value or peeled value is the object,
    // so only those need an object read. A tag can also sit inside a
    // chain of tags, where the index does not see it: the index serves
    // only objects that are not tags.
    Ok(match (points_at, backend.as_reftable()) {
        (Some(want), Some(reftable)) if objects.kind(want) != Some("tag") => {
            Some(reftable.names_for_object(want).map_err(Fatal::new)?)
        }
        _ => None,
    })
}

/// The listed refs the patterns and `points_at` select, each with the
/// object it resolves to; `indexed` as [`indexed_names`] gives it.
fn select(
    backend: &dyn Backend,
    refs: Vec<Ref>,
    patterns: &[String],
    points_at: Option<&ObjectId>,
    indexed: Option<&BTreeSet<Vec<u8>>>,
    objects: &RepoObjects,
) -> Result<Vec<Entry>, Fatal> {
    let mut entries = Vec::new();
    for r in refs {
        if !patterns.is_empty() && !patterns.iter().any(|p| matches(p, &r.name)) {
            continue;
        }
        // A symbolic ref is shown with the object it resolves to; one that
        // resolves to nothing is skipped, as git does.
        let (id, symref) = match r.target {
            Target::Object(id) => (id, None),
            Target::Symbolic(to) => {
                match backend.resolve(&r.name).ok().flatten().and_then(|x| x.id) {
                    Some(id) => (id, Some(to)),
                    None => continue,
                }
            }
        };
        if let Some(want) = points_at {
            let in_index =
                symref.is_some() || indexed.is_none_or(|names| names.contains(r.name.as_bytes()));
            if !in_index || (id != *want && objects.tagged(&id).as_ref() != Some(want)) {
                continue;
            }
        }
        entries.push(Entry {
            name: r.name,
            id,
            symref,
        });
    }
    Ok(entries)
}

/// Sorts by the keys, then by name; without keys the listing's order
/// (by name) stays.
fn sort(entries: &mut [Entry], keys: &[SortKey], render: &dyn Fn(&Atom, &Entry) -> Vec<u8>) {
    if keys.is_empty() {
        return;
    }
    entries.sort_by(|a, b| {
        for key in keys {
            let order = render(&key.atom, a).cmp(&render(&key.atom, b));
            let order = if key.descending {
                order.reverse()
            } else {
                order
            };
            if order != Ordering::Equal {
                return order;
            }
        }
        a.name.cmp(&b.name)
    });
}

/// Writes a line in the format for each entry to standard output.
fn write_lines(
    entries: &[Entry],
    pieces: &[Piece],
    render: &dyn Fn(&Atom, &Entry) -> Vec<u8>,
) -> Result<(), Fatal> {
    let failed = |e: std::io::Error| Fatal::new(format!("cannot write to standard output: {e}"));
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for entry in entries {
        let mut line = Vec::new();
        for piece in pieces {
            match piece {
                Piece::Literal(text) => line.extend_from_slice(text),
                Piece::Atom(atom) => line.extend(render(atom, entry)),
            }
        }
        line.push(b'\n');
        out.write_all(&line).map_err(failed)?;
    }
    out.flush().map_err(failed)
}

/// git's pattern rule: the whole name, a leading part ending at a `/`, or
/// a glob in which `*` stops at `/`.
fn matches(pattern: &str, name: &RefName) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    if n.starts_with(p) && (n.len() == p.len() || n[p.len()] == b'/' || p.ends_with(b"/")) {
        return true;
    }
    gix_glob::wildmatch(
        p.into(),
        n.into(),
        gix_glob::wildmatch::Mode::NO_MATCH_SLASH_LITERAL,
    )
}

/// The longest directory every pattern stays inside, so only that part of
/// the store is read.
fn listing_prefix(patterns: &[String]) -> Vec<u8> {
    let literal_dir = |p: &str| -> Vec<u8> {
        let bytes = p.as_bytes();
        let glob = bytes
            .iter()
            .position(|b| matches!(b, b'*' | b'?' | b'[' | b'\\'))
            .unwrap_or(bytes.len());
        let dir_end = bytes[..glob]
            .iter()
            .rposition(|&b| b == b'/')
            .map_or(0, |i| i + 1);
        bytes[..dir_end].to_vec()
    };
    let mut dirs = patterns.iter().map(|p| literal_dir(p));
    let Some(mut prefix) = dirs.next() else {
        return b"refs/".to_vec();
    };
    for dir in dirs {
        let common = prefix.iter().zip(&dir).take_while(|(a, b)| a == b).count();
        prefix.truncate(common);
        let dir_end = prefix.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
        prefix.truncate(dir_end);
    }
    if prefix.starts_with(b"refs/") {
        prefix
    } else {
        b"refs/".to_vec()
    }
}

/// Object lookups through the repository's object database.
struct RepoObjects {
    odb: refstore_odb::Odb,
}

impl Objects for RepoObjects {
    fn kind(&self, id: &ObjectId) -> Option<&'static str> {
        self.odb.kind(id).ok().flatten().map(|k| k.as_str())
    }

    fn tagged(&self, id: &ObjectId) -> Option<ObjectId> {
        self.odb.tagged(id).ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_git_does() {
        let name = RefName::new("refs/heads/a/b").unwrap();
        assert!(matches("refs/heads", &name));
        assert!(matches("refs/heads/", &name));
        assert!(matches("refs/heads/a/b", &name));
        assert!(!matches("refs/hea", &name));
        assert!(matches("refs/*/a/*", &name));
        assert!(!matches("refs/*/b", &name));
    }

    #[test]
    fn listing_prefix_is_the_common_directory() {
        let p = |v: &[&str]| {
            String::from_utf8(listing_prefix(
                &v.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            ))
            .unwrap()
        };
        assert_eq!(p(&[]), "refs/");
        assert_eq!(p(&["refs/heads/x"]), "refs/heads/");
        assert_eq!(p(&["refs/heads/x", "refs/heads/y/z"]), "refs/heads/");
        assert_eq!(p(&["refs/heads/x", "refs/tags"]), "refs/");
        assert_eq!(p(&["refs/*/x"]), "refs/");
        assert_eq!(p(&["x"]), "refs/");
    }
}
