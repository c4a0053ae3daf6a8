//! One module per subcommand.

mod check_ref_format;
#[cfg(feature = "cluster")]
mod cluster;
mod cluster_copy;
#[cfg(feature = "cluster")]
mod cluster_nodes;
mod for_each_ref;
mod hash_object;
mod index_pack;
mod init;
mod maintenance;
#[cfg(not(feature = "cluster"))]
mod no_cluster;
#[cfg(not(feature = "cluster"))]
use no_cluster as cluster;
mod objects;
mod pack_refs;
mod receive_pack;
mod refs;
mod rev_parse;
mod serve;
mod show_ref;
mod symbolic_ref;
mod unpack_objects;
mod update_ref;
mod upload_pack;

use crate::context::{Fatal, Globals};

/// The subcommands of `refstore`.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Check that a reference name is well formed (like `git check-ref-format`).
    CheckRefFormat(check_ref_format::Args),
    /// Prepare repositories for a cluster of `serve --cluster` nodes (import refs into etcd).
    Cluster(cluster::Args),
    /// List refs with a format, filtered and sorted (like `git for-each-ref`).
    ForEachRef(for_each_ref::Args),
    /// Compute object ids, and store the objects with -w (like `git hash-object`).
    HashObject(hash_object::Args),
    /// Store a pack from standard input with its index (like `git index-pack --stdin`).
    IndexPack(index_pack::Args),
    /// Create an empty repository, or reinitialize an existing one (like `git init`).
    Init(init::Args),
    /// Housekeeping: clean up after crashes, repack, write indexes (like `git maintenance`).
    Maintenance(maintenance::Args),
    /// Move loose refs into packed-refs (like `git pack-refs`).
    PackRefs(pack_refs::Args),
    /// Serve a push over standard input and output (like `git receive-pack`).
    ReceivePack(receive_pack::Args),
    /// Check the ref store as a whole (like `git refs`).
    Refs(refs::Args),
    /// Show where the repository is and what format it has (like `git rev-parse`).
    RevParse(rev_parse::Args),
    /// Serve the repositories below a directory over smart HTTP (clone, fetch, push).
    // Boxed: by far the largest arguments, parsed once.
    Serve(Box<serve::Args>),
    /// List references, or check that they exist (like `git show-ref`).
    ShowRef(show_ref::Args),
    /// Read, set or delete a symbolic ref (like `git symbolic-ref`).
    SymbolicRef(symbolic_ref::Args),
    /// Store the objects of a pack from standard input as loose objects (like `git unpack-objects`).
    UnpackObjects(unpack_objects::Args),
    /// Update, create, delete or verify refs, alone or in a transaction (like `git update-ref`).
    UpdateRef(update_ref::Args),
    /// Serve a fetch over standard input and output (like `git upload-pack`).
    UploadPack(upload_pack::Args),
}

