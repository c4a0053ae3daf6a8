//! Which packs a geometric repack rolls up (`git repack --geometric=<f>`):
//! with the packs sorted by object count, the smallest ones that break the
//! progression where each pack holds at least `factor` times the objects
//! of the one before, plus any larger ones the combined pack would then
//! overtake.

/// Given object counts sorted ascending, how many of the first packs to
/// roll into one (0 or 1: nothing to combine).
pub fn split(counts: &[u64], factor: u64) -> usize {
    if counts.len() < 2 {
        return 0;
    }
    // From the largest pack down, find the first pair that breaks the
    // progression; everything up to and including its smaller pack rolls up.
    let mut split = 0;
    for i in (1..counts.len()).rev() {
        if counts[i] < factor.saturating_mul(counts[i - 1]) {
            split = i;
            break;
        }
    }
    if split == 0 {
        return 0;
    }
    // The pair's larger pack is out of progression too.
    let mut split = split + 1;
    let mut total: u64 = counts[..split.min(counts.len())].iter().sum();
    if split > counts.len() {
        split = counts.len();
    }
    // The new pack must not be followed by one less than `factor` times it.
    while split < counts.len() && counts[split] < factor.saturating_mul(total) {
        total += counts[split];
        split += 1;
    }
    split
}

/// True if `counts` (sorted ascending) is a geometric progression.
pub fn is_progression(counts: &[u64], factor: u64) -> bool {
    counts
        .windows(2)
        .all(|w| w[1] >= factor.saturating_mul(w[0]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_progression_is_left_alone() {
        assert_eq!(split(&[1, 2, 4, 8], 2), 0);
        assert_eq!(split(&[5], 2), 0);
        assert_eq!(split(&[], 2), 0);
    }

    #[test]
    fn small_packs_roll_up() {
        // 1,1,1 break the progression; their sum 3 is less than 16/2.
        assert_eq!(split(&[1, 1, 1, 16], 2), 3);
        // All equal: everything rolls up.
        assert_eq!(split(&[3, 3, 3, 3], 2), 4);
        // The rolled pack (1+1+3=5) would overtake 8/2: 8 joins.
        assert_eq!(split(&[1, 1, 3, 8, 100], 2), 4);
    }

    #[test]
    fn the_result_is_a_progression() {
        for n in 1..60u64 {
            let mut counts: Vec<u64> = (0..n).map(|i| 1 + (i * 7919) % 13).collect();
            counts.sort_unstable();
            let k = split(&counts, 2);
            let mut after: Vec<u64> = counts[k..].to_vec();
            if k > 0 {
                after.push(counts[..k].iter().sum());
            }
            after.sort_unstable();
            assert!(is_progression(&after, 2), "{counts:?} split {k}");
        }
    }
}
