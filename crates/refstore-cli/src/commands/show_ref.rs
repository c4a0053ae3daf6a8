//! `refstore show-ref`: list refs, or check that refs exist.

use crate::context::{Fatal, Globals};
use refstore_refs::backend::Backend;
use refstore_refs::value::Target;
use refstore_refs::ReadError;
use refstore_refs::{ObjectId, RefName};
use std::io::Write;

/// Arguments of `show-ref`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Show only refs below refs/heads (with --tags: either).
    #[arg(long)]
    heads: bool,
    /// Show only refs below refs/tags (with --heads: either).
    #[arg(long)]
    tags: bool,
    /// Show HEAD too.
    #[arg(long)]
    head: bool,
    /// Require each pattern to be an exact ref name, and fail if one is missing.
    #[arg(long)]
    verify: bool,
    /// Check that exactly one ref exists, without following symbolic refs:
    /// exit 0 if it does, 2 if it is missing, 1 on any other error.
    #[arg(long)]
    exists: bool,
    /// Also show the object each annotated tag finally points at, as
    /// `<name>^{}`.
    #[arg(short = 'd', long)]
    dereference: bool,
    /// Print only the object ids.
    #[arg(short = 's', long)]
    hash: bool,
    /// Print nothing; only the exit code tells.
    #[arg(short, long)]
    quiet: bool,
    /// Patterns matching the end of ref names at a `/` (with --verify: full names).
    patterns: Vec<String>,
}

/// Runs `show-ref`: exit 0 if something matched, 1 if nothing did.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    let repo = globals.open_repo()?;
    let store = repo.refs().map_err(Fatal::new)?;
    let backend = &*store;
    if args.exists {
        if args.verify {
            return Err(Fatal::new(
                "options '--verify' and '--exists' cannot be used together",
            ));
        }
        return exists(backend, &args.patterns);
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let objects = match args.dereference && !args.quiet {
        true => Some(super::objects::open(&repo)?),
        false => None,
    };
    let mut print = |id: &ObjectId, name: &[u8]| {
        if args.quiet {
            return;
        }
        let mut line = id.to_hex().into_bytes();
        if !args.hash {
            line.push(b' ');
            line.extend_from_slice(name);
        }
        line.push(b'\n');
        if let Some(peeled) = objects.as_ref().and_then(|o| o.peel(id).ok().flatten()) {
            line.extend_from_slice(peeled.to_hex().as_bytes());
            line.push(b' ');
            line.extend_from_slice(name);
            line.extend_from_slice(b"^{}\n");
        }
        let _ = out.write_all(&line);
    };

    if args.verify {
        let mut found = false;
        for pattern in &args.patterns {
            let resolved = RefName::new(pattern)
                .ok()
                .filter(|n| n.as_bytes().starts_with(b"refs/") || n.as_bytes() == b"HEAD")
                .and_then(|n| resolve(backend, &n).map(|id| (n, id)));
            match resolved {
                Some((name, id)) => {
                    found = true;
                    print(&id, name.as_bytes());
                }
                None if args.quiet => return Ok(1),
                None => return Err(Fatal::new(format!("'{pattern}' - not a valid ref"))),
            }
        }
        return Ok(if found { 0 } else { 1 });
    }

    let mut found = false;
    if args.head {
        if let Some(id) = resolve(backend, &RefName::new("HEAD").expect("valid")) {
            found = true;
            print(&id, b"HEAD");
        }
    }
    let listing = backend.list(b"refs/").map_err(Fatal::new)?;
    for broken in &listing.broken {
        eprintln!("warning: ignoring broken ref {broken}");
    }
    for r in &listing.refs {
        let name = r.name.as_bytes();
        let kind_ok = match (args.heads, args.tags) {
            (false, false) => true,
            (heads, tags) => {
                (heads && name.starts_with(b"refs/heads/"))
                    || (tags && name.starts_with(b"refs/tags/"))
            }
        };
        let pattern_ok = args.patterns.is_empty()
            || args
                .patterns
                .iter()
                .any(|p| tail_matches(name, p.as_bytes()));
        if !kind_ok || !pattern_ok {
            continue;
        }
        let id = match &r.target {
            Target::Object(id) => Some(*id),
            Target::Symbolic(_) => resolve(backend, &r.name),
        };
        if let Some(id) = id {
            found = true;
            print(&id, name);
        }
    }
    Ok(if found { 0 } else { 1 })
}

/// `--exists`: the ref itself, loose or packed, symbolic (even dangling) or
/// not; no abbreviation is expanded.
fn exists(backend: &dyn Backend, refs: &[String]) -> Result<u8, Fatal> {
    let [name] = refs else {
        return Err(Fatal::new("--exists requires exactly one reference"));
    };
    let Ok(name) = RefName::new(name) else {
        eprintln!("error: reference does not exist");
        return Ok(2);
    };
    match backend.read(&name) {
        Ok(Some(_)) => Ok(0),
        Ok(None) => {
            eprintln!("error: reference does not exist");
            Ok(2)
        }
        // A directory where the ref would be: no such ref.
        Err(ReadError::Fs(e)) if e.kind() == std::io::ErrorKind::IsADirectory => {
            eprintln!("error: reference does not exist");
            Ok(2)
        }
        Err(e) => {
            eprintln!("error: failed to look up reference: {e}");
            Ok(1)
        }
    }
}

fn resolve(backend: &dyn Backend, name: &RefName) -> Option<ObjectId> {
    backend.resolve(name).ok().flatten().and_then(|r| r.id)
}

/// git's show-ref pattern rule: the pattern is the whole name, or its end
/// starting right after a `/`.
fn tail_matches(name: &[u8], pattern: &[u8]) -> bool {
    name == pattern
        || (name.len() > pattern.len()
            && name.ends_with(pattern)
            && name[name.len() - pattern.len() - 1] == b'/')
}
