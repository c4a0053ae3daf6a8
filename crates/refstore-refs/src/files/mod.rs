//! The "files" ref backend: loose refs under `refs/` plus `packed-refs`,
//! byte-compatible with git.
//!
//! Root refs (`HEAD`, `FETCH_HEAD`, ...) live in the git directory; every
//! other ref in the common directory (shared by worktrees). A loose ref
//! shadows a packed ref of the same name.

pub mod loose;
pub mod pack;
pub mod packed;
mod packed_lock;
pub mod reflog;
pub mod transaction;
pub mod verify;

pub use crate::error::ReadError;
use crate::value::{Peeled, Ref, RefView, Target, TargetView};
use crate::{ObjectFormat, RefName};
use packed::{PackedError, PackedRefs, PackedSnapshot, PackedView};
use refstore_fs::flush::{BatchMechanism, FlushBatch};
use refstore_fs::{FileKind, Mapped, Vfs};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use crate::resolve::{Resolved, SYMREF_MAX_DEPTH};

/// The refs of a prefix, sorted, and the loose refs that could not be read
/// (git warns "ignoring broken ref" about those and goes on).
#[derive(Debug, Default)]
pub struct Listing {
    /// Valid refs, sorted by name.
    pub refs: Vec<Ref>,
    /// Loose refs whose files hold no valid value.
    pub broken: Vec<RefName>,
}

/// A files-format ref store.
#[derive(Debug, Clone)]
pub struct FilesBackend {
    vfs: Arc<dyn Vfs>,
    git_dir: PathBuf,
    common_dir: PathBuf,
    format: ObjectFormat,
    /// How the flush points of the `batch` method are carried out.
    mechanism: BatchMechanism,
}

impl FilesBackend {
    /// The store of the repository at `git_dir` (`common_dir` for shared refs).
    pub fn new(
        vfs: Arc<dyn Vfs>,
        git_dir: PathBuf,
        common_dir: PathBuf,
        format: ObjectFormat,
    ) -> Self {
        FilesBackend {
            vfs,
            git_dir,
            common_dir,
            format,
            mechanism: BatchMechanism::default(),
        }
    }

    /// Chooses how the flush points of the `batch` flush method are carried
    /// out (by default chosen per filesystem: one `syncfs` where it flushes,
    /// concurrent `fdatasync` calls elsewhere; see
    /// [`BatchMechanism::for_filesystem`]).
    pub fn with_batch_mechanism(mut self, mechanism: BatchMechanism) -> Self {
        self.mechanism = mechanism;
        self
    }

    /// A flush batch for this store's files.
    fn flush_batch(&self, method: refstore_fs::flush::FlushMethod) -> FlushBatch {
        FlushBatch::new(self.vfs.clone(), method, &self.common_dir).with_mechanism(self.mechanism)
    }

    /// The repository's object format.
    pub fn object_format(&self) -> ObjectFormat {
        self.format
    }

    /// The filesystem the store uses.
    pub fn vfs(&self) -> &Arc<dyn Vfs> {
        &self.vfs
    }

    /// The path of the loose file for `name`.
    pub fn loose_path(&self, name: &RefName) -> PathBuf {
        let base = if name.is_root_ref() {
            &self.git_dir
        } else {
            &self.common_dir
        };
        // Sized once: a transaction builds this path several times per ref.
        let mut path = PathBuf::with_capacity(base.as_os_str().len() + name.as_bytes().len() + 8);
        path.push(base);
        path.push(std::ffi::OsStr::from_bytes_compat(name.as_bytes()));
        path
    }

    /// The `packed-refs` file.
    pub fn packed_path(&self) -> PathBuf {
        self.common_dir.join("packed-refs")
    }

    /// The directory that holds every ref below `refs/`.
    pub fn common_dir(&self) -> &Path {
        &self.common_dir
    }

