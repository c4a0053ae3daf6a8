//! The refs a fetch offers: `HEAD` and every ref below `refs/`, symbolic
//! refs resolved to the object they end at, annotated tags with their
//! peeled values. One snapshot serves the advertisement and the checks of
//! the client's wants, so both see the same refs; an advertisement that is
//! all a request asks for streams the refs from the store instead
//! ([`Offering`]), keeping none of them.

use super::UploadPackError;
use refstore_odb::{ObjectKind, Odb, Packs};
use refstore_refs::files::Resolved;
use refstore_refs::value::{Peeled, RefView, TargetView};
use refstore_refs::{Backend, ObjectId, RefName};
use std::collections::HashMap;
use std::ops::ControlFlow;

/// One ref as a client sees it.
#[derive(Debug, Clone)]
pub(crate) struct OfferedRef {
    /// Its full name.
    pub name: RefName,
    /// The object it ends at (through symbolic refs).
    pub id: ObjectId,
    /// For an annotated tag, the first object that is not a tag.
    pub peeled: Option<ObjectId>,
    /// For a symbolic ref, the name it resolves to.
    pub symref_target: Option<RefName>,
}

impl OfferedRef {
    /// A borrowed view of this ref.
    pub fn view(&self) -> OfferedView<'_> {
        OfferedView {
            name: self.name.as_bytes(),
            id: self.id,
            peeled: self.peeled,
            symref_target: self.symref_target.as_ref(),
        }
    }
}

/// One ref as a client sees it, borrowed from the store while it is
/// visited.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OfferedView<'a> {
    /// Its full name.
    pub name: &'a [u8],
    /// The object it ends at (through symbolic refs).
    pub id: ObjectId,
    /// For an annotated tag, the first object that is not a tag.
    pub peeled: Option<ObjectId>,
    /// For a symbolic ref, the name it resolves to.
    pub symref_target: Option<&'a RefName>,
}

impl OfferedView<'_> {
    fn to_owned(self) -> OfferedRef {
        OfferedRef {
            name: RefName::from_trusted(self.name),
            id: self.id,
            peeled: self.peeled,
            symref_target: self.symref_target.cloned(),
        }
    }
}

/// What `HEAD` is.
#[derive(Debug, Clone)]
pub(crate) enum Head {
    /// `HEAD` names an existing ref or an object: it is offered.
    Present(OfferedRef),
    /// `HEAD` names a branch that does not exist yet (a new repository).
    Unborn(RefName),
    /// No usable `HEAD`.
    Missing,
}

/// The refs of a repository at one moment.
#[derive(Debug)]
pub(crate) struct RefSnapshot {
    /// `HEAD`.
    pub head: Head,
    /// The refs below `refs/`, sorted by name.
    pub refs: Vec<OfferedRef>,
}

impl RefSnapshot {
    /// Reads the refs of `backend`, peeling tags through `objects` (whose
    /// packs, when given, answer first; see [`Offering::new`]).
    pub fn read(
        backend: &dyn Backend,
        objects: &Odb,
        packs: Option<&Packs>,
    ) -> Result<RefSnapshot, UploadPackError> {
        Self::read_matching(backend, objects, packs, &[])
    }

    /// Like [`read`](RefSnapshot::read), keeping only refs whose names
    /// start with one of `prefixes` (all refs if there are none). Only the
    /// matching part of the store is listed: a client fetching one branch
    /// of a repository with a million refs costs a seek, not a scan.
    pub fn read_matching(
        backend: &dyn Backend,
        objects: &Odb,
        packs: Option<&Packs>,
        prefixes: &[&[u8]],
    ) -> Result<RefSnapshot, UploadPackError> {
        let mut offering = Offering::new(backend, objects, packs);
        let head = offering.head()?;
        let mut refs = Vec::new();
        offering.visit(prefixes, &mut |offered| {
            refs.push(offered.to_owned());
            Ok(())
        })?;
        Ok(RefSnapshot { head, refs })
    }

    /// `HEAD` (when present) followed by the refs: the order git advertises.
    pub fn offered(&self) -> impl Iterator<Item = &OfferedRef> {
        let head = match &self.head {
            Head::Present(head) => Some(head),
            Head::Unborn(_) | Head::Missing => None,
        };
        head.into_iter().chain(&self.refs)
    }
}

