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

use refstore_hash::{ObjectFormat, ObjectId};
use refstore_refname::{check, CheckOptions};
use std::collections::HashSet;

use crate::ObjectKind;

/// How a problem is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Cannot be configured away (`nulInHeader`, `unterminatedHeader`).
    Fatal,
    /// Refuses the object.
    Error,
    /// Reported; an error in strict mode unless configured.
    Warn,
    /// Reported as a warning, also in strict mode.
    Info,
    /// Not reported.
    Ignore,
}

macro_rules! msg_ids {
    ($($id:ident $camel:literal $severity:ident,)*) => {
        /// git's fsck message ids.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(missing_docs)]
        pub enum MsgId { $($id,)* }

        /// Every id with its name and default severity.
        const MSG_IDS: &[(MsgId, &str, Severity)] = &[$((MsgId::$id, $camel, Severity::$severity),)*];
    };
}

msg_ids! {
    NulInHeader "nulInHeader" Fatal,
    UnterminatedHeader "unterminatedHeader" Fatal,
    BadHeaderContinuation "badHeaderContinuation" Error,
    BadDate "badDate" Error,
    BadDateOverflow "badDateOverflow" Error,
    BadEmail "badEmail" Error,
    BadGpgsig "badGpgsig" Error,
    BadHeadTarget "badHeadTarget" Error,
    BadName "badName" Error,
    BadObjectSha1 "badObjectSha1" Error,
    BadPackedRefEntry "badPackedRefEntry" Error,
    BadPackedRefHeader "badPackedRefHeader" Error,
    BadParentSha1 "badParentSha1" Error,
    BadReferentName "badReferentName" Error,
    BadRefContent "badRefContent" Error,
    BadRefFiletype "badRefFiletype" Error,
    BadRefName "badRefName" Error,
    BadRefOid "badRefOid" Error,
    BadTimezone "badTimezone" Error,
    BadTree "badTree" Error,
    BadTreeSha1 "badTreeSha1" Error,
    BadType "badType" Error,
    DuplicateEntries "duplicateEntries" Error,
    GitattributesBlob "gitattributesBlob" Error,
    GitattributesLarge "gitattributesLarge" Error,
    GitattributesLineLength "gitattributesLineLength" Error,
    GitattributesMissing "gitattributesMissing" Error,
    GitmodulesBlob "gitmodulesBlob" Error,
    GitmodulesLarge "gitmodulesLarge" Error,
    GitmodulesMissing "gitmodulesMissing" Error,
    GitmodulesName "gitmodulesName" Error,
    GitmodulesPath "gitmodulesPath" Error,
    GitmodulesSymlink "gitmodulesSymlink" Error,
    GitmodulesUpdate "gitmodulesUpdate" Error,
    GitmodulesUrl "gitmodulesUrl" Error,
    MissingAuthor "missingAuthor" Error,
    MissingCommitter "missingCommitter" Error,
    MissingEmail "missingEmail" Error,
    MissingNameBeforeEmail "missingNameBeforeEmail" Error,
    MissingObject "missingObject" Error,
    MissingSpaceBeforeDate "missingSpaceBeforeDate" Error,
    MissingSpaceBeforeEmail "missingSpaceBeforeEmail" Error,
    MissingTag "missingTag" Error,
    MissingTagEntry "missingTagEntry" Error,
    MissingTree "missingTree" Error,
    MissingType "missingType" Error,
    MissingTypeEntry "missingTypeEntry" Error,
    MultipleAuthors "multipleAuthors" Error,
    PackedRefEntryNotTerminated "packedRefEntryNotTerminated" Error,
    PackedRefUnsorted "packedRefUnsorted" Error,
    TreeNotSorted "treeNotSorted" Error,
    UnknownType "unknownType" Error,
    ZeroPaddedDate "zeroPaddedDate" Error,
    BadReftableTableName "badReftableTableName" Warn,
    EmptyName "emptyName" Warn,
    FullPathname "fullPathname" Warn,
    HasDot "hasDot" Warn,
    HasDotdot "hasDotdot" Warn,
    HasDotgit "hasDotgit" Warn,
    LargePathname "largePathname" Warn,
    NullSha1 "nullSha1" Warn,
    NulInCommit "nulInCommit" Warn,
    ZeroPaddedFilemode "zeroPaddedFilemode" Warn,
    BadFilemode "badFilemode" Info,
    BadTagName "badTagName" Info,
    EmptyPackedRefsFile "emptyPackedRefsFile" Info,
    GitattributesSymlink "gitattributesSymlink" Info,
    GitignoreSymlink "gitignoreSymlink" Info,
    GitmodulesParse "gitmodulesParse" Info,
    MailmapSymlink "mailmapSymlink" Info,
    MissingTaggerEntry "missingTaggerEntry" Info,
    RefMissingNewline "refMissingNewline" Info,
    SymlinkRef "symlinkRef" Info,
    SymrefTargetIsNotARef "symrefTargetIsNotARef" Info,
    TrailingRefContent "trailingRefContent" Info,
    ExtraHeaderEntry "extraHeaderEntry" Ignore,
}

impl MsgId {
    /// The id as git spells it in messages (`missingEmail`).
    pub fn name(self) -> &'static str {
        MSG_IDS[self as usize].1
    }

    /// The id named `name`, in any case (configuration keys are
    /// case-insensitive).
    pub fn from_name(name: &str) -> Option<MsgId> {
        MSG_IDS
            .iter()
            .find(|(_, camel, _)| camel.eq_ignore_ascii_case(name))
            .map(|&(id, _, _)| id)
    }

    /// Every message id.
    pub fn all() -> impl Iterator<Item = MsgId> {
        MSG_IDS.iter().map(|&(id, _, _)| id)
    }

    fn default_severity(self) -> Severity {
        MSG_IDS[self as usize].2
    }
}

