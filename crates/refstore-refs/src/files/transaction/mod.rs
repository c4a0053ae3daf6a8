//! Committing a transaction in the files format, durably, with two flush
//! points however many refs it touches.
//!
//! Preparing ([`FilesBackend::prepare`]):
//! 1. Resolve each update through symbolic refs (unless `no_deref`), reject
//!    duplicates, and run the batched availability check.
//! 2. Lock every ref (`<ref>.lock`, in the order given). A transaction that
//!    deletes a ref below `refs/` then locks `packed-refs` too, and holds it
//!    until its loose files are gone, whether or not the ref is packed (see
//!    [`packed_lock`](super::packed_lock)).
//! 3. Read `packed-refs` again (under its lock when held), so that every
//!    value is read after its lock was taken: check each old value, and
//!    write the new value into the lock file. A deleted ref found packed
//!    now is removed from a new `packed-refs`, written to
//!    `packed-refs.new`.
//!
//! Committing ([`Prepared::commit`]):
//! 4. Append the reflog lines, then flush point one: every written file is
//!    durable.
//! 5. Rename `packed-refs.new` onto `packed-refs` first (a crash then
//!    leaves a deleted ref's loose file, still its old value), then every
//!    ref lock onto its ref; remove deleted refs' files, reflogs and
//!    emptied directories, and only then release `packed-refs.lock`.
//! 6. Flush point two: every changed directory is durable. Only now is
//!    success reported.
//!
//! A failure before the first rename changes nothing: the reflog lines
//! already appended are cut off again and every lock is released. A failure
//! later leaves each ref old or new (as git does, the refs renamed before it
//! keep their new values), with reflog lines only for the refs that took
//! their new values. Removing a deleted ref's reflog or a lock file that
//! failed does not stop the other updates; it is reported at the end.
//!
//! The files follow the phases: `prepare` runs steps 1 to 3, with
//! `lock` (step 2) and `check` (the availability check and the old values
//! of step 3); `apply` runs steps 4 to 6, with `reflogs` writing the
//! reflog lines and `journal` taking them back on failure; `prepared`
//! holds the state between the two.

mod apply;
mod check;
mod journal;
mod lock;
mod prepare;
mod prepared;
mod reflogs;

pub use crate::error::CommitError;
pub use prepared::{CommitOptions, Prepared};

use super::FilesBackend;
use crate::transaction::{Outcome, Transaction};
use std::borrow::Cow;

impl FilesBackend {
    /// Commits `tx`. Atomic transactions fail as a whole with the first
    /// rejection; batch transactions report rejections in the outcome.
    pub fn commit(
        &self,
        tx: &Transaction,
        options: &CommitOptions,
    ) -> Result<Outcome, CommitError> {
        self.prepare(Cow::Borrowed(tx), options)?.commit()
    }
}
