//! `refstore check-ref-format`: git's reference-name rules on the command line.

use crate::context::Fatal;
use refstore_refs::name::{check, check_ref_format, CheckOptions};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;

/// Arguments of `check-ref-format`.
#[derive(Debug, clap::Args)]
#[command(
    override_usage = "refstore check-ref-format [--normalize] [<options>] <refname>\n       refstore check-ref-format --branch <branchname-shorthand>"
)]
pub struct Args {
    /// Print the name with leading slashes removed and runs of slashes collapsed.
    #[arg(long, visible_alias = "print")]
    normalize: bool,
    /// Accept names with a single component.
    #[arg(long, overrides_with = "no_allow_onelevel")]
    allow_onelevel: bool,
    /// Require at least two components (the default).
    #[arg(long)]
    no_allow_onelevel: bool,
    /// Accept one `*` (one side of a refspec).
    #[arg(long)]
    refspec_pattern: bool,
    /// Check a branch name (`<name>` as `refs/heads/<name>`) and print it.
    #[arg(long)]
    branch: bool,
    /// The name to check.
    #[arg(allow_hyphen_values = true)]
    name: OsString,
}

/// Exit code 0 when the name is valid, 1 when it is not (nothing printed),
/// as git does; `--branch` reports an invalid name as a fatal error.
pub fn run(args: Args) -> Result<u8, Fatal> {
    let name = args.name.as_bytes();
    if args.branch {
        let mut full = b"refs/heads/".to_vec();
        full.extend_from_slice(name);
        if name.starts_with(b"-")
            || name == b"HEAD"
            || check(&full, CheckOptions::default()).is_err()
        {
            return Err(Fatal::new(format!(
                "'{}' is not a valid branch name",
                String::from_utf8_lossy(name)
            )));
        }
        print_line(name);
        return Ok(0);
    }
    if name.starts_with(b"-") {
        eprintln!("error: unknown option '{}'", String::from_utf8_lossy(name));
        return Ok(129);
    }
    let options = CheckOptions {
        allow_onelevel: args.allow_onelevel && !args.no_allow_onelevel,
        refspec_pattern: args.refspec_pattern,
    };
    match check_ref_format(name, options, args.normalize) {
        Ok(normalized) => {
            if args.normalize {
                print_line(&normalized);
            }
            Ok(0)
        }
        Err(_) => Ok(1),
    }
}

fn print_line(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes).and_then(|()| out.write_all(b"\n"));
}