/// Longest tree entry name accepted before `largePathname` (git's default).
const MAX_TREE_ENTRY_LEN: usize = 4096;

/// Severities and skipped objects.
#[derive(Debug, Clone)]
pub struct FsckOptions {
    severities: Vec<Severity>,
    strict: bool,
    skip: HashSet<ObjectId>,
}

impl FsckOptions {
    /// git's defaults; `strict` (as for pushes) makes warnings errors.
    pub fn new(strict: bool) -> Self {
        let severities = MSG_IDS
            .iter()
            .map(|&(_, _, severity)| match severity {
                Severity::Warn if strict => Severity::Error,
                other => other,
            })
            .collect();
        FsckOptions {
            severities,
            strict,
            skip: HashSet::new(),
        }
    }

    /// Sets the severity of message id `name` to `value` (`error`, `warn`
    /// or `ignore`), as `receive.fsck.<name>` does. The error is git's
    /// message for a value it refuses.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let id = MsgId::from_name(name).ok_or_else(|| format!("Unhandled message id: {name}"))?;
        let severity = match value {
            "error" => Severity::Error,
            "warn" => Severity::Warn,
            "ignore" => Severity::Ignore,
            _ => return Err(format!("Unknown fsck message type: '{value}'")),
        };
        if id.default_severity() == Severity::Fatal && severity != Severity::Error {
            return Err(format!("Cannot demote {name} to {value}"));
        }
        self.severities[id as usize] = severity;
        Ok(())
    }

    /// Skips every check of object `id` (`receive.fsck.skipList`).
    pub fn skip(&mut self, id: ObjectId) {
        self.skip.insert(id);
    }

    fn severity(&self, id: MsgId) -> Severity {
        self.severities[id as usize]
    }
}

/// One problem found in an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The object.
    pub object: ObjectId,
    /// What is wrong.
    pub msg_id: MsgId,
    /// True if it refuses the object, false for a warning.
    pub is_error: bool,
    /// git's description.
    pub text: String,
}

