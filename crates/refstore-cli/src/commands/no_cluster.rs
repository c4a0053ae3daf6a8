//! `refstore cluster` and `serve --cluster` in a build without the
//! `cluster` feature: a clear answer saying how to get them, instead of
//! clap's "unrecognized subcommand". The feature is off by default because
//! the etcd client compiles protobufs when it is built, which needs
//! `protoc`; everything else builds with Rust alone.

use crate::context::{Fatal, Globals};
use std::ffi::OsString;

/// Arguments of `cluster`: whatever was given, since none is understood.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<OsString>,
}

/// The error every cluster command ends in.
pub fn missing() -> Fatal {
    Fatal::new(
        "this refstore was built without cluster support; build it with \
         `cargo install --features cluster --path crates/refstore-cli` \
         (the etcd client needs protoc: Debian's protobuf-compiler)",
    )
}

/// Runs `refstore cluster`: refuses, saying why.
pub fn run(_args: Args, _globals: &Globals) -> Result<u8, Fatal> {
    Err(missing())
}
