//! Paragraph-level dedup: a paragraph that a page earlier in the election
//! order already holds is cut from a later page's text.
//!
//! Contract:
//! - A text's paragraphs ([`spans`]) are its maximal runs of non-blank
//!   lines ([`Split::BlankLines`]), or each non-blank line
//!   ([`Split::Lines`]: a text made from HTML, whose block elements
//!   `html_text` writes one a line). A blank line holds only whitespace.
//! - Two paragraphs are the same when their [`normalize`]d texts are equal
//!   (the pipeline's normalization, the one exact duplicates are found by).
//!   A paragraph shorter than `min_chars` characters, or empty once
//!   normalized, is never cut and owns nothing.
//! - Pages are given best first ([`Ledger::page`]). The first page that
//!   holds a paragraph owns it; each later page's copy is found, with its
//!   owner. A page's repeats of its own paragraph stay.
//! - Found copies are by SHA-1 of the normalized text; the caller confirms
//!   each against its owner's text ([`same_paragraph`]) before cutting
//!   (never a cut on a hash alone).
//! - [`edit`] gives the page's new text: the kept paragraphs with the gaps
//!   that followed them, the text's leading and trailing whitespace as they
//!   were. A page that would keep fewer than `min_chars` characters (its
//!   kept paragraphs' together) is left whole ([`Edit::KeptWhole`]): it is
//!   made of what pages before it hold, and the caller reports it.
//!
//! Deterministic: the result depends on the texts and their order only.
//!
//! Cost: one pass over each text (split, normalize, SHA-1 of each
//! paragraph of `min_chars` or more); memory: 28 bytes for each distinct
//! paragraph, not the texts.
//!
//! Reference: trafilatura's segment dedup and Dolma's paragraph dedup
//! (a Bloom filter: here exact, and restorable by the binding).

use std::collections::HashMap;

use sha1::{Digest, Sha1};

use crate::core::halt::Halt;
use crate::core::text::normalize_ascii_or_halt;

/// How a text is cut into paragraphs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// Runs of non-blank lines separated by blank lines (a text).
    BlankLines,
    /// Each non-blank line (a text made from HTML: one block a line).
    Lines,
}

/// A paragraph: the byte range of its lines in the text (without the line
/// break after the last).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// The paragraphs of `text`, in order.
pub fn spans(text: &str, split: Split) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let mut open: Option<Span> = None;
    let mut at = 0;
    for line in text.split('\n') {
        let (start, end) = (at, at + line.len());
        at = end + 1;
        if line.chars().all(char::is_whitespace) {
            out.extend(open.take());
            continue;
        }
        match (&mut open, split) {
            (Some(span), Split::BlankLines) => span.end = end,
            _ => {
                out.extend(open.take());
                open = Some(Span { start, end });
            }
        }
    }
    out.extend(open);
    out
}

/// The `position`th paragraph of `text` (1-based), if it has one.
pub fn paragraph_at(text: &str, split: Split, position: u32) -> Option<&str> {
    let span = *spans(text, split).get((position as usize).checked_sub(1)?)?;
    Some(&text[span.start..span.end])
}

/// A page that holds a paragraph: its id and the paragraph's position in
/// it (1-based), and how its text splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder {
    /// The caller's id of the page.
    pub page: i64,
    /// The paragraph's position among the page's paragraphs, from 1.
    pub position: u32,
    /// How the page's text splits.
    pub split: Split,
}

/// A paragraph of a page that an earlier page holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Its position among the page's paragraphs, from 1.
    pub position: u32,
    /// Where it is in the page's text.
    pub span: Span,
    /// Its length in characters.
    pub chars: usize,
    /// The first page that holds it.
    pub owner: Holder,
    /// Its normalized text (to confirm against the owner's).
    pub normalized: Vec<u8>,
}

/// A page's paragraphs' keys ([`key_of`]), by position (from 1).
pub type Keys = Vec<(u32, i64)>;