impl std::fmt::Display for Finding {
    /// git's form: `object <id>: <msgId>: <text>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "object {}: {}: {}",
            self.object,
            self.msg_id.name(),
            self.text
        )
    }
}

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

    fn tree(&mut self, data: &[u8]) {
        let hash_len = self.format.raw_len();
        let mut flags = TreeFlags::default();
        let mut previous: Option<(u32, &[u8])> = None;
        let mut candidates: Vec<&[u8]> = Vec::new();
        let mut rest = data;
        while !rest.is_empty() {
            let Some(entry) = parse_entry(rest, hash_len) else {
                let _ = self.report(MsgId::BadTree, "cannot be parsed as a tree");
                return;
            };
            rest = &rest[entry.len..];
            let name = entry.name;
            flags.null_id |= entry.id.iter().all(|&b| b == 0);
            flags.full_path |= name.contains(&b'/');
            flags.dot |= name == b".";
            flags.dotdot |= name == b"..";
            flags.dotgit |= is_hfs_dot(name, b"git") || is_ntfs_dotgit(name);
            flags.zero_pad |= entry.zero_padded;
            flags.large_name |= name.len() > MAX_TREE_ENTRY_LEN;
            let symlink = entry.mode == 0o120000;
            let entry_id = ObjectId::from_raw(entry.id).expect("a full id");
            if is_dot_special(name, b"gitmodules", b"gi7eba") {
                if symlink {
                    let _ = self.report(MsgId::GitmodulesSymlink, ".gitmodules is a symbolic link");
                } else if let Some(special) = self.special.as_deref_mut() {
                    special.gitmodules.insert(entry_id);
                }
            }
            if is_dot_special(name, b"gitattributes", b"gi7d29") {
                if symlink {
                    let _ = self.report(MsgId::GitattributesSymlink, ".gitattributes is a symlink");
                } else if let Some(special) = self.special.as_deref_mut() {
                    special.gitattributes.insert(entry_id);
                }
            }
            if symlink && is_dot_special(name, b"gitignore", b"gi250a") {
                let _ = self.report(MsgId::GitignoreSymlink, ".gitignore is a symlink");
            }
            if symlink && is_dot_special(name, b"mailmap", b"maba30") {
                let _ = self.report(MsgId::MailmapSymlink, ".mailmap is a symlink");
            }
            // Windows reads a backslash as a directory separator.
            for (i, _) in name.iter().enumerate().filter(|&(_, &b)| b == b'\\') {
                let after = &name[i + 1..];
                flags.dotgit |= is_ntfs_dotgit(after);
                if is_ntfs_dot(after, b"gitmodules", b"gi7eba") {
                    if symlink {
                        let _ =
                            self.report(MsgId::GitmodulesSymlink, ".gitmodules is a symbolic link");
                    } else if let Some(special) = self.special.as_deref_mut() {
                        special.gitmodules.insert(entry_id);
                    }
                }
            }
            // 100664 was written by early gits; accepted unless strict.
            flags.bad_mode |= !(matches!(
                entry.mode,
                0o100755 | 0o100644 | 0o120000 | 0o040000 | 0o160000
            ) || (entry.mode == 0o100664 && !self.options.strict));
            if let Some((mode, prev)) = previous {
                match order(mode, prev, entry.mode, name, &mut candidates) {
                    Order::Sorted => {}
                    Order::Unsorted => flags.unsorted = true,
                    Order::Duplicate => flags.duplicates = true,
                }
            }
            previous = Some((entry.mode, name));
        }
        let reports = [
            (
                flags.null_id,
                MsgId::NullSha1,
                "contains entries pointing to null sha1",
            ),
            (
                flags.full_path,
                MsgId::FullPathname,
                "contains full pathnames",
            ),
            (flags.dot, MsgId::HasDot, "contains '.'"),
            (flags.dotdot, MsgId::HasDotdot, "contains '..'"),
            (flags.dotgit, MsgId::HasDotgit, "contains '.git'"),
            (
                flags.zero_pad,
                MsgId::ZeroPaddedFilemode,
                "contains zero-padded file modes",
            ),
            (
                flags.bad_mode,
                MsgId::BadFilemode,
                "contains bad file modes",
            ),
            (
                flags.duplicates,
                MsgId::DuplicateEntries,
                "contains duplicate file entries",
            ),
            (flags.unsorted, MsgId::TreeNotSorted, "not properly sorted"),
            (
                flags.large_name,
                MsgId::LargePathname,
                "contains excessively large pathname",
            ),
        ];
        for (found, msg_id, text) in reports {
            if found {
                let _ = self.report(msg_id, text);
            }
        }
    }

    /// The headers of a commit or tag end with an empty line or at least a
    /// newline, and hold no NUL.
    fn headers(&mut self, data: &[u8]) -> Stop {
        for (i, &b) in data.iter().enumerate() {
            match b {
                0 => {
                    return self.report(
                        MsgId::NulInHeader,
                        format!("unterminated header: NUL at offset {i}"),
                    )
                }
                b'\n' if data.get(i + 1) == Some(&b'\n') => return Ok(()),
                _ => {}
            }
        }
        if data.last() == Some(&b'\n') {
            return Ok(());
        }
        self.report(MsgId::UnterminatedHeader, "unterminated header")
    }

    fn commit(&mut self, data: &[u8]) {
        let _ = self.commit_checks(data);
    }

    fn commit_checks(&mut self, data: &[u8]) -> Stop {
        self.headers(data)?;
        let mut lines = Lines(data);
        let Some(tree) = lines.header(b"tree ") else {
            return self.report(MsgId::MissingTree, "invalid format - expected 'tree' line");
        };
        if !self.is_id(tree) {
            self.report(MsgId::BadTreeSha1, "invalid 'tree' line format - bad sha1")?;
        }
        while let Some(parent) = lines.header(b"parent ") {
            if !self.is_id(parent) {
                self.report(
                    MsgId::BadParentSha1,
                    "invalid 'parent' line format - bad sha1",
                )?;
            }
        }
        let mut authors = 0;
        while let Some(author) = lines.header(b"author ") {
            authors += 1;
            self.ident(author)?;
        }
        match authors {
            0 => self.report(
                MsgId::MissingAuthor,
                "invalid format - expected 'author' line",
            )?,
            1 => {}
            _ => self.report(
                MsgId::MultipleAuthors,
                "invalid format - multiple 'author' lines",
            )?,
        }
        let Some(committer) = lines.header(b"committer ") else {
            return self.report(
                MsgId::MissingCommitter,
                "invalid format - expected 'committer' line",
            );
        };
        self.ident(committer)?;
        if data.contains(&0) {
            self.report(MsgId::NulInCommit, "NUL byte in the commit object body")?;
        }
        Ok(())
    }

    fn tag(&mut self, data: &[u8]) {
        let _ = self.tag_checks(data);
    }

    fn tag_checks(&mut self, data: &[u8]) -> Stop {
        self.headers(data)?;
        let mut lines = Lines(data);
        let Some(object) = lines.header(b"object ") else {
            return self.report(
                MsgId::MissingObject,
                "invalid format - expected 'object' line",
            );
        };
        if !self.is_id(object) {
            self.report(
                MsgId::BadObjectSha1,
                "invalid 'object' line format - bad sha1",
            )?;
        }
        let Some(kind) = lines.header_line(b"type ") else {
            return self.report(
                MsgId::MissingTypeEntry,
                "invalid format - expected 'type' line",
            );
        };
        let Some(kind) = kind else {
            return self.report(
                MsgId::MissingType,
                "invalid format - unexpected end after 'type' line",
            );
        };
        if ObjectKind::from_name(kind).is_none() {
            self.report(MsgId::BadType, "invalid 'type' value")?;
        }
        let Some(name) = lines.header_line(b"tag ") else {
            return self.report(
                MsgId::MissingTagEntry,
                "invalid format - expected 'tag' line",
            );
        };
        let Some(name) = name else {
            return self.report(
                MsgId::MissingTag,
                "invalid format - unexpected end after 'type' line",
            );
        };
        let mut full = b"refs/tags/".to_vec();
        full.extend_from_slice(name);
        let options = CheckOptions {
            allow_onelevel: false,
            refspec_pattern: false,
        };
        if check(&full, options).is_err() {
            self.report(
                MsgId::BadTagName,
                format!("invalid 'tag' name: {}", String::from_utf8_lossy(name)),
            )?;
        }
        match lines.header(b"tagger ") {
            Some(tagger) => self.ident(tagger)?,
            None => self.report(
                MsgId::MissingTaggerEntry,
                "invalid format - expected 'tagger' line",
            )?,
        }
        let gpgsig = lines
            .header_line(b"gpgsig ")
            .or_else(|| lines.header_line(b"gpgsig-sha256 "));
        if let Some(signature) = gpgsig {
            if signature.is_none() {
                return self.report(
                    MsgId::BadGpgsig,
                    "invalid format - unexpected end after 'gpgsig' or 'gpgsig-sha256' line",
                );
            }
            while lines.0.first() == Some(&b' ') {
                if lines.header_line(b" ") == Some(None) {
                    return self.report(
                        MsgId::BadHeaderContinuation,
                        "invalid format - unexpected end in 'gpgsig' or 'gpgsig-sha256' continuation line",
                    );
                }
            }
        }
        if !lines.0.is_empty() && lines.0[0] != b'\n' {
            self.report(
                MsgId::ExtraHeaderEntry,
                "invalid format - extra header(s) after 'tagger'",
            )?;
        }
        Ok(())
    }

    /// An id in hex, alone on its line.
    fn is_id(&self, line: &[u8]) -> bool {
        ObjectId::from_hex_in(line, self.format).is_ok()
    }

    /// `Name <email> <seconds> <+zone>` of an author, committer or tagger
    /// line (without its keyword and newline).
    fn ident(&mut self, line: &[u8]) -> Stop {
        const BAD: &str = "invalid author/committer line - ";
        if line.first() == Some(&b'<') {
            return self.report(
                MsgId::MissingNameBeforeEmail,
                format!("{BAD}missing space before email"),
            );
        }
        let Some(open) = line.iter().position(|&b| b == b'<' || b == b'>') else {
            return self.report(MsgId::MissingEmail, format!("{BAD}missing email"));
        };
        if line[open] == b'>' {
            return self.report(MsgId::BadName, format!("{BAD}bad name"));
        }
        if line[open - 1] != b' ' {
            return self.report(
                MsgId::MissingSpaceBeforeEmail,
                format!("{BAD}missing space before email"),
            );
        }
        let email = &line[open + 1..];
        let Some(close) = email.iter().position(|&b| b == b'<' || b == b'>') else {
            return self.report(MsgId::BadEmail, format!("{BAD}bad email"));
        };
        if email[close] == b'<' {
            return self.report(MsgId::BadEmail, format!("{BAD}bad email"));
        }
        let mut rest = &email[close + 1..];
        if rest.first() != Some(&b' ') {
            return self.report(
                MsgId::MissingSpaceBeforeDate,
                format!("{BAD}missing space before date"),
            );
        }
        while matches!(rest.first(), Some(b' ' | b'\t')) {
            rest = &rest[1..];
        }
        if !rest.first().is_some_and(u8::is_ascii_digit) {
            return self.report(MsgId::BadDate, format!("{BAD}bad date"));
        }
        if rest[0] == b'0' && rest.get(1) != Some(&b' ') {
            return self.report(MsgId::ZeroPaddedDate, format!("{BAD}zero-padded date"));
        }
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let date = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|d| d.parse::<u64>().ok());
        if date.is_none_or(|d| d > i64::MAX as u64) {
            return self.report(
                MsgId::BadDateOverflow,
                format!("{BAD}date causes integer overflow"),
            );
        }
        rest = &rest[digits..];
        if rest.first() != Some(&b' ') {
            return self.report(MsgId::BadDate, format!("{BAD}bad date"));
        }
        let zone = &rest[1..];
        let good_zone = zone.len() == 5
            && matches!(zone[0], b'+' | b'-')
            && zone[1..].iter().all(u8::is_ascii_digit);
        if !good_zone {
            return self.report(MsgId::BadTimezone, format!("{BAD}bad time zone"));
        }
        Ok(())
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

