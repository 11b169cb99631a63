//! Which later rows each row of a pair scan is compared with: listed pairs
//! ([`PairList`]) or the rows that share a key with it ([`SharedKeys`], e.g.
//! MinHash LSH band keys), handed out one anchor at a time.
//!
//! Cost: a [`PairList`] holds each distinct pair once (twice at most
//! between its clean-ups); [`SharedKeys`] sorts each group's (key, row)
//! entries once, O(e log e) for e entries, keeps only keys two rows share,
//! and hands out an anchor's candidates in time proportional to the rows
//! that share its keys.
//!
//! Reference: the banding of MinHash LSH (Leskovec, Rajaraman and Ullman,
//! *Mining of Massive Datasets*, section 3.4), whose candidate pairs
//! [`SharedKeys`] lists.

use std::collections::HashMap;

/// The candidates of a scan over rows `0..n` in scan order.
pub trait Candidates {
    /// Appends to `out` rows after `row` to compare with it (any order,
    /// repeats allowed). Called once per row, in increasing order.
    fn later(&mut self, row: usize, out: &mut Vec<usize>);
}

impl<C: Candidates + ?Sized> Candidates for &mut C {
    fn later(&mut self, row: usize, out: &mut Vec<usize>) {
        (**self).later(row, out);
    }
}

/// Candidate pairs listed one by one, kept by their earlier row; either
/// order and repeats are fine. Repeats are removed as the pairs arrive, so
/// memory holds the distinct pairs (twice at most), however often a pair
/// repeats.
#[derive(Debug, Clone, Default)]
pub struct PairList {
    ahead: Vec<Vec<usize>>,
    /// Length up to which `ahead[k]` may grow before its repeats are removed.
    limit: Vec<u32>,
}

impl PairList {
    /// No pairs yet among `rows` rows.
    pub fn new(rows: usize) -> Self {
        PairList {
            ahead: vec![Vec::new(); rows],
            limit: vec![16; rows],
        }
    }

    /// Adds the pair `a`, `b` (both below the row count; a row paired with
    /// itself is ignored).
    pub fn add(&mut self, a: usize, b: usize) {
        if a != b {
            let (lo, hi) = (a.min(b), a.max(b));
            let list = &mut self.ahead[lo];
            list.push(hi);
            if list.len() > self.limit[lo] as usize {
                list.sort_unstable();
                list.dedup();
                self.limit[lo] = u32::try_from(list.len() * 2).unwrap_or(u32::MAX).max(16);
            }
        }
    }
}

impl Candidates for PairList {
    fn later(&mut self, row: usize, out: &mut Vec<usize>) {
        if let Some(list) = self.ahead.get_mut(row) {
            out.append(list);
            *list = Vec::new();
        }
    }
}

/// Rows grouped by the keys they carry: two rows are candidates when they
/// share a `(group, key)` pair (for LSH: a band and its key). Only keys
/// carried by two rows or more are kept, as their members' row numbers, so
/// memory holds 8 bytes per shared key membership, not the pairs (a key of
/// `m` rows stands for `m (m - 1) / 2` pairs). The candidates of a row are
/// generated when the scan reaches it.
#[derive(Debug, Clone, Default)]
pub struct SharedKeys {
    /// The rows of each shared key, ascending, key after key.
    members: Vec<u32>,
    /// Where each key's rows start in `members` (one more entry than keys).
    key_starts: Vec<usize>,
    /// The keys of each row, row after row.
    row_keys: Vec<u32>,
    /// Where each row's keys start in `row_keys` (one more entry than rows).
    row_starts: Vec<usize>,
    /// The last anchor (plus one) each row was handed out for.
    seen: Vec<u32>,
}

/// Collects the keys of rows for [`SharedKeys`]: 16 bytes per entry until
/// [`SharedKeysBuilder::finish`].
#[derive(Debug, Clone, Default)]
pub struct SharedKeysBuilder {
    rows: usize,
    /// Groups `0..DENSE_GROUPS` (LSH bands), by number.
    dense: Vec<Vec<(i64, u32)>>,
    /// Other groups.
    sparse: HashMap<i64, Vec<(i64, u32)>>,
}

