//! What the rounds of a race saw: the counts of each outcome and each
//! violation, and the checks of every listing a reader made.

use super::plan::Plan;
use super::tools::{Reader, Tool};
use super::Race;
use std::collections::BTreeMap;

/// What the rounds of a race saw.
#[derive(Debug, Default)]
pub struct Tally {
    pub rounds: usize,
    pub acknowledged: usize,
    pub refused: usize,
    /// Writes refused for a reason other than a lock another process
    /// held: the writer misread a ref only it changes.
    pub false_refusals: usize,
    pub packer_failures: usize,
    /// refstore's packings that failed for another reason than a lock held
    /// by the writer (judged: a racing write is no reason to fail).
    pub packer_errors: usize,
    pub listings: usize,
    /// Rounds in which an acknowledged deletion was undone.
    pub rounds_losing_deletions: usize,
    pub lost_deletions: usize,
    /// Acknowledged updates and creations not found afterwards.
    pub lost_updates: usize,
    /// Rounds in which some listing missed a ref that existed throughout.
    pub rounds_missing_refs: usize,
    pub listings_missing_refs: usize,
    /// Listed or final values nobody wrote.
    pub bad_values: usize,
    pub reader_errors: usize,
    /// git 2.39's listings that stopped at a ref deleted while they ran
    /// (it reads such a ref as broken and fails): git's own behaviour,
    /// counted, not judged.
    pub git_broken_ref_failures: usize,
    /// Writes whose writer did not know whether it wrote (JGit's I/O
    /// errors): neither acknowledged nor judged, and shown.
    pub unknown_outcomes: usize,
    /// JGit's writes and compactions that found the lock held or the stack
    /// changed and tried again: how often JGit met the other process.
    pub jgit_retried: usize,
    /// The first few violations, described.
    pub examples: Vec<String>,
    /// Why the first refused write and the first failed packing failed.
    pub first_refusal: Option<String>,
    pub first_packer_failure: Option<String>,
    /// Why the first write of unknown outcome failed.
    pub first_unknown_outcome: Option<String>,
}

impl Tally {
    pub fn violations(&self) -> usize {
        self.lost_deletions
            + self.false_refusals
            + self.lost_updates
            + self.listings_missing_refs
            + self.bad_values
            + self.reader_errors
            + self.packer_errors
    }

    pub(super) fn note(&mut self, example: String) {
        if self.examples.len() < 8 {
            self.examples.push(example);
        }
    }

    pub fn report(&self, race: &Race) -> String {
        format!(
            "{:?} packer={} writer={}: {} rounds ({} writes acknowledged, {} refused of which \
             {} not for a lock, {} packer failures), {} listings; acknowledged deletions undone: {} in {} rounds; \
             acknowledged updates lost: {}; listings missing a ref: {} in {} rounds; \
             impossible values: {}; reader failures: {} (and {} of git's listings stopped \
             at a ref deleted meanwhile); writes of unknown outcome: {}; JGit operations \
             retried: {}{}{}{}",
            race.format,
            race.packer.name(),
            race.writer.name(),
            self.rounds,
            self.acknowledged,
            self.refused,
            self.false_refusals,
            self.packer_failures,
            self.listings,
            self.lost_deletions,
            self.rounds_losing_deletions,
            self.lost_updates,
            self.listings_missing_refs,
            self.rounds_missing_refs,
            self.bad_values,
            self.reader_errors,
            self.git_broken_ref_failures,
            self.unknown_outcomes,
            self.jgit_retried,
            self.first_refusal
                .as_ref()
                .map_or(String::new(), |e| format!("; first refusal: {}", e.trim())),
            self.first_packer_failure
                .as_ref()
                .map_or(String::new(), |e| format!("; first packer failure: {}", e.trim())),
            self.first_unknown_outcome
                .as_ref()
                .map_or(String::new(), |e| format!("; first unknown outcome: {}", e.trim())),
        )
    }
}

/// True if git failed a listing on a ref the writer deletes, which it
/// found gone after listing its directory (git 2.39 then reads it as a
/// broken ref of the null id, and `show-ref` stops).
fn is_deleted_ref_broken(error: &str) -> bool {
    error.contains("bad ref refs/heads/gone/")
}

/// What one reader thread saw.
#[derive(Default)]
pub(super) struct ListingsSeen {
    pub(super) listings: usize,
    pub(super) missing: usize,
    pub(super) bad_values: usize,
    pub(super) errors: usize,
    pub(super) git_broken_refs: usize,
    pub(super) examples: Vec<String>,
}

impl ListingsSeen {
    pub(super) fn check(
        &mut self,
        reader: Reader,
        listing: Result<BTreeMap<String, String>, String>,
        plan: &Plan,
    ) {
        self.listings += 1;
        let listing = match listing {
            Ok(listing) => listing,
            Err(e) if reader == Reader::ShowRef(Tool::Git) && is_deleted_ref_broken(&e) => {
                self.git_broken_refs += 1;
                return;
            }
            Err(e) => {
                self.errors += 1;
                self.example(e);
                return;
            }
        };
        let missing: Vec<String> = Plan::throughout()
            .filter(|n| !listing.contains_key(n))
            .collect();
        if !missing.is_empty() {
            self.missing += 1;
            self.example(format!(
                "{} listed {} refs, missing {} that existed throughout, e.g. {}",
                reader.name(),
                listing.len(),
                missing.len(),
                missing[0]
            ));
        }
        for (name, id) in &listing {
            if !plan.value_ok(name, id) {
                self.bad_values += 1;
                self.example(format!("{} listed {name} at {id}", reader.name()));
            }
        }
    }

    fn example(&mut self, text: String) {
        if self.examples.len() < 4 {
            self.examples.push(text);
        }
    }
}
