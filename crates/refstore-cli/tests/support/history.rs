//! Generated histories ([`refstore_testsupport::fetch_history`]) served by
//! the `refstore` executable's upload-pack.

use refstore_testsupport::fetch_history;
pub use refstore_testsupport::fetch_history::{config, op, Op};

/// A [`fetch_history::History`] whose source the `refstore` executable
/// serves.
pub struct History(fetch_history::History);

impl History {
    /// A source with one commit on `main`.
    pub fn new() -> History {
        History(fetch_history::History::new(&super::shallow::upload_pack()))
    }
}

impl std::ops::Deref for History {
    type Target = fetch_history::History;
    fn deref(&self) -> &fetch_history::History {
        &self.0
    }
}

impl std::ops::DerefMut for History {
    fn deref_mut(&mut self) -> &mut fetch_history::History {
        &mut self.0
    }
}
