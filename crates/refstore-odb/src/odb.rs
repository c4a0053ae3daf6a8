//! Reading objects: loose objects, packs and alternates, through gix-odb.
//!
//! [`Odb`] answers the questions ref storage asks of objects: does it exist,
//! what kind is it, and what does an annotated tag peel to (the `^{}` values
//! of `packed-refs`, reftable and the protocol's advertisement). Objects
//! written after the database was opened are found: gix-odb re-reads the
//! object directory when an id is not found in what it has loaded.

use crate::{ObjectKind, OdbError};
use gix_object::{Exists, Find, FindHeader};
use refstore_hash::{ObjectFormat, ObjectId};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The object database of one repository (its `objects` directory, with
/// the alternates it lists).
///
/// A handle is cheap to clone; each clone has its own caches and may be
/// moved to another thread.
#[derive(Clone)]
pub struct Odb {
    handle: gix_odb::HandleArc,
    format: ObjectFormat,
    objects_dir: PathBuf,
}

impl std::fmt::Debug for Odb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Odb")
            .field("objects_dir", &self.objects_dir)
            .field("format", &self.format)
            .finish()
    }
}

/// Opens gix's store on the object database at `objects_dir` holding
/// objects of `format`: the one place refstore opens one. Opening lists the
/// packs of the database and its alternates once (to size gix's table of
/// indexes); their contents are read on first use.
///
/// The table cannot grow afterwards, and a store outlives many pushes (a
/// housekeeping run, a long fetch, a server's shared handle): a lookup
/// that has to list the packs again fails ("too few index slots") once
/// more packs arrived than the table has room for. So it is sized with
/// ample room ([`INDEX_SLOTS`]).
pub fn open_store(objects_dir: &Path, format: ObjectFormat) -> Result<gix_odb::Store, OdbError> {
    open_store_with(objects_dir, format, INDEX_SLOTS)
}

/// A store opened to list the packs once and be dropped
/// ([`crate::pack_list`]): room for the packs there are is enough, and the fewer
/// slots, the cheaper the drop.
pub(crate) fn open_store_to_list(
    objects_dir: &Path,
    format: ObjectFormat,
) -> Result<gix_odb::Store, OdbError> {
    open_store_with(objects_dir, format, gix_odb::store::init::Slots::default())
}

fn open_store_with(
    objects_dir: &Path,
    format: ObjectFormat,
    slots: gix_odb::store::init::Slots,
) -> Result<gix_odb::Store, OdbError> {
    let open_error = |source| OdbError::Open {
        path: objects_dir.to_owned(),
        source,
    };
    if !objects_dir.is_dir() {
        return Err(open_error(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "not a directory",
        )));
    }
    gix_odb::Store::at_opts(
        objects_dir.to_owned(),
        format.gix_kind(),
        &mut std::iter::empty(),
        gix_odb::store::init::Options {
            slots,
            ..Default::default()
        },
    )
    .map_err(open_error)
}

/// Room for twice the packs (with their alternates') a store finds when
/// it opens, and at least for 512: the packs minutes of pushes leave
/// between two housekeeping runs. Not more: every request opens a store
/// and dropping one costs in proportion to its slots.
const INDEX_SLOTS: gix_odb::store::init::Slots = gix_odb::store::init::Slots::AsNeededByDiskState {
    multiplier: 2.0,
    minimum: 512,
};

impl Odb {
    /// Opens the object database at `objects_dir` (usually `<git-dir>/objects`)
    /// holding objects of `format`. Packs and alternates are loaded lazily,
    /// on first use.
    pub fn open(objects_dir: &Path, format: ObjectFormat) -> Result<Odb, OdbError> {
        let store = open_store(objects_dir, format)?;
        Ok(Odb::on_store(Arc::new(store), objects_dir, format))
    }

    /// A handle on a store already open (see [`open_store`]): handles on
    /// one store share its loaded indexes and mapped packs.
    pub fn on_store(store: Arc<gix_odb::Store>, objects_dir: &Path, format: ObjectFormat) -> Odb {
        Odb {
            handle: store.to_cache_arc(),
            format,
            objects_dir: objects_dir.to_owned(),
        }
    }

    /// The store this handle reads through, for another handle with other
    /// settings (a fetch's walk keeps packs mapped and caches delta bases).
    pub fn store(&self) -> Arc<gix_odb::Store> {
        self.handle.store()
    }

    /// The object format of this database.
    pub fn format(&self) -> ObjectFormat {
        self.format
    }

    /// The `objects` directory this database was opened at.
    pub fn objects_dir(&self) -> &Path {
        &self.objects_dir
    }

    /// True if the object is in the database (loose, packed, or in an
    /// alternate). An id of the other format is never contained.
    pub fn contains(&self, id: &ObjectId) -> bool {
        id.format() == self.format && self.handle.exists(id.as_gix())
    }

