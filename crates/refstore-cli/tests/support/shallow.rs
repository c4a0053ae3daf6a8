//! Differential fetching ([`refstore_testsupport::fetch_pair`]) with the
//! `refstore` executable's upload-pack as refstore's server.

use refstore_testsupport::fetch_pair;
pub use refstore_testsupport::fetch_pair::{time_of, State};

/// The command git runs as refstore's upload-pack.
pub fn upload_pack() -> String {
    format!("{} upload-pack", env!("CARGO_BIN_EXE_refstore"))
}

/// A [`fetch_pair::Fixture`] served by the `refstore` executable.
pub struct Fixture(fetch_pair::Fixture);

impl Fixture {
    /// A source repository with no commit yet.
    pub fn empty() -> Fixture {
        Fixture(fetch_pair::Fixture::empty(&upload_pack()))
    }
}

impl std::ops::Deref for Fixture {
    type Target = fetch_pair::Fixture;
    fn deref(&self) -> &fetch_pair::Fixture {
        &self.0
    }
}
