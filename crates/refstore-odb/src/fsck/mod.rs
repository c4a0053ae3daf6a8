//! git's object checks (`fsck`), as `receive.fsckObjects` applies them to
//! pushed objects: malformed identity lines, bad ids in commits and tags,
//! tree entries that are zero-padded, unsorted, duplicated or named `.`,
//! `..` or `.git` (with the spellings HFS+ and NTFS treat as `.git`), tag
//! headers, `.gitmodules` and friends as symbolic links.
//!
//! Each problem has git's message id (`missingEmail`, `zeroPaddedFilemode`,
//! ...) and a default severity; [`FsckOptions`] changes severities
//! (`receive.fsck.<msg-id>` = `error`, `warn` or `ignore`) and skips
//! objects (`receive.fsck.skipList`). In strict mode, the mode of a push,
//! warnings count as errors unless configured otherwise. The messages'
//! wording is git's, so users can search for them.
//!
//! [`Fsck`] adds what needs every object of a push: the content of the
//! blobs trees name `.gitmodules` (submodule names, urls, paths and update
//! commands git refuses) and `.gitattributes` (size, line length).
//!
//! Not checked: git's normalisation of http submodule urls (an url it
//! cannot normalise is refused by git, accepted here); ref-related message
//! ids are accepted in the configuration and have no effect on objects.

mod dotgit;
mod headers;
mod msg_id;
mod options;
mod special_blobs;
mod tree;

pub use msg_id::{MsgId, Severity};
pub use options::{Finding, FsckOptions};

use refstore_hash::{ObjectFormat, ObjectId};
use std::collections::HashSet;

use crate::ObjectKind;

/// Checks one object; problems not ignored are appended to `findings`.
/// True if the object is refused (some finding is an error).
pub fn fsck_object(
    id: &ObjectId,
    kind: ObjectKind,
    data: &[u8],
    options: &FsckOptions,
    findings: &mut Vec<Finding>,
) -> bool {
    if options.skip.contains(id) {
        return false;
    }
    let mut checker = Checker {
        id: *id,
        format: id.format(),
        options,
        findings,
        refused: false,
        special: None,
    };
    match kind {
        ObjectKind::Blob => {}
        ObjectKind::Tree => checker.tree(data),
        ObjectKind::Commit => checker.commit(data),
        ObjectKind::Tag => checker.tag(data),
    }
    checker.refused
}

/// The checks of one object.
struct Checker<'a> {
    id: ObjectId,
    format: ObjectFormat,
    options: &'a FsckOptions,
    findings: &'a mut Vec<Finding>,
    refused: bool,
    /// Blobs named `.gitmodules` and `.gitattributes` by trees checked
    /// so far, checked themselves when seen or at [`Fsck::finish`].
    special: Option<&'a mut Special>,
}

/// Blobs whose content git checks, by what trees name them.
#[derive(Debug, Default)]
struct Special {
    gitmodules: HashSet<ObjectId>,
    gitattributes: HashSet<ObjectId>,
    done: HashSet<ObjectId>,
    /// Blobs at or above `core.bigFileThreshold`, never read.
    large: HashSet<ObjectId>,
}

/// A check that ends the object's checks when it reports an error (git
/// stops parsing a commit or tag at the first error).
type Stop = Result<(), ()>;

impl Checker<'_> {
    /// Reports `msg_id`; `Err` if it is an error.
    fn report(&mut self, msg_id: MsgId, text: impl Into<String>) -> Stop {
        let is_error = match self.options.severity(msg_id) {
            Severity::Ignore => return Ok(()),
            Severity::Fatal | Severity::Error => true,
            Severity::Warn | Severity::Info => false,
        };
        self.findings.push(Finding {
            object: self.id,
            msg_id,
            is_error,
            text: text.into(),
        });
        if is_error {
            self.refused = true;
            Err(())
        } else {
            Ok(())
        }
    }
}

/// The checks of a set of objects (a push): [`fsck_object`]'s, and the
/// content of the blobs trees name `.gitmodules` (submodule names that
/// climb out with `..`, urls and paths that look like options or carry
/// newlines, `update = !command`) and `.gitattributes` (files and lines
/// too long for git to read), whichever order they come in.
#[derive(Debug)]
pub struct Fsck<'o> {
    options: &'o FsckOptions,
    special: Special,
    blobs_in_order: bool,
}

impl<'o> Fsck<'o> {
    /// A session with `options`.
    pub fn new(options: &'o FsckOptions) -> Self {
        Fsck {
            options,
            special: Special::default(),
            blobs_in_order: false,
        }
    }

    /// Judges a `.gitmodules` or `.gitattributes` blob as soon as it is
    /// checked after a tree naming it, as git's `index-pack` does for a
    /// pack read in order; without it every such blob is judged by
    /// [`finish`](Self::finish), as git's `unpack-objects` does.
    pub fn blobs_in_order(mut self) -> Self {
        self.blobs_in_order = true;
        self
    }

    /// Checks one object, as [`fsck_object`] does, and records the blobs
    /// its trees name for [`finish`](Self::finish). True if it is refused.
    pub fn check(
        &mut self,
        id: &ObjectId,
        kind: ObjectKind,
        data: &[u8],
        findings: &mut Vec<Finding>,
    ) -> bool {
        if self.options.skip.contains(id) {
            return false;
        }
        let mut checker = Checker {
            id: *id,
            format: id.format(),
            options: self.options,
            findings,
            refused: false,
            special: Some(&mut self.special),
        };
        match kind {
            // Judged here only if a tree named it already; else by
            // `finish`, when every tree that may name it is known.
            ObjectKind::Blob if self.blobs_in_order => checker.special_blob(data),
            ObjectKind::Blob => {}
            ObjectKind::Tree => checker.tree(data),
            ObjectKind::Commit => checker.commit(data),
            ObjectKind::Tag => checker.tag(data),
        }
        checker.refused
    }