/// Largest `.gitattributes` git reads (`gitattributesLarge`).
const MAX_ATTRIBUTES_SIZE: usize = 100 << 20;
/// Longest `.gitattributes` line git reads (`gitattributesLineLength`).
const MAX_ATTRIBUTES_LINE: usize = 2048;

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

impl Checker<'_> {
    /// Whether the object is a blob too large to read.
    fn is_large(&self) -> bool {
        self.special
            .as_deref()
            .is_some_and(|special| special.large.contains(&self.id))
    }

    /// The checks of a blob too large to read, if a tree names it
    /// `.gitmodules` or `.gitattributes`: git does not parse it, and says so.
    fn large_blob(&mut self) {
        let Some(special) = self.special.as_deref_mut() else {
            return;
        };
        let modules = special.gitmodules.contains(&self.id);
        let attributes = special.gitattributes.contains(&self.id);
        if !modules && !attributes {
            return;
        }
        special.done.insert(self.id);
        if modules {
            let _ = self.report(MsgId::GitmodulesLarge, ".gitmodules too large to parse");
        }
        if attributes {
            let _ = self.report(
                MsgId::GitattributesLarge,
                ".gitattributes too large to parse",
            );
        }
    }

    /// The content checks of a blob a tree names `.gitmodules` or
    /// `.gitattributes` (none for other blobs).
    fn special_blob(&mut self, data: &[u8]) {
        let Some(special) = self.special.as_deref_mut() else {
            return;
        };
        let modules = special.gitmodules.contains(&self.id);
        let attributes = special.gitattributes.contains(&self.id);
        if !modules && !attributes {
            return;
        }
        special.done.insert(self.id);
        if modules {
            self.gitmodules(data);
        }
        if attributes {
            if data.len() > MAX_ATTRIBUTES_SIZE {
                let _ = self.report(
                    MsgId::GitattributesLarge,
                    ".gitattributes too large to parse",
                );
                return;
            }
            // git reads the file as a C string: up to a NUL.
            let text = data.split(|&b| b == 0).next().unwrap_or_default();
            if text
                .split(|&b| b == b'\n')
                .any(|line| line.len() >= MAX_ATTRIBUTES_LINE)
            {
                let _ = self.report(
                    MsgId::GitattributesLineLength,
                    ".gitattributes has too long lines to parse",
                );
            }
        }
    }

    fn gitmodules(&mut self, data: &[u8]) {
        let file = match gix_config::File::from_bytes_no_includes(
            data,
            gix_config::file::Metadata::api(),
            gix_config::file::init::Options::default(),
        ) {
            Ok(file) => file,
            Err(_) => {
                let _ = self.report(MsgId::GitmodulesParse, "could not parse gitmodules blob");
                return;
            }
        };
        let mut problems = Vec::new();
        for section in file.sections() {
            let header = section.header();
            if !header.name().eq_ignore_ascii_case(b"submodule") {
                continue;
            }
            let Some(name) = header.subsection_name() else {
                continue;
            };
            let name: &[u8] = name.as_ref();
            let body = section.body();
            for key in body.value_names().collect::<Vec<_>>() {
                // git checks the name once per variable of the section.
                if !is_submodule_name_ok(name) {
                    problems.push((
                        MsgId::GitmodulesName,
                        format!(
                            "disallowed submodule name: {}",
                            String::from_utf8_lossy(name)
                        ),
                    ));
                }
                for value in body.values(&key) {
                    let value: &[u8] = value.as_ref();
                    let shown = String::from_utf8_lossy(value);
                    match key.to_ascii_lowercase().as_str() {
                        "url" if !is_submodule_url_ok(value) => problems.push((
                            MsgId::GitmodulesUrl,
                            format!("disallowed submodule url: {shown}"),
                        )),
                        "path" if value.first() == Some(&b'-') => problems.push((
                            MsgId::GitmodulesPath,
                            format!("disallowed submodule path: {shown}"),
                        )),
                        "update" if value.first() == Some(&b'!') => problems.push((
                            MsgId::GitmodulesUpdate,
                            format!("disallowed submodule update setting: {shown}"),
                        )),
                        _ => {}
                    }
                }
            }
        }
        for (msg_id, text) in problems {
            let _ = self.report(msg_id, text);
        }
    }
}