impl Head {
    /// The branch `HEAD` points at, existing or unborn.
    pub fn target(&self) -> Option<&RefName> {
        match self {
            Head::Present(head) => head.symref_target.as_ref(),
            Head::Unborn(target) => Some(target),
            Head::Missing => None,
        }
    }
}

/// The refs of a store as they are offered, one at a time: symbolic refs
/// resolved, tags peeled where the store does not say.
pub(crate) struct Offering<'a> {
    backend: &'a dyn Backend,
    peeler: Peeler<'a>,
}

impl<'a> Offering<'a> {
    /// Offers the refs of `backend`, peeling through `objects`. The kinds
    /// of packed objects are read from `packs` where given: the packs the
    /// connection opens anyway to send objects, so that the object database
    /// does not open (and check, page by page) each pack index a second
    /// time just to say that a branch names a commit.
    pub fn new(backend: &'a dyn Backend, objects: &'a Odb, packs: Option<&'a Packs>) -> Self {
        Offering {
            backend,
            peeler: Peeler::new(objects, packs),
        }
    }

    /// Reads `HEAD`.
    pub fn head(&mut self) -> Result<Head, UploadPackError> {
        read_head(self.backend, &mut self.peeler)
    }

    /// Shows `offer` every ref below `refs/` whose name starts with one of
    /// `prefixes` (all of them if there are none), sorted by name. The
    /// store's own knowledge of peeled values is used; only refs it knows
    /// nothing about are looked up in the object database.
    pub fn visit(
        &mut self,
        prefixes: &[&[u8]],
        offer: &mut dyn FnMut(OfferedView<'_>) -> Result<(), UploadPackError>,
    ) -> Result<(), UploadPackError> {
        let backend = self.backend;
        let peeler = &mut self.peeler;
        let mut failure = None;
        // The listing prefixes are sorted and none covers another, so the
        // refs of one all sort before those of the next.
        backend.visit_each(&listing_prefixes(prefixes), &mut |stored| match offer_one(
            backend, peeler, stored, offer,
        ) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failure = Some(e);
                ControlFlow::Break(())
            }
        })?;
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Offers one stored ref: a symbolic ref as the object it ends at (nothing
/// when it ends at a missing ref), with its peeled value.
fn offer_one(
    backend: &dyn Backend,
    peeler: &mut Peeler<'_>,
    stored: RefView<'_>,
    offer: &mut dyn FnMut(OfferedView<'_>) -> Result<(), UploadPackError>,
) -> Result<(), UploadPackError> {
    let resolved: Option<Resolved>;
    let (id, symref_target) = match stored.target {
        TargetView::Object(id) => (id, None),
        TargetView::Symbolic(_) => {
            resolved = backend.resolve(&RefName::from_trusted(stored.name))?;
            match &resolved {
                Some(Resolved { name, id: Some(id) }) => (*id, Some(name)),
                // A symbolic ref to a missing ref offers nothing.
                _ => return Ok(()),
            }
        }
    };
    let peeled = match (stored.peeled, symref_target) {
        (Peeled::Tag(peeled), None) => Some(peeled),
        (Peeled::NotATag, None) => None,
        _ => peeler.peel(&id)?,
    };
    offer(OfferedView {
        name: stored.name,
        id,
        peeled,
        symref_target,
    })
}

/// The prefixes to list the store by for refs matching any of `prefixes`:
/// each below `refs/`, none covered by another, so no ref is listed twice.
fn listing_prefixes<'p>(prefixes: &[&'p [u8]]) -> Vec<&'p [u8]> {
    const ALL: &[u8] = b"refs/";
    if prefixes.is_empty() {
        return vec![ALL];
    }
    let mut listed: Vec<&[u8]> = prefixes
        .iter()
        .filter_map(|&prefix| {
            if prefix.starts_with(ALL) {
                Some(prefix)
            } else if ALL.starts_with(prefix) {
                // "r", "refs": everything below refs/ matches.
                Some(ALL)
            } else {
                // "HEAD", "heads/": nothing below refs/ matches.
                None
            }
        })
        .collect();
    listed.sort();
    listed.dedup_by(|later, earlier| later.starts_with(earlier));
    listed
}