    /// Reads `packed-refs` (empty if there is none).
    pub fn packed(&self) -> Result<PackedRefs, ReadError> {
        let path = self.packed_path();
        match self.vfs.read(&path) {
            Ok(text) => PackedRefs::parse(text, self.format)
                .map_err(|error| ReadError::Packed { path, error }),
            Err(e) if e.is_not_found() => Ok(PackedRefs::empty()),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads the loose file of `name`: `None` if there is none (or a
    /// directory is in its place).
    pub fn read_loose(&self, name: &RefName) -> Result<Option<Target>, ReadError> {
        match self.vfs.read(&self.loose_path(name)) {
            Ok(content) => loose::parse(&content, self.format)
                .map(Some)
                .map_err(|error| ReadError::BrokenRef {
                    name: name.clone(),
                    error,
                }),
            Err(e)
                if e.is_not_found()
                    || e.raw_os_error() == Some(21)
                    || e.raw_os_error() == Some(20) =>
            {
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The stored value of `name` without following symbolic refs.
    pub fn read(&self, name: &RefName) -> Result<Option<Ref>, ReadError> {
        self.read_loose_or(name, || self.find_packed(&self.packed_text()?, name))
    }

    /// The bytes of `packed-refs` (empty if there is none).
    pub(crate) fn packed_text(&self) -> Result<Mapped, ReadError> {
        match self.vfs.read_mapped(&self.packed_path()) {
            Ok(text) => Ok(text),
            Err(e) if e.is_not_found() => Ok(Mapped::owned(Vec::new())),
            Err(e) => Err(e.into()),
        }
    }

    /// Looks `name` up in the `packed-refs` `text`: a binary search over
    /// the text of a sorted file, so that following `HEAD` in a store of a
    /// million refs does not parse them all; a full parse otherwise.
    fn find_packed(&self, text: &[u8], name: &RefName) -> Result<Option<Ref>, ReadError> {
        let corrupt = |error| ReadError::Packed {
            path: self.packed_path(),
            error,
        };
        match packed::Scan::new(text, self.format, name.as_bytes()) {
            Some(mut scan) => match scan.next().transpose().map_err(corrupt)? {
                Some(view) if view.name == name.as_bytes() => Ok(Some(Ref {
                    name: name.clone(),
                    target: Target::Object(view.id),
                    peeled: view.peeled.id(),
                })),
                _ => Ok(None),
            },
            None => Ok(PackedRefs::parse(text.to_vec(), self.format)
                .map_err(corrupt)?
                .find(name.as_bytes())),
        }
    }

    /// Reads `packed-refs` for about `lookups` lookups (a transaction's):
    /// in place if it is sorted and large next to them, parsed whole
    /// otherwise (empty if there is none).
    pub fn packed_snapshot(&self, lookups: usize) -> Result<PackedSnapshot, ReadError> {
        PackedSnapshot::new(self.packed_text()?, self.format, lookups)
            .map_err(|error| self.packed_error(error))
    }

    /// A damaged `packed-refs`, as a read error naming the file.
    pub(crate) fn packed_error(&self, error: PackedError) -> ReadError {
        ReadError::Packed {
            path: self.packed_path(),
            error,
        }
    }

    /// Like [`read`](Self::read), with `packed-refs` already read (for
    /// callers that look up many refs).
    pub fn read_in(
        &self,
        name: &RefName,
        packed: &PackedSnapshot,
    ) -> Result<Option<Ref>, ReadError> {
        self.read_loose_or(name, || {
            packed
                .find(name.as_bytes())
                .map_err(|error| self.packed_error(error))
        })
    }

    /// The loose ref if there is one, else what `packed` finds (root refs
    /// are never packed).
    fn read_loose_or(
        &self,
        name: &RefName,
        packed: impl FnOnce() -> Result<Option<Ref>, ReadError>,
    ) -> Result<Option<Ref>, ReadError> {
        if let Some(target) = self.read_loose(name)? {
            return Ok(Some(Ref {
                name: name.clone(),
                target,
                peeled: None,
            }));
        }
        if name.is_root_ref() {
            return Ok(None);
        }
        packed()
    }

    /// Follows symbolic refs from `name` to an object id, as git does (at
    /// most [`SYMREF_MAX_DEPTH`] levels). `None` if `name` does not exist.
    pub fn resolve(&self, name: &RefName) -> Result<Option<Resolved>, ReadError> {
        // `packed-refs` is read once, and only if a name is not loose.
        let mut text = None;
        crate::resolve::follow(name, |current| {
            self.read_loose_or(current, || {
                if text.is_none() {
                    text = Some(self.packed_text()?);
                }
                self.find_packed(text.as_deref().unwrap_or_default(), current)
            })
        })
    }

    /// Like [`resolve`](Self::resolve), with `packed-refs` already parsed.
    pub fn resolve_in(
        &self,
        name: &RefName,
        packed: &PackedSnapshot,
    ) -> Result<Option<Resolved>, ReadError> {
        crate::resolve::follow(name, |current| self.read_in(current, packed))
    }

    /// The names of the loose refs whose names start with `prefix`, sorted.
    /// A prefix ending in `/` names a directory, which is read directly.
    pub fn loose_names(&self, prefix: &[u8]) -> Result<Vec<RefName>, ReadError> {
        let mut names = Vec::new();
        match prefix.strip_suffix(b"/") {
            Some(dir) if prefix.starts_with(b"refs/") => {
                let path = self
                    .common_dir
                    .join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(dir));
                self.walk(&path, prefix, prefix, &mut names)?;
            }
            _ => self.walk(&self.common_dir.join("refs"), b"refs/", prefix, &mut names)?,
        }
        names.sort();
        Ok(names)
    }

    /// The loose refs whose names start with `prefix` (below `refs/`),
    /// sorted, each read: names and values are all read before
    /// `packed-refs` is, as git does. A ref that `pack-refs` moves from its
    /// loose file into `packed-refs` meanwhile is then either read loose or
    /// found in the `packed-refs` read after it; reading each value only
    /// as the packed refs go by could find the loose file gone and the ref
    /// not yet in the `packed-refs` read before.
    fn loose_refs(&self, prefix: &[u8]) -> Result<LooseRefs, ReadError> {
        let mut names = Vec::new();
        self.walk(&self.common_dir.join("refs"), b"refs/", prefix, &mut names)?;
        names.sort();
        let mut loose = LooseRefs::default();
        for name in names {
            match self.read_loose(&name) {
                Ok(Some(target)) => loose.refs.push((name, Some(target))),
                // Gone since the walk: deleted, or packed and pruned, in
                // which case the later read of packed-refs has it.
                Ok(None) => {}
                // Shadows a packed ref of its name without being shown,
                // as in git ("ignoring broken ref").
                Err(ReadError::BrokenRef { name, .. }) => {
                    loose.broken.push(name.clone());
                    loose.refs.push((name, None));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(loose)
    }

    /// Every ref whose name starts with `prefix` (below `refs/`), sorted,
    /// loose refs shadowing packed ones.
    pub fn list(&self, prefix: &[u8]) -> Result<Listing, ReadError> {
        let loose = self.loose_refs(prefix)?;
        let packed = self.packed()?;
        let mut listing = Listing {
            refs: Vec::new(),
            broken: loose.broken,
        };
        let mut p = packed.seek(prefix);
        // Packed refs sorted before `limit` (all remaining ones without a limit).
        let push_packed_until = |listing: &mut Listing, p: &mut usize, limit: Option<&[u8]>| {
            while let Some(name) = packed.name_at(*p) {
                if !name.starts_with(prefix) || limit.is_some_and(|l| name >= l) {
                    break;
                }
                listing.refs.push(packed.get(*p).expect("index in range"));
                *p += 1;
            }
        };
        for (name, target) in loose.refs {
            push_packed_until(&mut listing, &mut p, Some(name.as_bytes()));
            if packed.name_at(p) == Some(name.as_bytes()) {
                p += 1;
            }
            if let Some(target) = target {
                listing.refs.push(Ref {
                    name,
                    target,
                    peeled: None,
                });
            }
        }
        push_packed_until(&mut listing, &mut p, None);
        Ok(listing)
    }

    /// Shows `visitor` the refs [`list`](Self::list) returns, in order,
    /// without building them: a sorted `packed-refs` is read once and
    /// scanned in place from the prefix on (see [`packed::Scan`]), merged
    /// with the loose refs, which shadow packed ones and are read first
    /// (see [`loose_refs`](Self::loose_refs)). Broken loose refs are
    /// skipped, as [`Listing::broken`] sets them apart.
    pub fn visit(
        &self,
        prefix: &[u8],
        visitor: &mut dyn FnMut(RefView<'_>) -> ControlFlow<()>,
    ) -> Result<(), ReadError> {
        let loose_refs = self.loose_refs(prefix)?.refs;
        let path = self.packed_path();
        let text = self.packed_text()?;
        let parsed;
        let mut packed = match packed::Scan::new(&text, self.format, prefix) {
            Some(scan) => PackedSource::Scan(scan),
            None => {
                parsed = PackedRefs::parse(text.to_vec(), self.format).map_err(|error| {
                    ReadError::Packed {
                        path: path.clone(),
                        error,
                    }
                })?;
                PackedSource::Parsed {
                    next: parsed.seek(prefix),
                    packed: &parsed,
                    prefix,
                }
            }
        };
        // Loose refs shadow packed ones of the same name. Both lists are
        // sorted: the loose ones are merged in as the packed ones go by,
        // so a store with everything packed streams the file's text to the
        // visitor untouched.
        let mut loose = loose_refs.iter().peekable();
        let flow = packed.try_for_each(|view| {
            // Most packed refs have no loose ref at or before them: one
            // comparison, then straight to the visitor.
            while let Some((name, target)) = loose.next_if(|(name, _)| name.as_bytes() <= view.name)
            {
                show_loose(visitor, name, target)?;
                if name.as_bytes() == view.name {
                    // The packed value is shadowed.
                    return ControlFlow::Continue(());
                }
            }
            show_packed(visitor, view)
        });
        let flow = flow.map_err(|error| ReadError::Packed { path, error })?;
        if flow.is_continue() {
            for (name, target) in loose {
                if show_loose(visitor, name, target).is_break() {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Collects the names of loose refs below `dir` (named `name_prefix`)
    /// that could start with `prefix`.
    fn walk(
        &self,
        dir: &Path,
        name_prefix: &[u8],
        prefix: &[u8],
        out: &mut Vec<RefName>,
    ) -> Result<(), ReadError> {
        let common = name_prefix.len().min(prefix.len());
        if name_prefix[..common] != prefix[..common] {
            return Ok(());
        }
        let entries = match self.vfs.read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.is_not_found() || e.raw_os_error() == Some(20) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        for entry in entries {
            let mut name = name_prefix.to_vec();
            name.extend_from_slice(std::ffi::OsStr::as_encoded_bytes(&entry.name));
            match entry.kind {
                FileKind::Dir => {
                    name.push(b'/');
                    self.walk(&dir.join(&entry.name), &name, prefix, out)?;
                }
                FileKind::File | FileKind::Symlink => {
                    // Lock files and other names that are not refs are not listed.
                    if name.starts_with(prefix) {
                        if let Ok(name) = RefName::new(&name) {
                            out.push(name);
                        }
                    }
                }
                FileKind::Other => {}
            }
        }
        Ok(())
    }
}

/// Loose refs read ahead of `packed-refs`.
#[derive(Default)]
struct LooseRefs {
    /// Every loose ref, sorted by name, with its value (`None`: broken; it
    /// still shadows a packed ref of its name).
    refs: Vec<(RefName, Option<Target>)>,
    /// Loose refs whose files hold no valid value.
    broken: Vec<RefName>,
}

/// The packed refs of a prefix: read in place from a sorted file, or from
/// a parsed one.
enum PackedSource<'t> {
    Scan(packed::Scan<'t>),
    Parsed {
        packed: &'t PackedRefs,
        next: usize,
        prefix: &'t [u8],
    },
}

impl<'t> PackedSource<'t> {
    /// Shows `visit` the refs in order until it breaks; says whether it did.
    fn try_for_each(
        &mut self,
        mut visit: impl FnMut(PackedView<'t>) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, PackedError> {
        let mut flow = ControlFlow::Continue(());
        match self {
            PackedSource::Scan(scan) => scan.try_for_each(|view| {
                flow = visit(view);
                flow
            })?,
            PackedSource::Parsed {
                packed,
                next,
                prefix,
            } => {
                while let Some(view) = packed.view(*next).filter(|v| v.name.starts_with(prefix)) {
                    *next += 1;
                    flow = visit(view);
                    if flow.is_break() {
                        break;
                    }
                }
            }
        }
        Ok(flow)
    }
}

/// Shows a loose ref (nothing for a broken one).
fn show_loose(
    visitor: &mut dyn FnMut(RefView<'_>) -> ControlFlow<()>,
    name: &RefName,
    target: &Option<Target>,
) -> ControlFlow<()> {
    let Some(target) = target else {
        return ControlFlow::Continue(());
    };
    visitor(RefView {
        name: name.as_bytes(),
        target: match target {
            Target::Object(id) => TargetView::Object(*id),
            Target::Symbolic(to) => TargetView::Symbolic(to),
        },
        peeled: Peeled::Unknown,
    })
}

#[inline(always)]
fn show_packed(
    visitor: &mut dyn FnMut(RefView<'_>) -> ControlFlow<()>,
    view: PackedView<'_>,
) -> ControlFlow<()> {
    visitor(RefView {
        name: view.name,
        target: TargetView::Object(view.id),
        peeled: view.peeled,
    })
}

/// Converting ref-name bytes to a path component: ref names are bytes, and on
/// Unix so are paths.
trait OsStrFromBytes {
    fn from_bytes_compat(bytes: &[u8]) -> &Self;
}

impl OsStrFromBytes for std::ffi::OsStr {
    fn from_bytes_compat(bytes: &[u8]) -> &Self {
        std::os::unix::ffi::OsStrExt::from_bytes(bytes)
    }
}
