//! `refstore receive-pack <dir>`: serve a push over standard input and
//! output, as git's clients run it over ssh and file://
//! (`git push --receive-pack='refstore receive-pack' file://...`).

use crate::context::{Fatal, Globals};
use refstore_protocol::receive_pack::{receive_pack, Options};
use refstore_protocol::repository::OpenError;
use refstore_protocol::{ProtocolVersion, Repository};
use std::fs::File;
use std::os::fd::AsFd;
use std::path::PathBuf;

/// Arguments of `receive-pack`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Serve one request and exit, as over HTTP: no advertisement first.
    #[arg(long)]
    stateless_rpc: bool,
    /// Only advertise the refs.
    #[arg(long, alias = "http-backend-info-refs")]
    advertise_refs: bool,
    /// The repository to push into.
    dir: PathBuf,
}

/// Runs `receive-pack`.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    let dir = globals.cwd().join(&args.dir);
    let overrides = globals.config_overrides();
    let repo = refstore_repo::Repository::open(globals.vfs().clone(), &dir, overrides)
        .and_then(Repository::serve)
        .map_err(|e| match e {
            OpenError::NotARepository(_) => Fatal::new(format!(
                "'{}' does not appear to be a git repository",
                args.dir.display()
            )),
            other => Fatal::new(other),
        })?;
    let options = Options {
        stateless_rpc: args.stateless_rpc,
        advertise_refs: args.advertise_refs,
        version: ProtocolVersion::from_git_protocol(std::env::var("GIT_PROTOCOL").ok().as_deref()),
    };
    // The standard streams' own buffering would split the protocol's
    // large writes at line ends; their descriptors are used directly.
    let duplicate = |fd: std::os::fd::BorrowedFd<'_>| {
        fd.try_clone_to_owned().map(File::from).map_err(Fatal::new)
    };
    let mut stdin = duplicate(std::io::stdin().as_fd())?;
    let mut stdout = duplicate(std::io::stdout().as_fd())?;
    receive_pack(&repo, &options, &mut stdin, &mut stdout).map_err(Fatal::new)?;
    Ok(0)
}