/// git's rule for submodule names: not empty, no `..` component (with
/// slash or backslash as separators).
fn is_submodule_name_ok(name: &[u8]) -> bool {
    !name.is_empty()
        && !name
            .split(|&b| b == b'/' || b == b'\\')
            .any(|component| component == b"..")
}

/// git's rule for submodule urls: not an option; a relative or `git://`
/// url holds no newline once percent-decoded and does not climb out of its
/// root with `../` up to a `:` or `/`; an http(s) or ftp(s) url holds no
/// newline once decoded. (git also refuses http urls its normalisation
/// rejects; that check is not made here.)
fn is_submodule_url_ok(url: &[u8]) -> bool {
    if url.first() == Some(&b'-') {
        return false;
    }
    let dot_slash = |u: &[u8]| u.len() >= 2 && u[0] == b'.' && matches!(u[1], b'/' | b'\\');
    let dot_dot_slash = |u: &[u8]| u.len() >= 3 && u[0] == b'.' && dot_slash(&u[1..]);
    if dot_slash(url) || dot_dot_slash(url) || url.starts_with(b"git://") {
        if percent_decode(url).contains(&b'\n') {
            return false;
        }
        let mut rest = url;
        let mut climbs = 0;
        loop {
            if dot_dot_slash(rest) {
                climbs += 1;
                rest = &rest[3..];
            } else if dot_slash(rest) {
                rest = &rest[2..];
            } else {
                break;
            }
        }
        return !(climbs > 0 && matches!(rest.first(), Some(b':' | b'/')));
    }
    let curl = [&b"http://"[..], b"https://", b"ftp://", b"ftps://"];
    if curl.iter().any(|scheme| url.starts_with(scheme)) {
        return !percent_decode(url).contains(&b'\n');
    }
    true
}

/// `%XX` sequences decoded; anything else kept as it is.
fn percent_decode(text: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'%' && i + 2 < text.len() {
            if let (Some(high), Some(low)) = (hex(text[i + 1]), hex(text[i + 2])) {
                out.push((high * 16 + low) as u8);
                i += 3;
                continue;
            }
        }
        out.push(text[i]);
        i += 1;
    }
    out
}

/// Header lines of a commit or tag, read in order.
struct Lines<'a>(&'a [u8]);

impl<'a> Lines<'a> {
    /// The rest of the next line if it starts with `keyword` (consumed,
    /// with its newline). The headers were checked to end with a newline.
    fn header(&mut self, keyword: &[u8]) -> Option<&'a [u8]> {
        self.header_line(keyword).map(|line| line.unwrap_or(&[]))
    }

    /// Like [`header`](Self::header), telling a line cut short by the end
    /// of the object (`Some(None)`).
    fn header_line(&mut self, keyword: &[u8]) -> Option<Option<&'a [u8]>> {
        let rest = self.0.strip_prefix(keyword)?;
        match rest.iter().position(|&b| b == b'\n') {
            Some(end) => {
                self.0 = &rest[end + 1..];
                Some(Some(&rest[..end]))
            }
            None => {
                self.0 = &[];
                Some(None)
            }
        }
    }
}

/// What the entries of one tree showed.
#[derive(Default)]
struct TreeFlags {
    null_id: bool,
    full_path: bool,
    dot: bool,
    dotdot: bool,
    dotgit: bool,
    zero_pad: bool,
    bad_mode: bool,
    duplicates: bool,
    unsorted: bool,
    large_name: bool,
}

/// One tree entry, as stored.
struct Entry<'a> {
    mode: u32,
    zero_padded: bool,
    name: &'a [u8],
    id: &'a [u8],
    /// Bytes the entry takes.
    len: usize,
}

/// Parses the entry at the start of `data`, as git's tree reader does: an
/// octal mode, a space, a non-empty name, a NUL, the raw id.
fn parse_entry(data: &[u8], hash_len: usize) -> Option<Entry<'_>> {
    let nul = data.iter().position(|&b| b == 0)?;
    if data.len() < nul + 1 + hash_len {
        return None;
    }
    let head = &data[..nul];
    let space = head.iter().position(|&b| b == b' ')?;
    let mode_digits = &head[..space];
    if mode_digits.is_empty() || !mode_digits.iter().all(|b| (b'0'..=b'7').contains(b)) {
        return None;
    }
    let mode = mode_digits.iter().try_fold(0u32, |m, &d| {
        m.checked_mul(8)?.checked_add(u32::from(d - b'0'))
    })?;
    let name = &head[space + 1..];
    if name.is_empty() {
        return None;
    }
    Some(Entry {
        mode,
        zero_padded: mode_digits[0] == b'0',
        name,
        id: &data[nul + 1..nul + 1 + hash_len],
        len: nul + 1 + hash_len,
    })
}