/// The subcommands for the command line, each with the one-line
/// description of its [`Command`] variant. Their arguments are added only to
/// the subcommand being run (`clap::Command::defer`): building every
/// subcommand's arguments costs a one-ref `update-ref` process a quarter of
/// the instructions it runs.
pub fn subcommands() -> Vec<clap::Command> {
    fn sub<A: clap::Args>(name: &'static str, about: &'static str) -> clap::Command {
        clap::Command::new(name).about(about).defer(add_args::<A>)
    }
    /// Adds `A`'s arguments; the description stays the subcommand's, not
    /// the one `A`'s own documentation would give it.
    fn add_args<A: clap::Args>(command: clap::Command) -> clap::Command {
        let about = command.get_about().cloned();
        let command = A::augment_args(command).long_about(None);
        match about {
            Some(about) => command.about(about),
            None => command,
        }
    }
    vec![
        sub::<check_ref_format::Args>(
            "check-ref-format",
            "Check that a reference name is well formed (like `git check-ref-format`)",
        ),
        sub::<cluster::Args>(
            "cluster",
            "Prepare repositories for a cluster of `serve --cluster` nodes (import refs into etcd)",
        ),
        sub::<for_each_ref::Args>(
            "for-each-ref",
            "List refs with a format, filtered and sorted (like `git for-each-ref`)",
        ),
        sub::<hash_object::Args>(
            "hash-object",
            "Compute object ids, and store the objects with -w (like `git hash-object`)",
        ),
        sub::<index_pack::Args>(
            "index-pack",
            "Store a pack from standard input with its index (like `git index-pack --stdin`)",
        ),
        sub::<init::Args>(
            "init",
            "Create an empty repository, or reinitialize an existing one (like `git init`)",
        ),
        sub::<maintenance::Args>(
            "maintenance",
            "Housekeeping: clean up after crashes, repack, write indexes (like `git maintenance`)",
        ),
        sub::<pack_refs::Args>(
            "pack-refs",
            "Move loose refs into packed-refs (like `git pack-refs`)",
        ),
        sub::<receive_pack::Args>(
            "receive-pack",
            "Serve a push over standard input and output (like `git receive-pack`)",
        ),
        sub::<refs::Args>("refs", "Check the ref store as a whole (like `git refs`)"),
        sub::<rev_parse::Args>(
            "rev-parse",
            "Show where the repository is and what format it has (like `git rev-parse`)",
        ),
        sub::<serve::Args>(
            "serve",
            "Serve the repositories below a directory over smart HTTP (clone, fetch, push)",
        ),
        sub::<show_ref::Args>(
            "show-ref",
            "List references, or check that they exist (like `git show-ref`)",
        ),
        sub::<symbolic_ref::Args>(
            "symbolic-ref",
            "Read, set or delete a symbolic ref (like `git symbolic-ref`)",
        ),
        sub::<unpack_objects::Args>(
            "unpack-objects",
            "Store the objects of a pack from standard input as loose objects (like `git unpack-objects`)",
        ),
        sub::<update_ref::Args>(
            "update-ref",
            "Update, create, delete or verify refs, alone or in a transaction (like `git update-ref`)",
        ),
        sub::<upload_pack::Args>(
            "upload-pack",
            "Serve a fetch over standard input and output (like `git upload-pack`)",
        ),
    ]
}

/// Runs one subcommand and returns its exit code.
pub fn run(command: Command, globals: &Globals) -> Result<u8, Fatal> {
    match command {
        Command::Cluster(args) => cluster::run(args, globals),
        Command::Serve(args) => serve::run(*args, globals),
        Command::Maintenance(args) => maintenance::run(args, globals, maintenance::cluster_repo),
        other => run_local(other, globals),
    }
}

/// Runs one of the subcommands that need no server (all but `serve` and
/// `cluster`, which the `refstore` executable hands to `refstore-server`)
/// and returns its exit code.
pub fn run_local(command: Command, globals: &Globals) -> Result<u8, Fatal> {
    match command {
        Command::CheckRefFormat(args) => check_ref_format::run(args),
        Command::ForEachRef(args) => for_each_ref::run(args, globals),
        Command::HashObject(args) => hash_object::run(args, globals),
        Command::IndexPack(args) => index_pack::run(args, globals),
        Command::Init(args) => init::run(args, globals),
        Command::Maintenance(args) => {
            maintenance::run(args, globals, maintenance::cluster_in_server)
        }
        Command::PackRefs(args) => pack_refs::run(args, globals),
        Command::ReceivePack(args) => receive_pack::run(args, globals),
        Command::Refs(args) => refs::run(args, globals),
        Command::RevParse(args) => rev_parse::run(args, globals),
        Command::ShowRef(args) => show_ref::run(args, globals),
        Command::SymbolicRef(args) => symbolic_ref::run(args, globals),
        Command::UnpackObjects(args) => unpack_objects::run(args, globals),
        Command::UpdateRef(args) => update_ref::run(args, globals),
        Command::UploadPack(args) => upload_pack::run(args, globals),
        Command::Serve(_) | Command::Cluster(_) => Err(Fatal::new(
            "serve and cluster run in the server's executable, refstore-server",
        )),
    }
}