    /// The object's kind, or `None` if it is missing. Reads only the
    /// object's header.
    pub fn kind(&self, id: &ObjectId) -> Result<Option<ObjectKind>, OdbError> {
        self.check_format(id)?;
        let header = self
            .handle
            .try_header(id.as_gix())
            .map_err(|source| OdbError::Read { id: *id, source })?;
        Ok(header.map(|h| ObjectKind::from_gix(h.kind)))
    }

    /// The object's kind and size, or `None` if it is missing. Reads only
    /// the object's header: how a large object is judged without being
    /// inflated.
    pub fn header(&self, id: &ObjectId) -> Result<Option<(ObjectKind, u64)>, OdbError> {
        self.check_format(id)?;
        let header = self
            .handle
            .try_header(id.as_gix())
            .map_err(|source| OdbError::Read { id: *id, source })?;
        Ok(header.map(|h| (ObjectKind::from_gix(h.kind), h.size)))
    }

    /// The object's kind and its content (without the `<type> <size>\0`
    /// header), or `None` if it is missing.
    pub fn read(&self, id: &ObjectId) -> Result<Option<(ObjectKind, Vec<u8>)>, OdbError> {
        self.check_format(id)?;
        let mut buf = Vec::new();
        let found = self
            .handle
            .try_find(id.as_gix(), &mut buf)
            .map_err(|source| OdbError::Read { id: *id, source })?;
        let Some(data) = found else {
            return Ok(None);
        };
        let kind = ObjectKind::from_gix(data.kind);
        let content = data.data.to_vec();
        Ok(Some((kind, content)))
    }

    /// The object an annotated tag points at directly (one level), or `None`
    /// if `id` is missing or not a tag.
    pub fn tagged(&self, id: &ObjectId) -> Result<Option<ObjectId>, OdbError> {
        match self.read(id)? {
            Some((ObjectKind::Tag, data)) => self.parse_tag_target(id, &data).map(Some),
            _ => Ok(None),
        }
    }

    /// Git's peeled value: for an annotated tag, the first object reached by
    /// following tag targets that is not itself a tag. `None` if `id` is
    /// missing or not a tag.
    ///
    /// Fails with [`OdbError::MissingTagTarget`] if a tag on the way points at
    /// a missing object; git then records no peeled value.
    ///
    /// A tag peeled before in this process (in any repository) is not read
    /// again: the answer is remembered ([`crate::peel_memo`]), and only
    /// the presence of the tag and its target here is looked up.
    pub fn peel(&self, id: &ObjectId) -> Result<Option<ObjectId>, OdbError> {
        if let Some(target) = crate::peel_memo::recall(id) {
            if self.contains(id) && self.contains(&target) {
                return Ok(Some(target));
            }
        }
        let Some(mut target) = self.tagged(id)? else {
            return Ok(None);
        };
        let mut tag = *id;
        // Tags form no cycles (an id is a hash of the content naming its
        // target), so this ends at a non-tag or a missing object. Only a
        // tag is read whole; a target's header says whether it is one.
        loop {
            match self.kind(&target)? {
                None => return Err(OdbError::MissingTagTarget { tag, target }),
                Some(ObjectKind::Tag) => {
                    let Some((_, data)) = self.read(&target)? else {
                        return Err(OdbError::MissingTagTarget { tag, target });
                    };
                    tag = target;
                    target = self.parse_tag_target(&tag, &data)?;
                }
                Some(_) => {
                    if tag == *id {
                        crate::peel_memo::remember(*id, target);
                    }
                    return Ok(Some(target));
                }
            }
        }
    }

    /// What the annotated tag `id` peels to, if this process peeled it
    /// before (in any repository) and remembers it. Says nothing about
    /// this database: a caller that knows the tag is here must still find
    /// the target here before using the answer as [`Odb::peel`] does.
    pub fn remembered_peel(&self, id: &ObjectId) -> Option<ObjectId> {
        crate::peel_memo::recall(id)
    }

    /// gix's handle, for gix-pack's lookups of thin-pack bases.
    pub(crate) fn gix_handle(&self) -> &gix_odb::HandleArc {
        &self.handle
    }

    fn parse_tag_target(&self, id: &ObjectId, data: &[u8]) -> Result<ObjectId, OdbError> {
        let target = gix_object::TagRefIter::from_bytes(data, self.format.gix_kind())
            .target_id()
            .map_err(|source| OdbError::CorruptTag { id: *id, source })?;
        Ok(ObjectId::from_gix(&target))
    }

    /// An error unless `id` is of this database's format.
    fn check_format(&self, id: &ObjectId) -> Result<(), OdbError> {
        if id.format() != self.format {
            return Err(OdbError::wrong_format(*id, self.format));
        }
        Ok(())
    }
}
