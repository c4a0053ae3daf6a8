//! The reflog lines of a commit: which reflogs an update is logged in
//! (its ref, the symbolic ref it was reached through, HEAD), and the
//! appends, recorded in the [`Journal`] so that a failed commit can take
//! them back.

use super::journal::Journal;
use super::prepared::{CommitOptions, Locked};
use super::CommitError;
use crate::files::{reflog, FilesBackend};
use crate::transaction::Transaction;
use crate::RefName;
use refstore_fs::config::LogRefUpdates;
use refstore_fs::flush::FlushBatch;
use refstore_fs::FileKind;
use std::path::PathBuf;

impl FilesBackend {
    pub(super) fn logs_path(&self, name: &RefName) -> PathBuf {
        let base = if name.is_root_ref() {
            &self.git_dir
        } else {
            &self.common_dir
        };
        base.join("logs")
            .join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(name.as_bytes()))
    }

    /// Appends the reflog lines of one update: to the changed ref (unless it
    /// is deleted), to the symbolic ref it was reached through, and to HEAD
    /// when HEAD points at the changed ref.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn log_update(
        &self,
        l: &Locked,
        old: &crate::ObjectId,
        new: &crate::ObjectId,
        tx: &Transaction,
        options: &CommitOptions,
        head_target: &Option<RefName>,
        batch: &mut FlushBatch,
        journal: &mut Journal,
    ) -> Result<(), CommitError> {
        let mut names = Vec::new();
        if !new.is_null() {
            names.push(l.planned.target.clone());
        }
        names.extend(l.planned.via.clone());
        if head_target.as_ref() == Some(&l.planned.target) && l.planned.via.is_none() {
            names.push(RefName::new("HEAD").expect("valid"));
        }
        let line = reflog::line(old, new, &options.signature, tx.message.as_deref());
        for name in names {
            self.append_reflog(
                &name,
                &line,
                tx.create_reflog,
                options.log_updates,
                batch,
                journal,
            )?;
        }
        Ok(())
    }

    /// Appends a line to HEAD's reflog only, if the update involves HEAD
    /// (names it, or changes the ref HEAD points at).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn log_head_only(
        &self,
        l: &Locked,
        old: &crate::ObjectId,
        new: &crate::ObjectId,
        message: Option<&str>,
        options: &CommitOptions,
        head_target: &Option<RefName>,
        batch: &mut FlushBatch,
        journal: &mut Journal,
    ) -> Result<(), CommitError> {
        let via_head = l
            .planned
            .via
            .as_ref()
            .is_some_and(|v| v.as_bytes() == b"HEAD");
        let points_at_target =
            l.planned.via.is_none() && head_target.as_ref() == Some(&l.planned.target);
        if !via_head && !points_at_target {
            return Ok(());
        }
        let line = reflog::line(old, new, &options.signature, message);
        let head = RefName::new("HEAD").expect("valid");
        // The update's own create-reflog flag does not apply to HEAD.
        self.append_reflog(&head, &line, false, options.log_updates, batch, journal)
    }

    pub(super) fn append_reflog(
        &self,
        name: &RefName,
        line: &[u8],
        force_create: bool,
        policy: LogRefUpdates,
        batch: &mut FlushBatch,
        journal: &mut Journal,
    ) -> Result<(), CommitError> {
        let path = self.logs_path(name);
        let create = force_create || reflog::autocreates(policy, name.as_bytes());
        // The length before the append, so that a failed transaction can
        // cut its line off again.
        let previous = match self.vfs.stat(&path) {
            Ok(m) if m.kind == FileKind::File => Some(m.len),
            Ok(_) => None,
            Err(e) if e.is_not_found() || e.raw_os_error() == Some(20) => None,
            Err(e) => return Err(e.into()),
        };
        if !create && previous.is_none() {
            return Ok(());
        }
        let parent = path.parent().expect("logs have a directory");
        batch.create_dir_all(parent)?;
        batch.dir_changed(parent);
        let mut file = self.vfs.open_append(&path)?;
        journal
            .appended
            .push((path.clone(), previous, line.len() as u64, journal.update));
        file.write_all(line)?;
        batch.stage(file)?;
        Ok(())
    }
}