/// The paragraphs seen so far and their owners.
#[derive(Debug)]
pub struct Ledger {
    min_chars: usize,
    owners: HashMap<[u8; 20], Holder>,
}

impl Ledger {
    /// An empty ledger: paragraphs of fewer than `min_chars` characters are
    /// never cut.
    pub fn new(min_chars: usize) -> Self {
        Ledger {
            min_chars,
            owners: HashMap::new(),
        }
    }

    /// Distinct paragraphs owned so far.
    pub fn len(&self) -> usize {
        self.owners.len()
    }

    /// Whether no paragraph is owned yet.
    pub fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }

    /// The next page in the election order: its paragraphs that an earlier
    /// page holds (to confirm, then cut); it owns the others.
    pub fn page(
        &mut self,
        id: i64,
        text: &str,
        split: Split,
        stop: &dyn Fn() -> bool,
    ) -> Result<Vec<Found>, Halt> {
        Ok(self.page_keyed(id, text, split, stop)?.0)
    }

    /// [`Ledger::page`], with the key ([`key_of`]) of each of the page's
    /// paragraphs of `min_chars` characters, by position.
    pub fn page_keyed(
        &mut self,
        id: i64,
        text: &str,
        split: Split,
        stop: &dyn Fn() -> bool,
    ) -> Result<(Vec<Found>, Keys), Halt> {
        let mut found = Vec::new();
        let mut keys = Vec::new();
        for (i, span) in spans(text, split).into_iter().enumerate() {
            let paragraph = &text[span.start..span.end];
            let chars = paragraph.trim().chars().count();
            if chars < self.min_chars {
                continue;
            }
            let normalized = normalize_ascii_or_halt(paragraph, stop)?;
            if normalized.is_empty() {
                continue;
            }
            let key: [u8; 20] = Sha1::digest(&normalized).into();
            let position = i as u32 + 1;
            keys.push((position, key_of(&key)));
            match self.owners.get(&key) {
                Some(owner) if owner.page != id => found.push(Found {
                    position,
                    span,
                    chars,
                    owner: *owner,
                    normalized,
                }),
                Some(_) => {}
                None => {
                    self.owners.insert(
                        key,
                        Holder {
                            page: id,
                            position,
                            split,
                        },
                    );
                }
            }
        }
        Ok((found, keys))
    }
}

/// A paragraph's key in an index: the first 8 bytes of the SHA-1 of its
/// normalized text, as a signed integer (a match is confirmed on the text).
pub fn key_of(digest: &[u8; 20]) -> i64 {
    i64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}

/// Whether the owner's paragraph (in `owner_text`) is `found`'s, once
/// normalized: the confirmation of a hash's match.
pub fn same_paragraph(
    owner_text: &str,
    found: &Found,
    stop: &dyn Fn() -> bool,
) -> Result<bool, Halt> {
    match paragraph_at(owner_text, found.owner.split, found.owner.position) {
        Some(p) => Ok(normalize_ascii_or_halt(p, stop)? == found.normalized),
        None => Ok(false),
    }
}

/// What a page's text becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Nothing cut.
    Unchanged,
    /// The text without the paragraphs cut.
    Cut(String),
    /// The page would keep fewer than `min_chars` characters: it is left
    /// whole (and reported).
    KeptWhole,
}

