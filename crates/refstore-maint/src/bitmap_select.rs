//! Which commits get a stored reachability bitmap.
//!
//! A reader counting the objects of a fetch walks from the wanted tips
//! until it meets commits with a stored bitmap, so what matters is that
//! every tip is one, or close to one. The choice made here:
//!
//! - every ref tip (a peeled tag's commit too), newest first, up to
//!   [`MAX_TIPS`] of them — a clone or a fetch of any ref then starts
//!   from a stored bitmap (past the cap, the memory of one uncompressed
//!   bitmap per tip would grow with the number of refs);
//! - along each tip's first-parent chain, every [`SPACING`]th commit, so
//!   that a walk from any commit of the history (a tip past the cap, a
//!   side branch merged in, a ref moved back) meets a stored bitmap
//!   within about that many commits. Chains are followed until they join
//!   one walked before, so shared history is spaced once.
//!
//! Only commits of the multi-pack-index can be chosen (a bitmap numbers
//! its objects); a tip that is not in it (a push stored loose) is passed
//! over for its first ancestor that is.

use crate::commit::Commit;
use std::collections::{HashMap, HashSet};

/// Ref tips given a bitmap of their own.
pub const MAX_TIPS: usize = 1000;
/// Commits between two chosen ones along a first-parent chain.
pub const SPACING: usize = 100;

/// The chosen commits, each once. `tips` are commit ids, `commits` the
/// history loaded from them, `in_midx` says whether a commit can be
/// chosen.
pub fn select(
    tips: &[Vec<u8>],
    commits: &HashMap<Vec<u8>, Commit>,
    in_midx: &dyn Fn(&[u8]) -> bool,
) -> Vec<Vec<u8>> {
    let mut tips: Vec<&Vec<u8>> = tips.iter().filter(|t| commits.contains_key(*t)).collect();
    tips.sort_by(|a, b| commits[*b].time.cmp(&commits[*a].time).then(a.cmp(b)));
    tips.dedup();
    let mut chosen: Vec<Vec<u8>> = Vec::new();
    let mut walked: HashSet<&[u8]> = HashSet::new();
    for (n, tip) in tips.iter().enumerate() {
        // A tip under the cap is chosen even where another chain passed
        // it (a tag on a branch's history).
        if n < MAX_TIPS && walked.contains(tip.as_slice()) && in_midx(tip) {
            if !chosen.contains(tip) {
                chosen.push((*tip).clone());
            }
            continue;
        }
        // Commits since the last choice on this chain, this one
        // included; a tip under the cap is due at once.
        let mut since = if n < MAX_TIPS { SPACING - 1 } else { 0 };
        let mut at: Option<&Vec<u8>> = Some(tip);
        while let Some(id) = at {
            if !walked.insert(id.as_slice()) {
                break;
            }
            if in_midx(id) {
                since += 1;
                if since >= SPACING {
                    chosen.push(id.clone());
                    since = 0;
                }
            }
            at = commits
                .get(id)
                .and_then(|c| c.parents.first())
                .filter(|p| commits.contains_key(*p));
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> Vec<u8> {
        let mut id = vec![0u8; 20];
        id[..4].copy_from_slice(&n.to_be_bytes());
        id
    }

    /// A linear history 0..len (0 the root), commit n at time n.
    fn linear(len: u32) -> HashMap<Vec<u8>, Commit> {
        (0..len)
            .map(|n| {
                let parents = if n == 0 { vec![] } else { vec![id(n - 1)] };
                (
                    id(n),
                    Commit {
                        tree: id(1 << 30),
                        parents,
                        time: u64::from(n),
                    },
                )
            })
            .collect()
    }

    #[test]
    fn tips_and_every_hundredth_commit_of_their_chains() {
        let commits = linear(250);
        let chosen = select(&[id(249)], &commits, &|_| true);
        assert_eq!(chosen, [id(249), id(149), id(49)]);
    }

    #[test]
    fn shared_history_is_spaced_once() {
        let mut commits = linear(250);
        // A branch of two commits forking from 200.
        commits.insert(
            id(1000),
            Commit {
                tree: id(1 << 30),
                parents: vec![id(200)],
                time: 1000,
            },
        );
        let chosen = select(&[id(249), id(1000)], &commits, &|_| true);
        // The newer tip first; its chain spaces the common history, the
        // other tip's stops where it joins it.
        assert_eq!(chosen, [id(1000), id(101), id(1), id(249)]);
    }

    #[test]
    fn a_tip_on_another_tips_chain_is_chosen_too() {
        let commits = linear(250);
        let chosen = select(&[id(249), id(180)], &commits, &|_| true);
        assert_eq!(chosen, [id(249), id(149), id(49), id(180)]);
    }

    #[test]
    fn a_tip_outside_the_index_passes_to_its_ancestor() {
        let commits = linear(10);
        let chosen = select(&[id(9)], &commits, &|c| c != id(9).as_slice());
        assert_eq!(chosen, [id(8)]);
    }
}
