//! Which repositories a server may serve, when something other than its
//! root's contents decides (a cluster's records), and how repositories are
//! created, deleted, renamed and listed there: what the transports ask
//! before they open a repository, and what the admin endpoint
//! ([`crate::http`]'s `/_refstore/admin/repositories`) drives.

/// A repository as the catalog lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name: its path below the served root.
    pub name: String,
    /// `sha1` or `sha256`.
    pub object_format: String,
    /// `files` or `reftable`.
    pub ref_format: String,
    /// What HEAD points at (`refs/heads/main`), empty if detached.
    pub head: String,
}

/// What to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEntry {
    /// The name.
    pub name: String,
    /// `sha1` or `sha256` (`None`: sha1).
    pub object_format: Option<String>,
    /// `files` or `reftable` (`None`: files).
    pub ref_format: Option<String>,
    /// The branch HEAD points at (`None`: `master`, git's default).
    pub initial_branch: Option<String>,
}

/// Why an operation failed, as the admin endpoint answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// 400: a bad name or argument.
    Invalid,
    /// 404: no such repository.
    NotFound,
    /// 409: the name is taken, or the repository changed meanwhile.
    Conflict,
    /// 503: the store behind the catalog cannot be reached.
    Unavailable,
}

impl Failure {
    /// The HTTP status.
    pub fn status(self) -> u16 {
        match self {
            Failure::Invalid => 400,
            Failure::NotFound => 404,
            Failure::Conflict => 409,
            Failure::Unavailable => 503,
        }
    }
}

/// A failed operation: its kind and a message for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CatalogError {
    /// What kind of failure.
    pub failure: Failure,
    /// What happened.
    pub message: String,
}

/// The repositories a server may serve.
pub trait Catalog: Send + Sync + std::fmt::Debug {
    /// Whether the repository `name` (as [`crate::confine::Served::name`]
    /// names it) may be served now; `Err` holds the message for the
    /// client. Runs on a blocking thread before the repository is opened.
    fn admit(&self, name: &str) -> Result<(), String>;
    /// Makes the repository a client's `request` (a path below the root)
    /// names ready on this server if the catalog holds it but the server's
    /// root does not yet (it was created a moment ago); true if it did.
    fn materialize(&self, request: &str) -> bool;
    /// The repositories held, by name.
    fn list(&self) -> Result<Vec<Entry>, CatalogError>;
    /// Creates a repository.
    fn create(&self, new: &NewEntry) -> Result<Entry, CatalogError>;
    /// Deletes a repository.
    fn delete(&self, name: &str) -> Result<(), CatalogError>;
    /// Renames a repository; its entry under the new name.
    fn rename(&self, from: &str, to: &str) -> Result<Entry, CatalogError>;
}
