//! Opening the object database of a repository for the commands that look
//! at objects (types, tag peeling).

use crate::context::{Fatal, Repo};
use refstore_odb::Odb;
use refstore_refs::ObjectFormat;

/// The repository's object database (loose objects, packs, alternates).
pub fn open(repo: &Repo) -> Result<Odb, Fatal> {
    let format = ObjectFormat::from_name(repo.settings.object_format).expect("validated by config");
    Odb::open(&repo.location.common_dir.join("objects"), format).map_err(Fatal::new)
}
