//! The near-duplicate scan over candidate pairs (lsh mode, and
//! `dedup_near_dups_among`): the window scan's election
//! ([`crate::core::near_dups`]) run over the pairs a [`Candidates`] source
//! hands out for each row instead of the rows of a window, with either the
//! reference's chain election or the direct one ([`Election`]). Texts are
//! read on demand, kept in a bounded cache between groups.
//!
//! Cost: the pairs the source hands out, each through the exact bounds
//! first and the LCS kernel only when they let it through; memory holds the
//! text cache, not the table.
//!
//! Reference: the chain election is the reference's window election run
//! over candidate pairs; the direct one is this project's (each removal's
//! survivor is verified near it).

use crate::core::candidates::Candidates;
use crate::core::halt::Halt;
use crate::core::measure::Measure;
use crate::core::near_dups::{
    elect, verified, verify, within_bounds, Profile, Removal, ScanStats, Text,
};
use crate::core::pair_ahead::{look_ahead, Ahead, LookAhead, Pending, ScanState, CHUNK_ANCHORS};
use crate::core::pair_texts::{bounded_pairs, Held, Known, TextCache};
use crate::core::pools::pool;
use crate::core::workers::Workers;

/// Runs the same election over candidate pairs instead of a window: `rows`
/// (`id`, `rank`) are in scan order and each live row is compared with the
/// live rows after it that `candidates` hands out for it. With every pair
/// within `distance` rows this is the window scan
/// ([`crate::core::near_dups::scan_sequential`]); with every pair of the table it
/// is the window scan with an unbounded window. Texts are read on demand
/// through `text` (index -> text, `None` for a placeholder): each row once
/// for its length and histogram, then again only for pairs the exact
/// filters let through (once when they are still cached). Memory holds the
/// candidates, a profile per row read and not yet passed by the scan (nor
/// removed), their texts up to 64 MiB, and one group's texts.
/// Stops as the window scan does.
pub fn scan_pairs<E: From<Halt>>(
    rows: &[(i64, i64)],
    candidates: impl Candidates,
    threshold: f64,
    text: impl FnMut(usize) -> Result<Option<String>, E>,
    poll: &mut dyn FnMut() -> bool,
) -> Result<(Vec<Removal>, ScanStats), E> {
    scan_pairs_with(
        rows,
        candidates,
        (threshold, &Measure::Levenshtein),
        Election::Chain,
        text,
        poll,
    )
}

/// How a group's winner removes the other rows of its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Election {
    /// As the reference's window scan: every row near the anchor goes to
    /// the group's best row, which a later group may remove in turn: a
    /// removed row's final survivor can drift below the threshold.
    Chain,
    /// No drift: a row goes only to a winner it is itself verified near
    /// (the kernel compares it with the winner when the winner is not the
    /// anchor), and a winner is never removed afterwards. So every removed
    /// row's final survivor is its survivor, above the threshold. With the
    /// rows scanned in election order ([`election_order`]) every anchor
    /// still standing wins over each later row verified near it (greedy
    /// stars, best rank first), so no two survivors are a near candidate
    /// pair: a second run over the survivors removes nothing.
    Direct,
}

impl Election {
    /// Every word, as the `lsh_election` setting and `near_dups_among`'s
    /// argument take them.
    pub const WORDS: &'static [&'static str] = &["chain", "direct"];

    /// The word of this election.
    pub fn as_str(self) -> &'static str {
        match self {
            Election::Chain => "chain",
            Election::Direct => "direct",
        }
    }

    /// The election a word names, if any.
    pub fn from_word(word: &str) -> Option<Self> {
        match word {
            "chain" => Some(Election::Chain),
            "direct" => Some(Election::Direct),
            _ => None,
        }
    }
}