/// Groups the builder keeps by number rather than by hash.
const DENSE_GROUPS: i64 = 1024;

impl SharedKeysBuilder {
    /// No keys yet over `rows` rows (`rows` below `u32::MAX`).
    pub fn new(rows: usize) -> Self {
        assert!(rows < u32::MAX as usize, "rows are numbered in 32 bits");
        SharedKeysBuilder {
            rows,
            dense: Vec::new(),
            sparse: HashMap::new(),
        }
    }

    /// Row `row` (below the row count) carries `key` in `group`; a row
    /// repeated under one key counts once.
    pub fn add(&mut self, group: i64, key: i64, row: usize) {
        assert!(row < self.rows, "row {row} out of 0..{}", self.rows);
        let list = if (0..DENSE_GROUPS).contains(&group) {
            let g = group as usize;
            if self.dense.len() <= g {
                self.dense.resize_with(g + 1, Vec::new);
            }
            &mut self.dense[g]
        } else {
            self.sparse.entry(group).or_default()
        };
        list.push((key, row as u32));
    }

    /// Keeps the keys shared by two rows or more.
    pub fn finish(self) -> SharedKeys {
        let rows = self.rows;
        let mut members = Vec::new();
        let mut key_starts = vec![0];
        for mut list in self.dense.into_iter().chain(self.sparse.into_values()) {
            list.sort_unstable();
            list.dedup();
            for run in list.chunk_by(|x, y| x.0 == y.0) {
                if run.len() > 1 {
                    members.extend(run.iter().map(|&(_, row)| row));
                    key_starts.push(members.len());
                }
            }
        }
        assert!(
            key_starts.len() <= u32::MAX as usize,
            "keys are numbered in 32 bits"
        );
        // Row -> keys, by counting.
        let mut row_starts = vec![0usize; rows + 1];
        for &row in &members {
            row_starts[row as usize + 1] += 1;
        }
        for k in 1..=rows {
            row_starts[k] += row_starts[k - 1];
        }
        let mut next = row_starts.clone();
        let mut row_keys = vec![0u32; members.len()];
        for key in 0..key_starts.len() - 1 {
            for &row in &members[key_starts[key]..key_starts[key + 1]] {
                row_keys[next[row as usize]] = key as u32;
                next[row as usize] += 1;
            }
        }
        SharedKeys {
            members,
            key_starts,
            row_keys,
            row_starts,
            seen: vec![0; rows],
        }
    }
}

impl SharedKeys {
    /// Groups `entries` (`group`, `key`, `row`) over `rows` rows, as
    /// [`SharedKeysBuilder`] does.
    pub fn new(rows: usize, entries: impl IntoIterator<Item = (i64, i64, usize)>) -> Self {
        let mut builder = SharedKeysBuilder::new(rows);
        for (group, key, row) in entries {
            builder.add(group, key, row);
        }
        builder.finish()
    }

    /// How many keys are shared by two rows or more.
    pub fn shared_keys(&self) -> usize {
        self.key_starts.len() - 1
    }

    /// Pairs of rows that share a key, counted once per key they share.
    pub fn pairs_with_repeats(&self) -> u64 {
        self.key_starts
            .windows(2)
            .map(|w| {
                let m = (w[1] - w[0]) as u64;
                m * (m - 1) / 2
            })
            .sum()
    }
}

impl Candidates for SharedKeys {
    fn later(&mut self, row: usize, out: &mut Vec<usize>) {
        let Some(&end) = self.row_starts.get(row + 1) else {
            return;
        };
        let stamp = row as u32 + 1;
        for &key in &self.row_keys[self.row_starts[row]..end] {
            let key = key as usize;
            let rows = &self.members[self.key_starts[key]..self.key_starts[key + 1]];
            let after = rows.partition_point(|&r| r as usize <= row);
            for &r in &rows[after..] {
                if self.seen[r as usize] != stamp {
                    self.seen[r as usize] = stamp;
                    out.push(r as usize);
                }
            }
        }
    }
}

