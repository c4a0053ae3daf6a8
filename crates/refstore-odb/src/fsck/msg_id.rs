//! git's fsck message ids, each with its name as git spells it and its
//! default severity.

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
        pub(super) const MSG_IDS: &[(MsgId, &str, Severity)] = &[$((MsgId::$id, $camel, Severity::$severity),)*];
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

    pub(super) fn default_severity(self) -> Severity {
        MSG_IDS[self as usize].2
    }
}
