//! What annotated tags peel to, remembered for the life of the process.
//!
//! A server advertises every tag's peeled value on every `ls-refs` and
//! checks them again for every fetch, and peeling one costs two object
//! reads (the tag inflated, its target looked up). What a tag peels to is
//! part of the tag's content, and its id is the hash of that content, so
//! the answer for one id never changes and holds in every repository:
//! once peeled, a tag is not read again while the memo remembers it. A
//! repository must still hold both the tag and its target for a
//! remembered answer to count there ([`crate::Odb::peel`] checks), so a
//! damaged repository answers as it would without the memo.
//!
//! Only tags that name a non-tag directly are remembered: a chain of tags
//! depends on every tag in it being present, which one lookup cannot
//! tell. The memo is bounded: two generations of [`GENERATION`] entries
//! each; when the young one is full the old one is dropped, so tags in use
//! stay and the memory held stays below a few megabytes.

use refstore_hash::ObjectId;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Entries per generation.
const GENERATION: usize = 1 << 15;

#[derive(Default)]
struct Memo {
    young: HashMap<ObjectId, ObjectId>,
    old: HashMap<ObjectId, ObjectId>,
}

fn memo() -> MutexGuard<'static, Memo> {
    static MEMO: OnceLock<Mutex<Memo>> = OnceLock::new();
    // Every update is one insertion or one swap of maps, so a panic while
    // the lock was held left nothing half done.
    MEMO.get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The object `tag` was remembered to name, if it was.
pub(crate) fn recall(tag: &ObjectId) -> Option<ObjectId> {
    let mut memo = memo();
    if let Some(target) = memo.young.get(tag) {
        return Some(*target);
    }
    let target = memo.old.get(tag).copied()?;
    remember_in(&mut memo, *tag, target);
    Some(target)
}

/// Remembers that the annotated tag `tag` names the non-tag `target`.
pub(crate) fn remember(tag: ObjectId, target: ObjectId) {
    remember_in(&mut memo(), tag, target);
}

fn remember_in(memo: &mut Memo, tag: ObjectId, target: ObjectId) {
    if memo.young.len() >= GENERATION {
        memo.old = std::mem::take(&mut memo.young);
    }
    memo.young.insert(tag, target);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> ObjectId {
        let mut bytes = [0u8; 20];
        bytes[..4].copy_from_slice(&n.to_be_bytes());
        ObjectId::from_raw(&bytes).unwrap()
    }

    #[test]
    fn remembers_within_two_generations_and_forgets_beyond() {
        // Ids far from those other tests of this process use.
        let base = 0xA000_0000;
        remember(id(base), id(base + 1));
        assert_eq!(recall(&id(base)), Some(id(base + 1)));
        // Enough new entries to push the first one out of both
        // generations, recalling it once on the way (which keeps it young).
        for n in 1..=GENERATION as u32 {
            remember(id(base + 2 * n), id(base + 2 * n + 1));
        }
        assert_eq!(recall(&id(base)), Some(id(base + 1)));
        for n in GENERATION as u32 + 1..=3 * GENERATION as u32 {
            remember(id(base + 2 * n), id(base + 2 * n + 1));
        }
        assert_eq!(recall(&id(base)), None);
        let memo = memo();
        assert!(memo.young.len() <= GENERATION && memo.old.len() <= GENERATION);
    }
}