/// The rows' indices in election order: by rank, then by index (scan
/// order). [`Election::Direct`] scans rows in this order.
///
/// ```
/// use dedup::core::pair_scan::election_order;
/// assert_eq!(election_order(&[(10, 3), (11, 1), (12, 3), (13, 2)]), [1, 3, 0, 2]);
/// ```
pub fn election_order(rows: &[(i64, i64)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&k| (rows[k].1, k));
    order
}

/// [`scan_pairs`] with the election and the measure chosen: a pair is near
/// when its measure is above the threshold.
pub fn scan_pairs_with<E: From<Halt>>(
    rows: &[(i64, i64)],
    candidates: impl Candidates,
    near: (f64, &Measure),
    election: Election,
    text: impl FnMut(usize) -> Result<Option<String>, E>,
    poll: &mut dyn FnMut() -> bool,
) -> Result<(Vec<Removal>, ScanStats), E> {
    // (Under Levenshtein, with threads to spare: the verdicts of each chunk
    // of anchors found on them first, see crate::core::pair_ahead.)
    let spare = pool().map_or(0, |p| p.current_num_threads().saturating_sub(1));
    let workers = match near.1 {
        Measure::Levenshtein if spare > 0 => Workers::start(spare),
        _ => None,
    };
    let ahead = workers.as_ref().map(|workers| LookAhead {
        workers,
        anchors: CHUNK_ANCHORS,
    });
    scan_pairs_on(ahead, rows, candidates, near, election, text, poll)
}

/// [`scan_pairs_with`], looking ahead on `look`'s workers or not: the same
/// results.
fn scan_pairs_on<E: From<Halt>>(
    look: Option<LookAhead<'_>>,
    rows: &[(i64, i64)],
    mut candidates: impl Candidates,
    (threshold, measure): (f64, &Measure),
    election: Election,
    mut text: impl FnMut(usize) -> Result<Option<String>, E>,
    poll: &mut dyn FnMut() -> bool,
) -> Result<(Vec<Removal>, ScanStats), E> {
    let mut pinned = vec![
        false;
        if election == Election::Direct {
            rows.len()
        } else {
            0
        }
    ];
    let mut alive = vec![true; rows.len()];
    let mut known: Vec<Known> = (0..rows.len()).map(|_| Known::Unread).collect();
    let mut stats = ScanStats {
        rows: rows.len() as u64,
        ..ScanStats::default()
    };
    let mut removed = Vec::new();
    // Texts read for this group and kept for the next ones, by row index.
    let mut texts = TextCache::new(rows.len());
    let mut later = Vec::new();
    let mut ahead: Option<Ahead> = None;
    let mut next: Option<Pending> = None;
    let mut threats = vec![0; if look.is_some() { rows.len() } else { 0 }];
    for i in 0..rows.len() {
        if i > 0 {
            // No later anchor compares an earlier row: its profile and text go.
            known[i - 1] = Known::Passed;
            texts.remove(i - 1);
        }
        if let Some(look) = look.filter(|_| ahead.as_ref().is_none_or(|a| i >= a.end)) {
            // This chunk: the one the workers compare already, or one looked
            // at now; then the next, looked at while the workers compare.
            // (The chunks' texts stay until the scan passes them.)
            let chunk = (threshold, measure);
            let mut look_at = |start: usize| {
                texts.trim();
                let held = Held {
                    alive: &mut alive,
                    known: &mut known,
                    texts: &mut texts,
                };
                let state = ScanState {
                    held,
                    threats: &mut threats,
                };
                let span = (i, start, rows.len());
                look_ahead(look, span, &mut candidates, state, &mut text, chunk)
            };
            let this = match next.take() {
                Some(pending) => pending,
                None => look_at(i)?,
            };
            if this.end() < rows.len() {
                next = Some(look_at(this.end())?);
            }
            ahead = Some(this.wait(poll)?);
        }
        if !alive[i] {
            continue;
        }
        match &mut ahead {
            Some(chunk) => later = chunk.take_later(i),
            None => {
                later.clear();
                candidates.later(i, &mut later);
                later.sort_unstable();
                later.dedup();
            }
        }
        later.retain(|&j| alive[j]);
        if later.is_empty() {
            continue;
        }
        if ahead.is_none() {
            texts.trim();
        }
        let held = Held {
            alive: &mut alive,
            known: &mut known,
            texts: &mut texts,
        };
        let near = (threshold, measure);
        let Some(candidates) = bounded_pairs(i, &later, held, &mut text, near, &mut stats)? else {
            continue;
        };
        if candidates.is_empty() {
            continue;
        }
        for k in std::iter::once(i).chain(candidates.iter().map(|c| c.0)) {
            if !texts.has(k) {
                // A row read live earlier: its text was let go.
                texts.insert(k, Text::measured(text(k)?.unwrap_or_default(), measure)?);
            }
        }
        let found = ahead.as_ref().and_then(|a| a.outcomes(i, &candidates));
        let near = match found {
            Some(outcomes) => verified(&candidates, &outcomes, &mut stats),
            None => verify(
                texts.get(i),
                &candidates,
                |j| texts.get(j),
                threshold,
                &mut stats,
                poll,
            )?,
        };
        let member = |k: usize| (rows[k].0, rows[k].1, k as u64);
        let gone = match election {
            Election::Chain => elect(i, &near, member, &mut removed),
            Election::Direct => {
                let profile = |k: usize| match &known[k] {
                    Known::Live(p) => Some(p),
                    _ => None,
                };
                let near_best = |m: usize, best: usize, stats: &mut ScanStats| {
                    near_pair(
                        texts.get(m),
                        texts.get(best),
                        (profile(m), profile(best)),
                        threshold,
                        stats,
                        poll,
                    )
                };
                elect_direct(
                    i,
                    &near,
                    member,
                    &mut pinned,
                    near_best,
                    &mut stats,
                    &mut removed,
                )?
            }
        };
        for k in gone {
            alive[k] = false;
            known[k] = Known::Passed;
            texts.remove(k);
        }
    }
    Ok((removed, stats))
}

