//! Which of the last run's rows an incremental lsh scan needs: a kept row
//! (settled: the last run left no two of them near) is a candidate of a
//! new row only through a band key they share, so it can be removed or
//! remove another only if the exact bounds (lengths and character
//! histograms, kept in the index) let one of those pairs through. A kept
//! row no such pair reaches is in no near pair of the scan: the elections
//! never see it, so leaving it out of the scan changes nothing.
//!
//! Cost: per kept row, one pass over the rows that share its band keys, each
//! checked by the two bounds (no text read).
//!
//! Reference: the bounds are those of [`crate::core::near_dups`] (length
//! difference and character histograms bound the indel distance from
//! below).

use crate::core::window_prune::{may_be_near, PruneRow};

/// One band key shared by new and kept rows: the indices of the new rows
/// (in `fresh`) and of the kept rows (in `kept`) that hold it.
#[derive(Debug, Clone, Default)]
pub struct SharedKey {
    /// New rows holding the key.
    pub fresh: Vec<usize>,
    /// Kept rows holding the key.
    pub kept: Vec<usize>,
}

/// For each kept row, whether some new row sharing a key with it may be
/// near it by the bounds (a row of unknown length may be near anything;
/// without a histogram, the length bound alone decides). With a
/// `threshold` at or below 0 every kept row that shares a key is needed.
pub fn kept_rows_needed(
    fresh: &[PruneRow],
    kept: &[PruneRow],
    keys: &[SharedKey],
    threshold: f64,
) -> Vec<bool> {
    let mut need = vec![false; kept.len()];
    for key in keys {
        for &k in &key.kept {
            if need[k] {
                continue;
            }
            need[k] = key
                .fresh
                .iter()
                .any(|&f| threshold <= 0.0 || may_be_near(&kept[k], &fresh[f], threshold));
        }
    }
    need
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::similarity::{lev_ratio, CharHistogram};
    use proptest::prelude::*;

    fn row(text: Option<&str>, with_histogram: bool) -> PruneRow {
        PruneRow {
            placeholder: false,
            settled: Some(0),
            len: text.map(|t| t.chars().count()),
            histogram: text
                .filter(|_| with_histogram)
                .map(|t| Box::new(CharHistogram::new(t))),
        }
    }

    #[test]
    fn a_kept_row_is_needed_only_for_a_new_row_it_shares_a_key_with() {
        let fresh = [row(Some("the quick brown fox jumps"), true)];
        let kept = [
            // Near the new row, sharing a key: needed.
            row(Some("the quick brown fox jumped"), true),
            // Near it too, but no key in common: not a candidate.
            row(Some("the quick brown fox jumps!"), true),
            // Sharing a key, far by its length.
            row(Some("the"), true),
            // Sharing a key, same length, far by its characters.
            row(Some("zzzzzzzzzzzzzzzzzzzzzzzzz"), true),
            // Sharing a key, length unknown: may be near anything.
            row(None, false),
        ];
        let keys = [SharedKey {
            fresh: vec![0],
            kept: vec![0, 2, 3, 4],
        }];
        assert_eq!(
            kept_rows_needed(&fresh, &kept, &keys, 0.9),
            [true, false, false, false, true]
        );
        // Without its histogram, the far row of the same length is kept in.
        let kept = [row(Some("zzzzzzzzzzzzzzzzzzzzzzzzz"), false)];
        let keys = [SharedKey {
            fresh: vec![0],
            kept: vec![0],
        }];
        assert_eq!(kept_rows_needed(&fresh, &kept, &keys, 0.9), [true]);
        assert_eq!(
            kept_rows_needed(&fresh, &[row(Some("x"), true)], &keys, 0.0),
            [true]
        );
    }

    proptest! {
        /// Never leaves out a kept row that is near (by the ratio itself)
        /// a new row it shares a key with.
        #[test]
        fn every_kept_row_near_a_new_row_sharing_a_key_is_needed(
            fresh in proptest::collection::vec("[ab ]{0,12}", 1..6),
            kept in proptest::collection::vec("[abc ]{0,12}", 1..10),
            keys in proptest::collection::vec(
                (proptest::collection::vec(0usize..6, 0..3), proptest::collection::vec(0usize..10, 0..4)),
                0..6),
            threshold in prop_oneof![Just(0.0), Just(0.5), Just(0.8), Just(0.9), Just(1.0)],
        ) {
            let keys: Vec<SharedKey> = keys
                .into_iter()
                .map(|(f, k)| SharedKey {
                    fresh: f.into_iter().filter(|&i| i < fresh.len()).collect(),
                    kept: k.into_iter().filter(|&i| i < kept.len()).collect(),
                })
                .collect();
            let fresh_rows: Vec<PruneRow> = fresh.iter().map(|t| row(Some(t), true)).collect();
            let kept_rows: Vec<PruneRow> = kept.iter().map(|t| row(Some(t), true)).collect();
            let need = kept_rows_needed(&fresh_rows, &kept_rows, &keys, threshold);
            for key in &keys {
                for &k in &key.kept {
                    for &f in &key.fresh {
                        let (a, b) = (kept[k].as_str(), fresh[f].as_str());
                        // (Two empty texts: ratio 1.0, as python-Levenshtein's,
                        // so near below a threshold of 1.0 and apart at it.)
                        if lev_ratio(a, b) > threshold {
                            prop_assert!(need[k], "kept {a:?} near new {b:?} left out");
                        }
                    }
                }
            }
            // And a row that shares no key with a new row is never needed.
            for (k, &n) in need.iter().enumerate() {
                if n {
                    prop_assert!(keys.iter().any(|s| s.kept.contains(&k) && !s.fresh.is_empty()));
                }
            }
        }
    }
}