/// The page's text without the paragraphs `cut` (confirmed copies, in
/// position order): the kept paragraphs, each followed by the gap that
/// followed it in the text (the last by the text's trailing whitespace),
/// after the text's leading whitespace.
pub fn edit(text: &str, split: Split, cut: &[Found], min_chars: usize) -> Edit {
    if cut.is_empty() {
        return Edit::Unchanged;
    }
    let all = spans(text, split);
    let removed: std::collections::HashSet<u32> = cut.iter().map(|f| f.position).collect();
    let kept: Vec<(usize, Span)> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| !removed.contains(&(*i as u32 + 1)))
        .map(|(i, s)| (i, *s))
        .collect();
    let left: usize = kept
        .iter()
        .map(|(_, s)| text[s.start..s.end].trim().chars().count())
        .sum();
    if left < min_chars.max(1) {
        return Edit::KeptWhole;
    }
    let gap_after = |i: usize| -> &str {
        match all.get(i + 1) {
            Some(next) => &text[all[i].end..next.start],
            None => &text[all[i].end..],
        }
    };
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..all[0].start]);
    for (k, (i, span)) in kept.iter().enumerate() {
        out.push_str(&text[span.start..span.end]);
        if k + 1 < kept.len() {
            out.push_str(gap_after(*i));
        }
    }
    out.push_str(&text[all[all.len() - 1].end..]);
    Edit::Cut(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::halt::never;
    use proptest::prelude::*;

    fn texts(text: &str, split: Split) -> Vec<&str> {
        spans(text, split)
            .into_iter()
            .map(|s| &text[s.start..s.end])
            .collect()
    }

    #[test]
    fn paragraphs_are_runs_of_lines_between_blank_lines() {
        let t = "\n title \n\nfirst line\nsecond line\n \t\nlast\n\n";
        assert_eq!(
            texts(t, Split::BlankLines),
            [" title ", "first line\nsecond line", "last"]
        );
        assert_eq!(
            texts(t, Split::Lines),
            [" title ", "first line", "second line", "last"]
        );
        assert!(spans("", Split::BlankLines).is_empty());
        assert!(spans(" \n\t\n", Split::Lines).is_empty());
        assert_eq!(texts("a\r\n\r\nb", Split::BlankLines), ["a\r", "b"]);
        assert_eq!(paragraph_at(t, Split::BlankLines, 3), Some("last"));
        assert_eq!(paragraph_at(t, Split::BlankLines, 4), None);
        assert_eq!(paragraph_at(t, Split::BlankLines, 0), None);
    }

    /// Hand-checked: the owner is the first page; later copies are found
    /// (normalization ignores case and spacing); short ones and a page's
    /// own repeats stay.
    #[test]
    fn later_copies_are_found_with_their_owner() {
        let shared = "The licence text is shared by these pages.";
        let mut ledger = Ledger::new(20);
        let a = format!("page a intro\n\n{shared}\n\nshort\n\n{shared}");
        assert!(ledger
            .page(10, &a, Split::BlankLines, &never)
            .unwrap()
            .is_empty());
        let b = "short\n\nPage B's own words, long enough.\n\nTHE  licence text is shared by these pages.".to_string();
        let found = ledger.page(20, &b, Split::BlankLines, &never).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].position, 3);
        assert_eq!(
            found[0].owner,
            Holder {
                page: 10,
                position: 2,
                split: Split::BlankLines
            }
        );
        assert_eq!(found[0].chars, shared.chars().count() + 1); // (B's copy: two spaces)
        assert!(same_paragraph(&a, &found[0], &never).unwrap());
        assert!(!same_paragraph("other\n\ntext", &found[0], &never).unwrap());
        assert_eq!(
            edit(&b, Split::BlankLines, &found, 20),
            Edit::Cut("short\n\nPage B's own words, long enough.".into())
        );
    }

    #[test]
    fn a_page_left_without_a_paragraph_of_its_own_is_kept_whole() {
        let shared = "A paragraph long enough to be cut from a page.";
        let mut ledger = Ledger::new(20);
        ledger.page(1, shared, Split::BlankLines, &never).unwrap();
        let b = format!("Heading\n\n{shared}\n");
        let found = ledger.page(2, &b, Split::BlankLines, &never).unwrap();
        assert_eq!(edit(&b, Split::BlankLines, &found, 20), Edit::KeptWhole);
        assert_eq!(edit(&b, Split::BlankLines, &[], 20), Edit::Unchanged);
    }

    #[test]
    fn the_gaps_and_the_ends_are_kept() {
        let t = "  \nfirst\n\n\nsecond\n \nthird\n\n";
        let found = |position: u32| Found {
            position,
            span: spans(t, Split::BlankLines)[position as usize - 1],
            chars: 5,
            owner: Holder {
                page: 0,
                position: 1,
                split: Split::BlankLines,
            },
            normalized: Vec::new(),
        };
        assert_eq!(
            edit(t, Split::BlankLines, &[found(1)], 1),
            Edit::Cut("  \nsecond\n \nthird\n\n".into())
        );
        assert_eq!(
            edit(t, Split::BlankLines, &[found(2)], 1),
            Edit::Cut("  \nfirst\n\n\nthird\n\n".into())
        );
        assert_eq!(
            edit(t, Split::BlankLines, &[found(3)], 1),
            Edit::Cut("  \nfirst\n\n\nsecond\n\n".into())
        );
    }

    fn paragraph() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "alpha beta gamma delta",
            "Alpha  Beta gamma delta",
            "epsilon zeta eta theta",
            "iota kappa",
            "lambda mu nu xi omicron",
            "\u{4e2d}\u{6587}\u{6bb5}\u{843d}\u{91cd}\u{590d}\u{51fa}\u{73b0}",
        ])
        .prop_map(str::to_string)
    }

    proptest! {
        /// Against a naive model: the cut text's paragraphs are the text's
        /// minus those (of `min` characters) whose normalized form a page
        /// before it holds, or the page is kept whole when none of `min`
        /// characters would remain.
        #[test]
        fn cuts_equal_a_naive_model(
            pages in prop::collection::vec(prop::collection::vec(paragraph(), 1..6), 1..8),
            gaps in prop::collection::vec(prop::sample::select(vec!["\n\n", "\n \n", "\n\n\n"]), 8),
            min in 0usize..25,
        ) {
            let mut ledger = Ledger::new(min);
            // (Each earlier page's paragraphs of `min` characters, normalized.)
            let mut seen: Vec<Vec<String>> = Vec::new();
            for (id, paras) in pages.iter().enumerate() {
                let mut text = String::new();
                for (i, p) in paras.iter().enumerate() {
                    if i > 0 { text.push_str(gaps[i % gaps.len()]); }
                    text.push_str(p);
                }
                let found = ledger.page(id as i64, &text, Split::BlankLines, &never).unwrap();
                let norm = |p: &str| crate::core::text::normalize(p);
                let expect_cut: Vec<u32> = paras.iter().enumerate().filter(|(_, p)| {
                    p.chars().count() >= min && seen.iter().any(|ps| ps.contains(&norm(p)))
                }).map(|(i, _)| i as u32 + 1).collect();
                let got: Vec<u32> = found.iter().map(|f| f.position).collect();
                prop_assert_eq!(&got, &expect_cut);
                for f in &found {
                    let owner = &pages[f.owner.page as usize];
                    prop_assert_eq!(norm(&owner[f.owner.position as usize - 1]), norm(&paras[f.position as usize - 1]));
                }
                let kept: Vec<&String> = paras.iter().enumerate()
                    .filter(|(i, _)| !expect_cut.contains(&(*i as u32 + 1))).map(|(_, p)| p).collect();
                match edit(&text, Split::BlankLines, &found, min) {
                    Edit::Unchanged => prop_assert!(expect_cut.is_empty()),
                    Edit::KeptWhole => prop_assert!(kept.iter().map(|p| p.chars().count()).sum::<usize>() < min.max(1)),
                    Edit::Cut(new) => {
                        prop_assert!(kept.iter().map(|p| p.chars().count()).sum::<usize>() >= min.max(1));
                        let now: Vec<&str> = texts(&new, Split::BlankLines);
                        let kept: Vec<&str> = kept.iter().map(|s| s.as_str()).collect();
                        prop_assert_eq!(now, kept);
                    }
                }
                seen.push(paras.iter().filter(|p| p.chars().count() >= min).map(|p| norm(p)).collect());
            }
        }
    }
}