    /// Checks a blob at or above `core.bigFileThreshold` without its
    /// content, as git does: named `.gitmodules` or `.gitattributes`, it is
    /// too large to parse (`gitmodulesLarge`, `gitattributesLarge`); any
    /// other blob needs no check. True if it is refused.
    pub fn check_large_blob(&mut self, id: &ObjectId, findings: &mut Vec<Finding>) -> bool {
        if self.options.skip.contains(id) {
            return false;
        }
        self.note_large_blob(*id);
        if !self.blobs_in_order {
            return false;
        }
        let mut checker = Checker {
            id: *id,
            format: id.format(),
            options: self.options,
            findings,
            refused: false,
            special: Some(&mut self.special),
        };
        checker.large_blob();
        checker.refused
    }

    /// Records that `id` is a blob too large to read, so that
    /// [`finish`](Self::finish) judges it without reading it.
    pub fn note_large_blob(&mut self, id: ObjectId) {
        self.special.large.insert(id);
    }

    /// The `.gitmodules` and `.gitattributes` blobs the checked trees
    /// name that [`finish`](Self::finish) will read.
    pub fn pending_blobs(&self) -> Vec<ObjectId> {
        self.special
            .gitmodules
            .iter()
            .chain(&self.special.gitattributes)
            .filter(|id| !self.special.done.contains(id) && !self.special.large.contains(id))
            .copied()
            .collect()
    }

    /// Checks the `.gitmodules` and `.gitattributes` blobs the checked
    /// trees name and not judged yet, read with `read` (from the push and
    /// the repository). True if one is refused.
    pub fn finish(
        &mut self,
        mut read: impl FnMut(&ObjectId) -> Option<(ObjectKind, Vec<u8>)>,
        findings: &mut Vec<Finding>,
    ) -> bool {
        let pending: HashSet<ObjectId> = self
            .special
            .gitmodules
            .iter()
            .chain(&self.special.gitattributes)
            .filter(|id| !self.special.done.contains(id))
            .copied()
            .collect();
        let mut refused = false;
        for id in pending {
            if self.options.skip.contains(&id) {
                continue;
            }
            let modules = self.special.gitmodules.contains(&id);
            let mut checker = Checker {
                id,
                format: id.format(),
                options: self.options,
                findings,
                refused: false,
                special: Some(&mut self.special),
            };
            if checker.is_large() {
                checker.large_blob();
                refused |= checker.refused;
                continue;
            }
            let _ = match read(&id) {
                Some((ObjectKind::Blob, data)) => {
                    checker.special_blob(&data);
                    Ok(())
                }
                Some(_) if modules => {
                    checker.report(MsgId::GitmodulesBlob, "non-blob found at .gitmodules")
                }
                Some(_) => {
                    checker.report(MsgId::GitattributesBlob, "non-blob found at .gitattributes")
                }
                None if modules => {
                    checker.report(MsgId::GitmodulesMissing, "unable to read .gitmodules blob")
                }
                None => checker.report(
                    MsgId::GitattributesMissing,
                    "unable to read .gitattributes blob",
                ),
            };
            refused |= checker.refused;
        }
        refused
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(super) const ID: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

    pub(super) fn check_one(kind: ObjectKind, data: &[u8], options: &FsckOptions) -> Vec<String> {
        let id = ObjectId::from_hex_in(
            b"1111111111111111111111111111111111111111",
            ObjectFormat::Sha1,
        )
        .unwrap();
        let mut findings = Vec::new();
        let refused = fsck_object(&id, kind, data, options, &mut findings);
        assert_eq!(refused, findings.iter().any(|f| f.is_error));
        findings
            .iter()
            .map(|f| {
                format!(
                    "{}{}",
                    if f.is_error { "E " } else { "W " },
                    f.msg_id.name()
                )
            })
            .collect()
    }

    pub(super) fn commit(author: &str) -> Vec<u8> {
        format!("tree {ID}\nauthor {author}\ncommitter C <c@x> 1700000000 +0000\n\nmsg\n")
            .into_bytes()
    }

    #[test]
    fn severities_and_skip_list() {
        let mut options = FsckOptions::new(true);
        let data = commit("A<a@x> 1 +0000");
        options.set("MISSINGSPACEBEFOREEMAIL", "warn").unwrap();
        assert_eq!(
            check_one(ObjectKind::Commit, &data, &options),
            ["W missingSpaceBeforeEmail"]
        );
        options.set("missingSpaceBeforeEmail", "ignore").unwrap();
        assert_eq!(
            check_one(ObjectKind::Commit, &data, &options),
            Vec::<String>::new()
        );
        assert!(options.set("noSuchId", "warn").is_err());
        assert!(options.set("badDate", "sometimes").is_err());
        assert!(options.set("nulInHeader", "warn").is_err());
        let mut skipping = FsckOptions::new(true);
        skipping.skip(
            ObjectId::from_hex_in(
                b"1111111111111111111111111111111111111111",
                ObjectFormat::Sha1,
            )
            .unwrap(),
        );
        assert_eq!(
            check_one(ObjectKind::Commit, &data, &skipping),
            Vec::<String>::new()
        );
    }
}
