//! A repository opened for serving: the shared handle
//! ([`refstore_repo::Repository`]) with its ref store and object database
//! opened up front, and the steps a deployment adds around a push's
//! objects and a fetch's wants.
//!
//! - [`ObjectsStored`] stands between a push's objects and its refs: once
//!   receive-pack has moved the pushed packs into the repository durably,
//!   and before it writes a single ref, it may require more of them (a
//!   cluster: that other nodes hold the packs too). Its refusal refuses
//!   every ref of the push with its reason; the objects stay,
//!   unreferenced, as after any refusal that follows their migration.
//! - [`ObjectsWanted`] comes before a fetch is answered: when the client
//!   wants objects the repository lacks, it may bring them in first (a
//!   cluster node fetching, from its peers, the packs it missed while it
//!   was down). upload-pack then judges the wants as always: what is
//!   still missing is refused as git refuses it. receive-pack gives it
//!   the old tips a push builds on, which the client takes the server to
//!   hold.

use refstore_odb::Odb;
use refstore_refs::backend::Backend;
use refstore_refs::{ObjectFormat, ObjectId};
use std::sync::Arc;

pub use refstore_repo::OpenError;

/// An opened repository; its configuration, location and filesystem are
/// those of the handle it derefs to.
pub struct Repository {
    /// The repository as opened.
    pub opened: refstore_repo::Repository,
    /// Its refs (a cluster's store replaces the repository's own).
    pub refs: Arc<dyn Backend>,
    /// Its objects: a handle on the opened repository's shared store.
    pub objects: Odb,
    /// What must hold a push's packs before its refs change (`None`:
    /// this repository alone).
    pub objects_stored: Option<Arc<dyn ObjectsStored>>,
    /// What brings in objects a fetch wants and the repository lacks
    /// (`None`: they are refused).
    pub objects_wanted: Option<Arc<dyn ObjectsWanted>>,
}

/// Decides whether the packs a push added are stored well enough for its
/// refs to change.
pub trait ObjectsStored: Send + Sync {
    /// Called with the repository and the names (`pack-<hex>`) of the
    /// packs the push added, once they are in the repository durably and
    /// before the ref transaction. `Err` holds the reason every ref is
    /// refused with, as the user sees it.
    fn objects_stored(&self, repo: &Repository, packs: &[String]) -> Result<(), String>;
}

/// Brings in objects a fetch or a push needs and the repository lacks: on
/// a node of a cluster, a push's objects may have reached the other nodes
/// only.
pub trait ObjectsWanted: Send + Sync {
    /// Called with a fetch's wants before upload-pack reads any object
    /// for it, and with a push's old tips before receive-pack reads its
    /// pack: makes the repository hold them and everything they reach,
    /// as far as it can. True if it stored anything: objects stored into
    /// the repository's objects directory by then are served.
    fn objects_wanted(&self, repo: &Repository, wants: &[ObjectId]) -> bool;
}

impl std::fmt::Debug for Repository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repository")
            .field("git_dir", &self.opened.location.git_dir)
            .finish_non_exhaustive()
    }
}

impl std::ops::Deref for Repository {
    type Target = refstore_repo::Repository;

    fn deref(&self) -> &refstore_repo::Repository {
        &self.opened
    }
}

impl Repository {
    /// An opened repository made ready to serve: a request needs its refs
    /// and objects, so a repository lacking either is refused up front.
    pub fn serve(opened: refstore_repo::Repository) -> Result<Repository, OpenError> {
        let refs = opened.refs()?;
        let objects = opened.objects()?;
        Ok(Repository {
            opened,
            refs,
            objects,
            objects_stored: None,
            objects_wanted: None,
        })
    }

    /// The object format of its ids.
    pub fn object_format(&self) -> ObjectFormat {
        self.refs.object_format()
    }
}