enum Order {
    Sorted,
    Unsorted,
    Duplicate,
}

fn is_dir(mode: u32) -> bool {
    mode & 0o170000 == 0o040000
}

/// Whether entry (`mode2`, `name2`) may follow (`mode1`, `name1`) in git's
/// tree order, where a directory sorts as if its name ended with `/`.
/// `candidates` keeps names of non-directories that a later directory of
/// the same name would duplicate (`foo`, `foo.bar`, `foo/`).
fn order<'a>(
    mode1: u32,
    name1: &'a [u8],
    mode2: u32,
    name2: &[u8],
    candidates: &mut Vec<&'a [u8]>,
) -> Order {
    let common = name1.len().min(name2.len());
    match name1[..common].cmp(&name2[..common]) {
        std::cmp::Ordering::Less => return Order::Sorted,
        std::cmp::Ordering::Greater => return Order::Unsorted,
        std::cmp::Ordering::Equal => {}
    }
    let mut c1 = name1.get(common).copied().unwrap_or(0);
    let mut c2 = name2.get(common).copied().unwrap_or(0);
    if c1 == 0 && c2 == 0 {
        return Order::Duplicate;
    }
    if c1 == 0 && is_dir(mode1) {
        c1 = b'/';
    }
    if c2 == 0 && is_dir(mode2) {
        c2 = b'/';
    }
    let below_slash = |c: u8| c != 0 && c < b'/';
    if c1 == 0 && below_slash(c2) {
        candidates.push(name1);
    } else if c2 == b'/' && below_slash(c1) {
        while let Some(file) = candidates.pop() {
            let Some(after) = name2.strip_prefix(file) else {
                continue;
            };
            if after.is_empty() {
                return Order::Duplicate;
            }
            if below_slash(after[0]) {
                candidates.push(file);
                break;
            }
        }
    }
    if c1 < c2 {
        Order::Sorted
    } else {
        Order::Unsorted
    }
}

/// Code points HFS+ ignores in names.
fn hfs_ignored(c: char) -> bool {
    matches!(
        c,
        '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}'
    )
}

/// True if HFS+ reads `name` as `.` followed by `needle` (ASCII,
/// lowercase), case-insensitively and ignoring invisible code points,
/// possibly followed by a directory separator.
fn is_hfs_dot(name: &[u8], needle: &[u8]) -> bool {
    let Ok(name) = std::str::from_utf8(name) else {
        return false;
    };
    let mut chars = name.chars().filter(|&c| !hfs_ignored(c));
    if chars.next() != Some('.') {
        return false;
    }
    for &expected in needle {
        match chars.next() {
            Some(c) if c.is_ascii() && c.to_ascii_lowercase() as u8 == expected => {}
            _ => return false,
        }
    }
    matches!(chars.next(), None | Some('/'))
}

/// True if NTFS reads `name` as `.git` (or its short name `git~1`),
/// trailing dots and spaces dropped, up to a separator or a stream name.
fn is_ntfs_dotgit(name: &[u8]) -> bool {
    let rest = if name.first() == Some(&b'.') {
        match name.get(1..4) {
            Some(g) if g.eq_ignore_ascii_case(b"git") => &name[4..],
            _ => return false,
        }
    } else {
        match name.get(..5) {
            Some(g) if g[..3].eq_ignore_ascii_case(b"git") && &g[3..] == b"~1" => &name[5..],
            _ => return false,
        }
    };
    for &c in rest {
        match c {
            b'/' | b'\\' | b':' => return true,
            b'.' | b' ' => {}
            _ => return false,
        }
    }
    true
}

/// True if NTFS reads `name` as `.<needle>`: spelled out, as its regular
/// 8.3 short name (six letters, `~1` to `~4`) or its fall-back short name
/// (`short_prefix`, `~`, digits), trailing dots and spaces dropped.
fn is_ntfs_dot(name: &[u8], needle: &[u8], short_prefix: &[u8]) -> bool {
    let only_dots_and_spaces = |rest: &[u8]| {
        for &c in rest {
            match c {
                b':' => return true,
                b'.' | b' ' => {}
                _ => return false,
            }
        }
        true
    };
    if name.first() == Some(&b'.')
        && name.len() > needle.len()
        && name[1..=needle.len()].eq_ignore_ascii_case(needle)
    {
        return only_dots_and_spaces(&name[needle.len() + 1..]);
    }
    if name.len() >= 8
        && name[..6].eq_ignore_ascii_case(&needle[..6])
        && name[6] == b'~'
        && (b'1'..=b'4').contains(&name[7])
    {
        return only_dots_and_spaces(&name[8..]);
    }
    // The fall-back short name: up to six letters of the prefix, `~`, a
    // digit from 1, more digits, eight characters in all.
    if name.len() < 8 {
        return false;
    }
    let mut saw_tilde = false;
    let mut i = 0;
    while i < 8 {
        let c = name[i];
        if saw_tilde {
            if !c.is_ascii_digit() {
                return false;
            }
        } else if c == b'~' {
            i += 1;
            if i >= 8 || !(b'1'..=b'9').contains(&name[i]) {
                return false;
            }
            saw_tilde = true;
        } else if i >= 6 || c >= 0x80 || c.to_ascii_lowercase() != short_prefix[i] {
            return false;
        }
        i += 1;
    }
    only_dots_and_spaces(&name[8..])
}