/// Candidates less the pairs of rows settled alike: a row with `Some(s)`
/// is known near no other row of the same `s` (an incremental run's rows
/// that the last run compared already), so such a pair is not handed out.
/// Counts the pairs it left out.
#[derive(Debug, Clone)]
pub struct SkipSettled<C> {
    inner: C,
    settled: Vec<Option<i64>>,
    /// Pairs left out so far.
    pub skipped: u64,
}

impl<C: Candidates> SkipSettled<C> {
    /// `inner`'s candidates over rows whose groups are `settled` (one per
    /// row, in scan order).
    pub fn new(inner: C, settled: Vec<Option<i64>>) -> Self {
        SkipSettled {
            inner,
            settled,
            skipped: 0,
        }
    }
}

impl<C: Candidates> Candidates for SkipSettled<C> {
    fn later(&mut self, row: usize, out: &mut Vec<usize>) {
        let start = out.len();
        self.inner.later(row, out);
        let Some(Some(group)) = self.settled.get(row).copied() else {
            return;
        };
        let mut kept = start;
        for k in start..out.len() {
            let other = out[k];
            if self.settled.get(other).copied().flatten() == Some(group) {
                self.skipped += 1;
            } else {
                out[kept] = other;
                kept += 1;
            }
        }
        out.truncate(kept);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all_later(c: &mut impl Candidates, rows: usize) -> Vec<Vec<usize>> {
        (0..rows)
            .map(|i| {
                let mut out = Vec::new();
                c.later(i, &mut out);
                out.sort_unstable();
                out.dedup();
                out
            })
            .collect()
    }

    #[test]
    fn pair_list_keeps_pairs_by_their_earlier_row() {
        let mut p = PairList::new(4);
        for (a, b) in [(3, 0), (0, 3), (1, 2), (2, 2)] {
            p.add(a, b);
        }
        assert_eq!(all_later(&mut p, 4), vec![vec![3], vec![2], vec![], vec![]]);
    }

    #[test]
    fn shared_keys_pair_rows_of_one_group_and_key() {
        // Band 0: rows 0, 2, 3 share key 7; band 1: rows 1, 3 share key 7;
        // key 9 of band 0 and key 7 of band 2 have one row each.
        let entries = [
            (0, 7, 0),
            (0, 7, 2),
            (0, 7, 3),
            (1, 7, 1),
            (1, 7, 3),
            (0, 9, 1),
            (2, 7, 0),
            (0, 7, 2),
        ];
        let mut s = SharedKeys::new(4, entries);
        assert_eq!(s.shared_keys(), 2);
        assert_eq!(s.pairs_with_repeats(), 3 + 1);
        assert_eq!(
            all_later(&mut s, 4),
            vec![vec![2, 3], vec![3], vec![3], vec![]]
        );
    }

    proptest! {
        /// Against the pairs of the naive self-join on (group, key).
        #[test]
        fn shared_keys_give_the_self_join(
            entries in proptest::collection::vec((0i64..3, 0i64..4, 0usize..12), 0..60),
        ) {
            let mut expected = vec![Vec::new(); 12];
            for &(g, k, a) in &entries {
                for &(h, l, b) in &entries {
                    if (g, k) == (h, l) && a < b {
                        expected[a].push(b);
                    }
                }
            }
            for list in &mut expected {
                list.sort_unstable();
                list.dedup();
            }
            let mut s = SharedKeys::new(12, entries.iter().copied());
            prop_assert_eq!(all_later(&mut s, 12), expected);
        }
    }

    #[test]
    fn settled_pairs_are_left_out_and_counted() {
        // Rows 0..4 all share one key: every pair is a candidate.
        let keys = SharedKeys::new(4, (0..4).map(|r| (0, 7, r)));
        // Rows 0, 1 and 3 settled in group 5, row 2 new.
        let mut c = SkipSettled::new(keys, vec![Some(5), Some(5), None, Some(5)]);
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for row in 0..4 {
            out.clear();
            c.later(row, &mut out);
            out.sort_unstable();
            seen.push(out.clone());
        }
        assert_eq!(seen, [vec![2], vec![2], vec![3], vec![]]);
        // 0-1, 0-3, 1-3 left out.
        assert_eq!(c.skipped, 3);
    }
}
