//! Opening the object database of a repository for the commands that look
//! at objects (types, tag peeling).

use crate::context::Fatal;
use refstore_odb::Odb;
use refstore_repo::Repository;

/// The repository's object database (loose objects, packs, alternates).
pub fn open(repo: &Repository) -> Result<Odb, Fatal> {
    repo.objects().map_err(Fatal::new)
}