fn read_head(backend: &dyn Backend, peeler: &mut Peeler<'_>) -> Result<Head, UploadPackError> {
    let name = RefName::from_trusted(&b"HEAD"[..]);
    // One resolution tells all: a store whose every read is a round trip
    // (a cluster's) answers it from one reading.
    let Some(resolved) = backend.resolve(&name)? else {
        return Ok(Head::Missing);
    };
    let (id, symref_target) = match resolved.id {
        // `HEAD` itself holds the id: detached.
        Some(id) if resolved.name == name => (id, None),
        Some(id) => (id, Some(resolved.name)),
        None => return Ok(Head::Unborn(resolved.name)),
    };
    let peeled = peeler.peel(&id)?;
    Ok(Head::Present(OfferedRef {
        name,
        id,
        peeled,
        symref_target,
    }))
}

/// Peels ids, remembering each answer: many refs often share a few
/// objects, and a kind lookup costs an object read.
struct Peeler<'a> {
    objects: &'a Odb,
    packs: Option<&'a Packs>,
    known: HashMap<ObjectId, Option<ObjectId>>,
}

impl<'a> Peeler<'a> {
    fn new(objects: &'a Odb, packs: Option<&'a Packs>) -> Self {
        Peeler {
            objects,
            packs,
            known: HashMap::new(),
        }
    }

    /// The peeled value of `id` if it is an annotated tag. A missing
    /// object or a tag whose target is missing has none, as in git's
    /// advertisement.
    fn peel(&mut self, id: &ObjectId) -> Result<Option<ObjectId>, UploadPackError> {
        if let Some(known) = self.known.get(id) {
            return Ok(*known);
        }
        let read_error = |e| UploadPackError::objects("cannot read an object a ref names", e);
        let kind = match self.packed_kind(id).map_err(read_error)? {
            Some(kind) => Some(kind),
            None => self.objects.kind(id).map_err(read_error)?,
        };
        let peeled = match kind {
            Some(ObjectKind::Tag) => match self.objects.remembered_peel(id) {
                // The tag is here (its kind was read); its target must be.
                Some(target) if self.holds(&target) => Some(target),
                _ => self.objects.peel(id).ok().flatten(),
            },
            _ => None,
        };
        self.known.insert(*id, peeled);
        Ok(peeled)
    }

    /// Whether the repository holds `id`, asking the packs first.
    fn holds(&self, id: &ObjectId) -> bool {
        let packed = self.packs.is_some_and(|packs| {
            id.format() == self.objects.format() && packs.locate(id).is_some()
        });
        packed || self.objects.contains(id)
    }

    /// The kind of `id` as the packs store it, if they hold it with its
    /// delta base; otherwise the object database answers.
    fn packed_kind(&self, id: &ObjectId) -> Result<Option<ObjectKind>, refstore_odb::OdbError> {
        let Some(packs) = self.packs else {
            return Ok(None);
        };
        if id.format() != self.objects.format() {
            return Ok(None);
        }
        match packs.locate(id) {
            Some(at) => packs.kind(at),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::listing_prefixes;

    /// Requested prefixes, and the prefixes listed for them.
    type Case<'a> = (&'a [&'a [u8]], &'a [&'a [u8]]);

    #[test]
    fn listing_prefixes_cover_each_ref_once() {
        let cases: &[Case<'_>] = &[
            (&[], &[b"refs/"]),
            (&[b"HEAD"], &[]),
            (
                &[b"refs/heads/ma", b"refs/heads/", b"refs/tags/"],
                &[b"refs/heads/", b"refs/tags/"],
            ),
            (&[b"refs/tags/v1", b"refs/tags/v1.0"], &[b"refs/tags/v1"]),
            (&[b"ref", b"refs/heads/"], &[b"refs/"]),
        ];
        for (prefixes, expected) in cases {
            assert_eq!(listing_prefixes(prefixes), *expected, "{prefixes:?}");
        }
    }
}