/// `.gitmodules` and the like, as HFS+ or NTFS may spell them.
fn is_dot_special(name: &[u8], needle: &[u8], short_prefix: &[u8]) -> bool {
    is_hfs_dot(name, needle) || is_ntfs_dot(name, needle, short_prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

    fn check_one(kind: ObjectKind, data: &[u8], options: &FsckOptions) -> Vec<String> {
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

    fn commit(author: &str) -> Vec<u8> {
        format!("tree {ID}\nauthor {author}\ncommitter C <c@x> 1700000000 +0000\n\nmsg\n")
            .into_bytes()
    }

    fn tree(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut data = Vec::new();
        for (mode, name) in entries {
            data.extend_from_slice(format!("{mode} {name}\0").as_bytes());
            data.extend_from_slice(&[7; 20]);
        }
        data
    }

    #[test]
    fn identity_lines() {
        let strict = FsckOptions::new(true);
        let cases = [
            ("A U Thor <a@x> 1700000000 +0000", vec![]),
            ("A<a@x> 1 +0000", vec!["E missingSpaceBeforeEmail"]),
            ("<a@x> 1 +0000", vec!["E missingNameBeforeEmail"]),
            ("A a@x 1 +0000", vec!["E missingEmail"]),
            ("A > <a@x> 1 +0000", vec!["E badName"]),
            ("A <a@x 1 +0000", vec!["E badEmail"]),
            ("A <a@x>1 +0000", vec!["E missingSpaceBeforeDate"]),
            ("A <a@x> x +0000", vec!["E badDate"]),
            ("A <a@x> 0123 +0000", vec!["E zeroPaddedDate"]),
            ("A <a@x> 0 +0000", vec![]),
            (
                "A <a@x> 99999999999999999999 +0000",
                vec!["E badDateOverflow"],
            ),
            ("A <a@x> 1 0000", vec!["E badTimezone"]),
            ("A <a@x> 1 +000", vec!["E badTimezone"]),
        ];
        for (author, expected) in cases {
            assert_eq!(
                check_one(ObjectKind::Commit, &commit(author), &strict),
                expected,
                "{author}"
            );
        }
    }

    #[test]
    fn commit_headers() {
        let strict = FsckOptions::new(true);
        let c = |s: &str| check_one(ObjectKind::Commit, s.as_bytes(), &strict);
        let who = "A <a@x> 1 +0000";
        assert_eq!(c(&format!("author {who}\n")), ["E missingTree"]);
        assert_eq!(
            c(&format!("tree 12\nauthor {who}\ncommitter {who}\n")),
            ["E badTreeSha1"]
        );
        assert_eq!(
            c(&format!(
                "tree {ID}\nparent x\nauthor {who}\ncommitter {who}\n"
            )),
            ["E badParentSha1"]
        );
        assert_eq!(
            c(&format!("tree {ID}\ncommitter {who}\n")),
            ["E missingAuthor"]
        );
        assert_eq!(
            c(&format!(
                "tree {ID}\nauthor {who}\nauthor {who}\ncommitter {who}\n"
            )),
            ["E multipleAuthors"]
        );
        assert_eq!(
            c(&format!("tree {ID}\nauthor {who}\n")),
            ["E missingCommitter"]
        );
        assert_eq!(
            c(&format!("tree {ID}\nauthor {who}\ncommitter {who}")),
            ["E unterminatedHeader"]
        );
        assert_eq!(
            c(&format!("tree {ID}\0\nauthor {who}\n")),
            ["E nulInHeader"]
        );
        assert_eq!(
            c(&format!(
                "tree {ID}\nauthor {who}\ncommitter {who}\n\nbody\0"
            )),
            ["E nulInCommit"]
        );
        let mut lenient = FsckOptions::new(false);
        assert_eq!(
            check_one(
                ObjectKind::Commit,
                format!("tree {ID}\nauthor {who}\ncommitter {who}\n\nbody\0").as_bytes(),
                &lenient
            ),
            ["W nulInCommit"]
        );
        lenient.set("badTreeSha1", "ignore").unwrap();
        assert_eq!(
            check_one(
                ObjectKind::Commit,
                format!("tree 12\nauthor {who}\ncommitter {who}\n").as_bytes(),
                &lenient
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn tags() {
        let strict = FsckOptions::new(true);
        let t = |s: String| check_one(ObjectKind::Tag, s.as_bytes(), &strict);
        let who = "T <t@x> 1 +0000";
        assert_eq!(
            t(format!(
                "object {ID}\ntype commit\ntag v1\ntagger {who}\n\nm\n"
            )),
            Vec::<String>::new()
        );
        assert_eq!(t("type commit\n".to_owned()), ["E missingObject"]);
        assert_eq!(
            t("object zz\ntype commit\n".to_owned()),
            ["E badObjectSha1"]
        );
        assert_eq!(t(format!("object {ID}\ntag v1\n")), ["E missingTypeEntry"]);
        assert_eq!(
            t(format!("object {ID}\ntype thing\ntag v1\n")),
            ["E badType"]
        );
        assert_eq!(
            t(format!("object {ID}\ntype commit\ntagger {who}\n")),
            ["E missingTagEntry"]
        );
        assert_eq!(
            t(format!(
                "object {ID}\ntype commit\ntag a..b\ntagger {who}\n"
            )),
            ["W badTagName"]
        );
        assert_eq!(
            t(format!("object {ID}\ntype commit\ntag v1\n\nm\n")),
            ["W missingTaggerEntry"]
        );
        assert_eq!(
            t(format!(
                "object {ID}\ntype commit\ntag v1\ntagger T t@x 1 +0000\n"
            )),
            ["E missingEmail"]
        );
    }

    #[test]
    fn tree_entries() {
        let strict = FsckOptions::new(true);
        let t = |entries: &[(&str, &str)]| check_one(ObjectKind::Tree, &tree(entries), &strict);
        assert_eq!(
            t(&[("100644", "a"), ("40000", "b"), ("100755", "c")]),
            Vec::<String>::new()
        );
        assert_eq!(t(&[("0100644", "a")]), ["E zeroPaddedFilemode"]);
        assert_eq!(t(&[("100644", "b"), ("100644", "a")]), ["E treeNotSorted"]);
        assert_eq!(
            t(&[("100644", "a"), ("100644", "a")]),
            ["E duplicateEntries"]
        );
        // A file and a directory of the same name, apart.
        assert_eq!(
            t(&[("100644", "foo"), ("100644", "foo.bar"), ("40000", "foo")]),
            ["E duplicateEntries"]
        );
        // A directory sorts as `name/`.
        assert_eq!(t(&[("40000", "a"), ("100644", "a.b")]), ["E treeNotSorted"]);
        assert_eq!(
            t(&[("100644", "a.b"), ("40000", "a")]),
            Vec::<String>::new()
        );
        assert_eq!(t(&[("100644", ".git")]), ["E hasDotgit"]);
        assert_eq!(t(&[("100644", ".GIT")]), ["E hasDotgit"]);
        assert_eq!(t(&[("100644", ".g\u{200c}it")]), ["E hasDotgit"]);
        assert_eq!(t(&[("100644", "git~1")]), ["E hasDotgit"]);
        assert_eq!(t(&[("100644", ".git. .")]), ["E hasDotgit"]);
        assert_eq!(t(&[("100644", "a\\.git")]), ["E hasDotgit"]);
        assert_eq!(t(&[("100644", ".gitx")]), Vec::<String>::new());
        assert_eq!(t(&[("100644", "..")]), ["E hasDotdot"]);
        assert_eq!(t(&[("100644", ".")]), ["E hasDot"]);
        assert_eq!(t(&[("100644", "a/b")]), ["E fullPathname"]);
        assert_eq!(t(&[("100664", "a")]), ["W badFilemode"]);
        assert_eq!(t(&[("120000", ".gitmodules")]), ["E gitmodulesSymlink"]);
        assert_eq!(t(&[("120000", "gi7eba~1")]), ["E gitmodulesSymlink"]);
        assert_eq!(t(&[("120000", ".gitignore")]), ["W gitignoreSymlink"]);
        assert_eq!(t(&[("100644", "")]), ["E badTree"]);
        assert_eq!(
            check_one(ObjectKind::Tree, b"100644 a\0short", &strict),
            ["E badTree"]
        );
        let mut null = b"100644 a\0".to_vec();
        null.extend([0; 20]);
        assert_eq!(check_one(ObjectKind::Tree, &null, &strict), ["E nullSha1"]);
        // Not strict: warnings stay warnings.
        let lenient = FsckOptions::new(false);
        assert_eq!(
            check_one(ObjectKind::Tree, &tree(&[("0100644", "a")]), &lenient),
            ["W zeroPaddedFilemode"]
        );
        assert_eq!(
            check_one(ObjectKind::Tree, &tree(&[("100664", "a")]), &lenient),
            Vec::<String>::new()
        );
    }

    #[test]
    fn gitmodules_blobs() {
        let strict = FsckOptions::new(true);
        let blob = ObjectId::from_hex_in(
            b"2222222222222222222222222222222222222222",
            ObjectFormat::Sha1,
        )
        .unwrap();
        let tree_id = ObjectId::from_hex_in(
            b"3333333333333333333333333333333333333333",
            ObjectFormat::Sha1,
        )
        .unwrap();
        let mut tree = b"100644 .gitmodules\0".to_vec();
        tree.extend_from_slice(blob.as_bytes());
        let judge = |content: &[u8]| {
            let mut fsck = Fsck::new(&strict);
            let mut findings = Vec::new();
            assert!(!fsck.check(&tree_id, ObjectKind::Tree, &tree, &mut findings));
            let refused = fsck.finish(
                |id| (*id == blob).then(|| (ObjectKind::Blob, content.to_vec())),
                &mut findings,
            );
            assert_eq!(refused, findings.iter().any(|f| f.is_error));
            findings.iter().map(|f| f.msg_id.name()).collect::<Vec<_>>()
        };
        assert_eq!(
            judge(b"[submodule \"a\"]\n\turl = ./a\n\tpath = a\n"),
            Vec::<&str>::new()
        );
        assert_eq!(
            judge(b"[submodule \"a/../..\"]\n\turl = ./a\n"),
            ["gitmodulesName"]
        );
        assert_eq!(
            judge(b"[submodule \"a\"]\n\turl = --upload-pack=x\n"),
            ["gitmodulesUrl"]
        );
        assert_eq!(
            judge(b"[submodule \"a\"]\n\turl = https://h/%0a\n"),
            ["gitmodulesUrl"]
        );
        assert_eq!(
            judge(b"[submodule \"a\"]\n\turl = ../../../x\n"),
            Vec::<&str>::new()
        );
        assert_eq!(
            judge(b"[submodule \"a\"]\n\turl = ./../../:x\n"),
            ["gitmodulesUrl"]
        );
        assert_eq!(
            judge(b"[submodule \"a\"]\n\tpath = --x\n"),
            ["gitmodulesPath"]
        );
        assert_eq!(
            judge(b"[submodule \"a\"]\n\tupdate = !sh\n"),
            ["gitmodulesUpdate"]
        );
        assert_eq!(judge(b"[submodule"), ["gitmodulesParse"]);
        // Not in the push nor in the repository.
        let mut fsck = Fsck::new(&strict);
        let mut findings = Vec::new();
        fsck.check(&tree_id, ObjectKind::Tree, &tree, &mut findings);
        assert!(fsck.finish(|_| None, &mut findings));
        assert_eq!(findings[0].msg_id, MsgId::GitmodulesMissing);
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
