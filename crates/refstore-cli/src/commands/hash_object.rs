//! `refstore hash-object`: compute object ids of files or standard input,
//! and with `-w` store the objects, durably with one flush point for all of
//! them.
//!
//! Content is hashed as it is: no clean filters or end-of-line conversion
//! apply (git's `--no-filters`, which is accepted). Commits, trees and tags
//! are checked for well-formedness unless `--literally` is given.

use crate::context::{io_reason, Fatal, Globals};
use refstore_fs::config::Component;
use refstore_fs::discover;
use refstore_odb::{check_format, object_id, LooseWriter, ObjectKind};
use refstore_refs::{ObjectFormat, ObjectId};
use refstore_repo::Repository;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

/// Arguments of `hash-object`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The object's type: blob (the default), commit, tree or tag; with
    /// --literally any name.
    #[arg(short = 't', value_name = "type", default_value = "blob")]
    object_type: String,
    /// Write the objects into the repository's object database.
    #[arg(short = 'w')]
    write: bool,
    /// Read an object from standard input (hashed before any files).
    #[arg(long)]
    stdin: bool,
    /// Read file names from standard input, one per line.
    #[arg(long)]
    stdin_paths: bool,
    /// Hash any content under any type name, without checking it.
    #[arg(long)]
    literally: bool,
    /// Hash files as they are (refstore never applies filters).
    #[arg(long)]
    no_filters: bool,
    /// Files to hash.
    files: Vec<PathBuf>,
}

/// Runs `hash-object`: prints one id per object.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    if args.stdin_paths && args.stdin {
        return usage("Can't use --stdin-paths with --stdin");
    }
    if args.stdin_paths && !args.files.is_empty() {
        return usage("Can't specify files with --stdin-paths");
    }
    let kind = ObjectKind::from_name(args.object_type.as_bytes());
    if kind.is_none() && !args.literally {
        return Err(Fatal::new(format!(
            "invalid object type \"{}\"",
            args.object_type
        )));
    }
    // With -w, objects are stored; otherwise only hashed.
    let (mut writer, format) = if args.write {
        let writer = loose_writer(&globals.open_repo()?, globals);
        let format = writer.format();
        (Some(writer), format)
    } else {
        (None, format_for_hashing(globals)?)
    };

    // Ids are printed once their objects are stored; on an error, what was
    // hashed before it is still stored and printed, as git does.
    let mut ids = Vec::new();
    let result = hash_all(&args, globals, kind, format, &mut writer, &mut ids);
    if let Some(writer) = writer {
        writer.commit().map_err(Fatal::new)?;
    }
    let mut out = std::io::stdout().lock();
    for id in &ids {
        let _ = writeln!(out, "{id}");
    }
    let _ = out.flush();
    result.map(|()| 0)
}

fn hash_all(
    args: &Args,
    globals: &Globals,
    kind: Option<ObjectKind>,
    format: ObjectFormat,
    writer: &mut Option<LooseWriter>,
    ids: &mut Vec<ObjectId>,
) -> Result<(), Fatal> {
    let mut hash = |data: Vec<u8>| -> Result<(), Fatal> {
        if let (Some(kind), false) = (kind, args.literally) {
            check_format(kind, &data, format).map_err(Fatal::new)?;
        }
        let type_name = args.object_type.as_bytes();
        let id = match writer {
            Some(writer) => writer.write_literally(type_name, &data),
            None => object_id(format, type_name, &data),
        };
        ids.push(id.map_err(Fatal::new)?);
        Ok(())
    };
    if args.stdin {
        let mut data = Vec::new();
        std::io::stdin()
            .lock()
            .read_to_end(&mut data)
            .map_err(|e| Fatal::new(format!("unable to read from stdin: {}", io_reason(&e))))?;
        hash(data)?;
    }
    for file in &args.files {
        hash(read_file(globals, file)?)?;
    }
    if args.stdin_paths {
        for line in std::io::stdin().lock().split(b'\n') {
            let line = line
                .map_err(|e| Fatal::new(format!("unable to read from stdin: {}", io_reason(&e))))?;
            let name = unquote_c_style(&line).ok_or_else(|| {
                Fatal::new(format!(
                    "line is badly quoted: {}",
                    String::from_utf8_lossy(&line)
                ))
            })?;
            hash(read_file(globals, Path::new(&name))?)?;
        }
    }
    Ok(())
}

fn read_file(globals: &Globals, path: &Path) -> Result<Vec<u8>, Fatal> {
    globals.vfs().read(path).map_err(|e| {
        Fatal::new(format!(
            "could not open '{}' for reading: {}",
            path.display(),
            io_reason(&e.source)
        ))
    })
}

/// The object format for hashing without writing: the repository's if
/// there is one, SHA-1 outside any repository (as git does).
fn format_for_hashing(globals: &Globals) -> Result<ObjectFormat, Fatal> {
    let mut options = discover::Options::from_env();
    if let Some(dir) = globals.explicit_git_dir() {
        options.git_dir = Some(dir);
    }
    if discover::discover(globals.vfs().as_ref(), globals.cwd(), &options).is_err() {
        return Ok(ObjectFormat::Sha1);
    }
    Ok(globals.open_repo()?.object_format())
}

/// A writer of loose objects into the repository, flushing as `core.fsync`
/// and `core.fsyncMethod` say for loose objects.
pub(super) fn loose_writer(repo: &Repository, globals: &Globals) -> LooseWriter {
    LooseWriter::new(
        globals.vfs().clone(),
        repo.objects_dir().to_owned(),
        repo.object_format(),
        repo.settings.fsync.method_for(Component::LooseObject),
    )
    .with_batch_mechanism(repo.settings.fsync.batch_mechanism())
}

/// A path as git quotes unusual names: in double quotes with C escapes.
/// Unquoted lines are taken as they are.
fn unquote_c_style(line: &[u8]) -> Option<std::ffi::OsString> {
    use std::os::unix::ffi::OsStringExt;
    let Some(quoted) = line.strip_prefix(b"\"") else {
        return Some(std::ffi::OsString::from_vec(line.to_vec()));
    };
    let mut out = Vec::new();
    let mut bytes = quoted.iter().copied();
    while let Some(b) = bytes.next() {
        match b {
            b'"' => {
                return bytes
                    .next()
                    .is_none()
                    .then(|| std::ffi::OsString::from_vec(out))
            }
            b'\\' => {
                let escaped = bytes.next()?;
                out.push(match escaped {
                    b'a' => 7,
                    b'b' => 8,
                    b'f' => 12,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'v' => 11,
                    b'\\' | b'"' => escaped,
                    b'0'..=b'3' => {
                        let digits = [escaped, bytes.next()?, bytes.next()?];
                        let mut value = 0u8;
                        for d in digits {
                            if !(b'0'..=b'7').contains(&d) {
                                return None;
                            }
                            value = value * 8 + (d - b'0');
                        }
                        value
                    }
                    _ => return None,
                });
            }
            _ => out.push(b),
        }
    }
    None
}

fn usage(error: &str) -> Result<u8, Fatal> {
    use clap::CommandFactory;
    #[derive(clap::Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: Args,
    }
    eprintln!("error: {error}");
    eprintln!("{}", Wrapper::command().name("hash-object").render_usage());
    Ok(129)
}