/// The ratio of two texts if above `threshold` (the exact bounds first,
/// then the kernel), counted in `stats`.
fn near_pair(
    a: &Text,
    b: &Text,
    profiles: (Option<&Profile>, Option<&Profile>),
    threshold: f64,
    stats: &mut ScanStats,
    poll: &mut dyn FnMut() -> bool,
) -> Result<Option<f64>, Halt> {
    let (Some(pa), Some(pb)) = profiles else {
        return Ok(None);
    };
    let Some((total, max)) = within_bounds(pa, pb, threshold, stats) else {
        return Ok(None);
    };
    let near = verify(b, &[(0, total, max)], |_| a, threshold, stats, poll)?;
    Ok(near.first().map(|&(_, r)| r))
}

/// [`Election::Direct`]: the best row of the anchor's group (by rank, then
/// position) wins and is pinned; every other row of the group goes to it
/// only when verified near it (rows near the anchor are, when the anchor
/// wins; otherwise `near_best` compares them), and pinned rows stay.
/// Returns the rows removed.
fn elect_direct(
    anchor: usize,
    near: &[(usize, f64)],
    member: impl Fn(usize) -> (i64, i64, u64),
    pinned: &mut [bool],
    mut near_best: impl FnMut(usize, usize, &mut ScanStats) -> Result<Option<f64>, Halt>,
    stats: &mut ScanStats,
    removed: &mut Vec<Removal>,
) -> Result<Vec<usize>, Halt> {
    if near.is_empty() {
        return Ok(Vec::new());
    }
    let order = |k: usize| {
        let (_, rank, position) = member(k);
        (rank, position)
    };
    let mut best = anchor;
    for &(j, _) in near {
        if order(j) < order(best) {
            best = j;
        }
    }
    pinned[best] = true;
    let survivor = member(best).0;
    let anchor_id = member(anchor).0;
    let with_anchor = |k: usize| near.iter().find(|(j, _)| *j == k).map(|&(_, r)| r);
    let mut out = Vec::with_capacity(near.len());
    for m in std::iter::once(anchor).chain(near.iter().map(|&(j, _)| j)) {
        if m == best || pinned[m] {
            continue;
        }
        let ratio = if best == anchor {
            with_anchor(m)
        } else if m == anchor {
            with_anchor(best)
        } else {
            near_best(m, best, stats)?
        };
        if let Some(ratio) = ratio {
            removed.push(Removal {
                id: member(m).0,
                survivor,
                anchor: anchor_id,
                ratio,
            });
            out.push(m);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::candidates::PairList;
    use crate::core::near_dups::scan_sequential;
    use crate::core::near_dups::tests::rows;
    use crate::core::similarity::lev_ratio;
    use proptest::prelude::*;

    fn candidates(rows: usize, pairs: &[(usize, usize)]) -> PairList {
        let mut c = PairList::new(rows);
        for &(a, b) in pairs {
            c.add(a, b);
        }
        c
    }

    fn pair_rows(texts: &[(&str, i64)]) -> Vec<(i64, i64)> {
        texts
            .iter()
            .enumerate()
            .map(|(i, (_, rank))| (i as i64 + 1, *rank))
            .collect()
    }

    fn scan_texts_by_pairs(
        texts: &[(&str, i64)],
        pairs: &[(usize, usize)],
        threshold: f64,
    ) -> (Vec<Removal>, ScanStats) {
        scan_pairs(
            &pair_rows(texts),
            candidates(texts.len(), pairs),
            threshold,
            |k| Ok::<_, Halt>(Some(texts[k].0.to_string())),
            &mut || false,
        )
        .unwrap()
    }

    #[test]
    fn pairs_reach_rows_any_distance_apart() {
        let texts = [
            ("syndicated article text", 1),
            ("unrelated words", 0),
            ("another page", 0),
            ("syndicated article text!", 0),
        ];
        let window = scan_sequential(rows(&texts), 0.9, 2, &mut || false).unwrap();
        assert!(window.0.is_empty());
        let (removed, stats) = scan_texts_by_pairs(&texts, &[(3, 0), (0, 3), (1, 2)], 0.9);
        assert_eq!(
            removed,
            vec![Removal {
                id: 1,
                survivor: 4,
                anchor: 1,
                ratio: lev_ratio(texts[0].0, texts[3].0)
            }]
        );
        // The repeated pair is compared once; the unrelated pair is rejected.
        assert_eq!((stats.pairs, stats.matches), (2, 1));
    }

    #[test]
    fn pairs_skip_placeholders_and_removed_rows_and_pass_errors_on() {
        let rows = [(1, 0), (2, 1), (3, 2)];
        let texts = [Some("same text"), None, Some("same text")];
        let mut reads = Vec::new();
        let (removed, stats) = scan_pairs(
            &rows,
            candidates(3, &[(0, 1), (1, 2), (0, 2)]),
            0.9,
            |k| {
                reads.push(k);
                Ok::<_, Halt>(texts[k].map(String::from))
            },
            &mut || false,
        )
        .unwrap();
        assert_eq!(removed.iter().map(|r| r.id).collect::<Vec<_>>(), vec![3]);
        assert_eq!(stats.pairs, 1);
        // Row 2 (index 1) is a placeholder: read once, never compared again.
        assert_eq!(reads, vec![0, 1, 2]);
        let failing = scan_pairs(
            &rows,
            candidates(3, &[(0, 2)]),
            0.9,
            |_| Err::<Option<String>, _>(Halt::Stopped),
            &mut || false,
        );
        assert_eq!(failing.unwrap_err(), Halt::Stopped);
    }

    #[test]
    fn pair_scan_reads_each_text_once_when_the_bounds_decide() {
        let texts = ["aaaa bbbb cccc", "zz", "aaaa bbbb cccd", "q", "zy"];
        let rows: Vec<(i64, i64)> = (0..5).map(|i| (i + 1, 0)).collect();
        let all: Vec<(usize, usize)> = (0..5)
            .flat_map(|i| (i + 1..5).map(move |j| (i, j)))
            .collect();
        let mut reads = vec![0; 5];
        let (removed, stats) = scan_pairs(
            &rows,
            candidates(5, &all),
            0.9,
            |k| {
                reads[k] += 1;
                Ok::<_, Halt>(Some(texts[k].to_string()))
            },
            &mut || false,
        )
        .unwrap();
        assert_eq!(removed.iter().map(|r| r.id).collect::<Vec<_>>(), vec![3]);
        // Rows 0 and 2 reach the kernel while their texts are still held;
        // rows 1 and 4 meet again as anchor and neighbour after their texts
        // were dropped: the profiles decide without reading them.
        assert_eq!(reads, vec![1, 1, 1, 1, 1]);
        // 10 pairs, less the three row 2 would join after its removal.
        assert_eq!((stats.pairs, stats.levenshtein, stats.matches), (7, 1, 1));
    }

    #[test]
    fn a_text_the_bounds_rejected_is_not_read_again_for_a_later_anchor() {
        let texts = ["zzzzzzzz", "abcdefgh", "abcdefgx"];
        let rows: Vec<(i64, i64)> = (0..3).map(|i| (i + 1, 0)).collect();
        let mut reads = vec![0; 3];
        let (removed, stats) = scan_pairs(
            &rows,
            candidates(3, &[(0, 2), (1, 2)]),
            0.8,
            |k| {
                reads[k] += 1;
                Ok::<_, Halt>(Some(texts[k].to_string()))
            },
            &mut || false,
        )
        .unwrap();
        // Row 2 is read with anchor 0 (rejected by the histogram), then
        // compared by the kernel with anchor 1 from the cache.
        assert_eq!((stats.rejected_by_histogram, stats.levenshtein), (1, 1));
        // Equal ranks: the earlier row (id 2) survives.
        assert_eq!(
            removed
                .iter()
                .map(|r| (r.id, r.survivor))
                .collect::<Vec<_>>(),
            vec![(3, 2)]
        );
        assert_eq!(reads, vec![1, 1, 1]);
    }

    proptest! {
        #[test]
        fn pairs_within_the_distance_give_the_window_scan(
            texts in proptest::collection::vec(("[ab]{0,3}[a-c]{0,6}", 0i64..4), 0..14),
            threshold in prop_oneof![Just(0.5), Just(0.6), Just(0.75), Just(0.8), Just(0.9)],
            distance in 0usize..16,
        ) {
            let texts: Vec<(&str, i64)> = texts.iter().map(|(t, r)| (t.as_str(), *r)).collect();
            let n = texts.len();
            // Listed from the far end, both orders: the scan must not depend on it.
            let pairs: Vec<(usize, usize)> = (0..n)
                .flat_map(|i| (i + 1..n.min(i + distance + 1)).map(move |j| (j, i)))
                .rev()
                .chain((0..n).filter(|i| i % 3 == 0).map(|i| (i, n.min(i + distance + 1) - 1)))
                .filter(|(a, b)| a != b)
                .collect();
            let expected = scan_sequential(rows(&texts), threshold, distance, &mut || false).unwrap().0;
            prop_assert_eq!(scan_texts_by_pairs(&texts, &pairs, threshold).0, expected);
        }
    }

    proptest! {
        /// The direct election never drifts: every removed row's survivor
        /// stays (so it is the final survivor), and their ratio (by
        /// lev_ratio, itself tested against python-Levenshtein) is above the
        /// threshold and is the ratio reported. (The chain election fails
        /// this: checked by running it with Election::Chain.)
        #[test]
        fn the_direct_election_keeps_every_removed_row_near_its_final_survivor(
            texts in proptest::collection::vec(("[ab]{0,3}[a-c]{0,6}", 0i64..4), 0..14),
            threshold in prop_oneof![Just(0.5), Just(0.6), Just(0.75), Just(0.8), Just(0.9)],
            density in 1usize..4,
        ) {
            let texts: Vec<(&str, i64)> = texts.iter().map(|(t, r)| (t.as_str(), *r)).collect();
            let n = texts.len();
            let pairs: Vec<(usize, usize)> = (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                .filter(|(i, j)| (i + j) % density == 0)
                .collect();
            let (removed, _) = scan_pairs_with(
                &pair_rows(&texts),
                candidates(n, &pairs),
                (threshold, &Measure::Levenshtein),
                Election::Direct,
                |k| Ok::<_, Halt>(Some(texts[k].0.to_string())),
                &mut || false,
            )
            .unwrap();
            let gone: std::collections::HashSet<i64> = removed.iter().map(|r| r.id).collect();
            for r in &removed {
                prop_assert!(!gone.contains(&r.survivor), "survivor {} was removed too", r.survivor);
                let (a, b) = (texts[r.id as usize - 1].0, texts[r.survivor as usize - 1].0);
                let ratio = lev_ratio(a, b);
                prop_assert!(ratio > threshold && (ratio - r.ratio).abs() < 1e-12, "{:?} {} {}", r, ratio, threshold);
            }
        }

        /// Under resemblance: pairs within the distance give the window
        /// scan by the same measure, and the direct election keeps every
        /// removed row above the threshold with its final survivor (by a
        /// plain set computation of the measure).
        #[test]
        fn resemblance_pairs_give_the_window_scan_and_direct_never_drifts(
            texts in proptest::collection::vec(("(a|b|cc|d )( ?(a|b|cc|d)){0,9}", 0i64..4), 0..14),
            threshold in prop_oneof![Just(0.2), Just(0.4), Just(0.6)],
            shingle in 1usize..4,
            distance in 0usize..16,
        ) {
            use crate::core::near_dups::{scan_measured, tests::plain_resemblance};
            let texts: Vec<(&str, i64)> = texts.iter().map(|(t, r)| (t.as_str(), *r)).collect();
            let n = texts.len();
            let measure = Measure::resemblance(shingle as i64, "").unwrap();
            let pairs: Vec<(usize, usize)> = (0..n)
                .flat_map(|i| (i + 1..n.min(i + distance + 1)).map(move |j| (j, i)))
                .collect();
            let scan = |election| scan_pairs_with(
                &pair_rows(&texts),
                candidates(n, &pairs),
                (threshold, &measure),
                election,
                |k| Ok::<_, Halt>(Some(texts[k].0.to_string())),
                &mut || false,
            ).unwrap().0;
            let window = scan_measured(rows(&texts), threshold, &measure, distance, &mut || false).unwrap().0;
            prop_assert_eq!(scan(Election::Chain), window);
            let removed = scan(Election::Direct);
            let gone: std::collections::HashSet<i64> = removed.iter().map(|r| r.id).collect();
            for r in &removed {
                prop_assert!(!gone.contains(&r.survivor));
                let (a, b) = (texts[r.id as usize - 1].0, texts[r.survivor as usize - 1].0);
                let ratio = plain_resemblance(a, b, shingle);
                prop_assert!(ratio > threshold && ratio == r.ratio, "{:?} {} {}", r, ratio, threshold);
            }
        }
    }

    /// A scan with look-ahead on `workers`, chunks of `anchors` anchors.
    fn scan_ahead_on(
        workers: &Workers,
        anchors: usize,
        texts: &[Option<String>],
        ranks: &[i64],
        pairs: &[(usize, usize)],
        threshold: f64,
        election: Election,
    ) -> Result<(Vec<Removal>, ScanStats), Halt> {
        let rows: Vec<(i64, i64)> = ranks
            .iter()
            .enumerate()
            .map(|(i, &r)| (i as i64 + 1, r))
            .collect();
        let look = Some(LookAhead { workers, anchors });
        scan_pairs_on(
            look,
            &rows,
            candidates(texts.len(), pairs),
            (threshold, &Measure::Levenshtein),
            election,
            |k| Ok::<_, Halt>(texts[k].clone()),
            &mut || false,
        )
    }

    proptest! {
        /// The look-ahead gives the sequential scan's removals and counts,
        /// whatever the chunk (one anchor to all of them), with both
        /// elections, placeholders among the rows and candidates repeated.
        #[test]
        fn the_look_ahead_gives_the_sequential_scan(
            rows in proptest::collection::vec((proptest::option::weighted(0.9, "[ab]{0,3}[a-c]{0,8}"), 0i64..4), 0..24),
            pairs in proptest::collection::vec((0usize..24, 0usize..24), 0..80),
            threshold in prop_oneof![Just(0.5), Just(0.6), Just(0.75), Just(0.9)],
            anchors in 1usize..6,
            direct in any::<bool>(),
        ) {
            let n = rows.len();
            let texts: Vec<Option<String>> = rows.iter().map(|(t, _)| t.clone()).collect();
            let ranks: Vec<i64> = rows.iter().map(|(_, r)| *r).collect();
            let pairs: Vec<(usize, usize)> = pairs.into_iter().filter(|&(a, b)| a < n && b < n && a != b).collect();
            let election = if direct { Election::Direct } else { Election::Chain };
            let rows_: Vec<(i64, i64)> = ranks.iter().enumerate().map(|(i, &r)| (i as i64 + 1, r)).collect();
            let sequential = scan_pairs_on(
                None,
                &rows_,
                candidates(n, &pairs),
                (threshold, &Measure::Levenshtein),
                election,
                |k| Ok::<_, Halt>(texts[k].clone()),
                &mut || false,
            )
            .unwrap();
            let workers = Workers::start(2).unwrap();
            let ahead = scan_ahead_on(&workers, anchors, &texts, &ranks, &pairs, threshold, election).unwrap();
            prop_assert_eq!(ahead, sequential);
        }
    }

    #[test]
    fn the_look_ahead_stops_when_asked_and_passes_read_errors_on() {
        let workers = Workers::start(2).unwrap();
        let texts: Vec<String> = (0..40).map(|i| format!("page {} text", i % 4)).collect();
        let rows: Vec<(i64, i64)> = (0..40).map(|i| (i + 1, 0)).collect();
        let pairs: Vec<(usize, usize)> = (0..39).map(|i| (i, i + 1)).collect();
        let look = Some(LookAhead {
            workers: &workers,
            anchors: 4,
        });
        let near = (0.5, &Measure::Levenshtein);
        // Asked to stop: stopped, with nothing returned.
        let stopped = scan_pairs_on(
            look,
            &rows,
            candidates(40, &pairs),
            near,
            Election::Chain,
            |k| Ok::<_, Halt>(Some(texts[k].clone())),
            &mut || true,
        );
        assert!(matches!(stopped, Err(Halt::Stopped)));
        // A read that fails, in a chunk looked at ahead: its error.
        #[derive(Debug, PartialEq)]
        enum ReadError {
            Halted,
            Failed(usize),
        }
        impl From<Halt> for ReadError {
            fn from(_: Halt) -> Self {
                ReadError::Halted
            }
        }
        let failed = scan_pairs_on(
            look,
            &rows,
            candidates(40, &pairs),
            near,
            Election::Chain,
            |k| {
                if k == 9 {
                    Err(ReadError::Failed(k))
                } else {
                    Ok(Some(texts[k].clone()))
                }
            },
            &mut || false,
        );
        assert_eq!(failed.unwrap_err(), ReadError::Failed(9));
    }
}
