//! What the pair scan holds of the rows ahead of it: each row's profile
//! once read ([`Known`]) and their texts, kept between groups while they
//! fit ([`TextCache`]). Shared by the scan ([`crate::core::pair_scan`]) and
//! its look-ahead ([`crate::core::pair_ahead`]).
//!
//! Cost: a profile per row read and not yet passed; texts up to
//! [`TEXT_CACHE_BYTES`] between groups.
//!
//! Reference: the window scan's rows ([`crate::core::near_dups`]), whose
//! profiles (length and character histogram) these are.

use std::sync::Arc;

use crate::core::halt::Halt;
use crate::core::measure::Measure;
use crate::core::near_dups::{within_bounds, Profile, ScanStats, Text};

/// What the pair scan knows of a row.
pub(super) enum Known {
    Unread,
    Placeholder,
    Live(Profile),
    /// Behind the scan or removed: never compared again.
    Passed,
}

/// Bytes of text the pair scan keeps between groups.
pub(super) const TEXT_CACHE_BYTES: usize = 128 << 20;

/// Texts of rows ahead of the pair scan, kept while they fit in
/// [`TEXT_CACHE_BYTES`]: a row read for its profile or compared with one
/// anchor is often compared with later anchors of its group of near-copies.
/// The cache is emptied when the texts ahead outgrow it, and those still
/// needed are read again (the reads per budget:
/// `benches/results/ahead-2026-12-07.md`).
pub(super) struct TextCache {
    /// By row index (a slot a row).
    texts: Vec<Option<Arc<Text>>>,
    bytes: usize,
}

impl TextCache {
    /// An empty cache over `rows` rows.
    pub(super) fn new(rows: usize) -> Self {
        TextCache {
            texts: vec![None; rows],
            bytes: 0,
        }
    }

    pub(super) fn has(&self, k: usize) -> bool {
        self.texts[k].is_some()
    }

    /// Memory held by the texts, in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(super) fn get(&self, k: usize) -> &Text {
        self.texts[k].as_ref().expect("a text the cache holds")
    }

    /// Row `k`'s text, shared (for work that outlives a borrow).
    pub(super) fn shared(&self, k: usize) -> Arc<Text> {
        Arc::clone(self.texts[k].as_ref().expect("a text the cache holds"))
    }

    pub(super) fn insert(&mut self, k: usize, text: Text) {
        self.bytes += text.bytes();
        if let Some(old) = self.texts[k].replace(Arc::new(text)) {
            self.bytes -= old.bytes();
        }
    }

    pub(super) fn remove(&mut self, k: usize) {
        if let Some(old) = self.texts[k].take() {
            self.bytes -= old.bytes();
        }
    }

    /// Empties the cache when it holds more than its budget (between
    /// groups: one group's texts may exceed it).
    pub(super) fn trim(&mut self) {
        if self.bytes > TEXT_CACHE_BYTES {
            self.texts.fill(None);
            self.bytes = 0;
        }
    }
}

/// Reads row `k`'s profile if it is not known yet, keeping its text in
/// `texts` for the group. False for a placeholder.
fn read_profile<E: From<Halt>>(
    k: usize,
    known: &mut [Known],
    texts: &mut TextCache,
    text: &mut impl FnMut(usize) -> Result<Option<String>, E>,
    measure: &Measure,
) -> Result<bool, E> {
    if let Known::Unread = known[k] {
        known[k] = match text(k)? {
            Some(t) => {
                let t = Text::measured(t, measure)?;
                let profile = Profile::new(&t, None);
                texts.insert(k, t);
                Known::Live(profile)
            }
            None => Known::Placeholder,
        };
    }
    Ok(matches!(known[k], Known::Live(_)))
}

/// The rows the pair scan holds: which are live, their profiles, their
/// texts.
pub(super) struct Held<'s> {
    pub(super) alive: &'s mut [bool],
    pub(super) known: &'s mut [Known],
    pub(super) texts: &'s mut TextCache,
}

/// A pair to verify: the other row, the two texts' total length, the
/// largest indel distance still above the threshold.
pub(super) type Pair = (usize, usize, usize);

/// Anchor `i`'s pairs `(j, total length, largest distance above the
/// threshold)` with the rows of `later` that the exact bounds let through,
/// counted in `stats`; each profile read through `text` if not known yet (a
/// placeholder is no longer live). `None` when the anchor is a placeholder.
pub(super) fn bounded_pairs<E: From<Halt>>(
    i: usize,
    later: &[usize],
    held: Held<'_>,
    text: &mut impl FnMut(usize) -> Result<Option<String>, E>,
    (threshold, measure): (f64, &Measure),
    stats: &mut ScanStats,
) -> Result<Option<Vec<Pair>>, E> {
    let Held {
        alive,
        known,
        texts,
    } = held;
    if !read_profile(i, known, texts, text, measure)? {
        alive[i] = false;
        return Ok(None);
    }
    let mut pairs = Vec::new();
    for &j in later {
        if !read_profile(j, known, texts, text, measure)? {
            alive[j] = false;
            continue;
        }
        let (Known::Live(a), Known::Live(b)) = (&known[i], &known[j]) else {
            unreachable!("both rows were just read as live");
        };
        // (A text the bounds reject stays cached: a later anchor may need it.)
        if let Some((total, max)) = within_bounds(a, b, threshold, stats) {
            pairs.push((j, total, max));
        }
    }
    Ok(Some(pairs))
}
