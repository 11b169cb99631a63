//! Phase 1 of a batch of rows on the crate's pool: [`prepare`] on each row,
//! the results in the rows' order, whatever the thread count.
//!
//! Phase 1 is per row, and its cost is the HTML parse of the rows without
//! parsed text (a page of markup costs about a hundred times a row whose
//! text is given). So a batch whose markup to parse is large enough is
//! cut into jobs of about [`JOB_BYTES`] of it, each with its own copy of
//! the rules (their cache of learned options is per copy: a cache, so the
//! answers are the same); a smaller batch runs on the calling thread,
//! which also polls for a stop while the pool works.
//!
//! Cost: the rows' phase 1, spread over the pool's threads when the batch
//! holds at least [`PARALLEL_BYTES`] of markup to parse; one rules copy a
//! job.
//!
//! Reference: [`prepare`], row by row, whose results it gives (tested on
//! one thread and on the pool).

use std::ops::Range;

use super::halt::Halt;
use super::parallel::map_polled;
use super::phase1::{prepare, Failure, PageRow, Prepared, Rules, TextCell};
use super::pools::pool;

/// Markup to parse in a batch from which it goes to the pool (bytes).
pub const PARALLEL_BYTES: usize = 256 << 10;
/// Markup to parse in one job of the pool, about (bytes).
pub const JOB_BYTES: usize = 32 << 10;

/// The bytes of content phase 1 parses for `row`: its content when it has
/// no parsed text (a fill), else none.
pub fn fill_bytes(row: &PageRow<'_>) -> usize {
    match (row.parsed, row.content) {
        (TextCell::Null, TextCell::Text(c)) => c.len(),
        _ => 0,
    }
}

/// [`prepare`] on every item of `items` (`row` gives an item's row and its
/// learned options), in order: each row's result, a [`Failure`] of its
/// own included. Stops with [`Halt::Stopped`] soon after `poll` says so.
///
/// ```
/// use dedup::core::phase1::{PageRow, Rules, TextCell};
/// use dedup::core::phase1_batch::prepare_batch;
/// let page = |url: &'static str| PageRow {
///     url: TextCell::Text(url.as_bytes()),
///     title: Some(b"T"),
///     content: TextCell::Text(b"<html><body><p>Hello</p></body></html>"),
///     parsed: TextCell::Null,
///     hash_missing: true,
///     length_missing: true,
/// };
/// let items = ["https://a.example/x?utm_source=y", "https://a.example/y"];
/// let mut rules = Rules::new("", None, false, false).unwrap();
/// let out = prepare_batch(&items, |u| (page(u), ""), &mut rules, &mut || false).unwrap();
/// let urls: Vec<_> = out.iter().map(|p| p.as_ref().unwrap().canonical_url.clone().unwrap()).collect();
/// assert_eq!(urls, ["https://a.example/x", "https://a.example/y"]);
/// assert_eq!(out[0].as_ref().unwrap().fill.as_deref(), Some("t\n\nhello"));
/// ```
pub fn prepare_batch<T: Sync>(
    items: &[T],
    row: impl for<'a> Fn(&'a T) -> (PageRow<'a>, &'a str) + Sync,
    rules: &mut Rules,
    poll: &mut dyn FnMut() -> bool,
) -> Result<Vec<Result<Prepared, Failure>>, Halt> {
    let sizes: Vec<usize> = items.iter().map(|t| fill_bytes(&row(t).0)).collect();
    let total: usize = sizes.iter().sum();
    let pool = if total >= PARALLEL_BYTES {
        pool()
    } else {
        None
    };
    let Some(pool) = pool else {
        let poll = std::cell::RefCell::new(poll);
        let stop = || (poll.borrow_mut())();
        return Ok(items
            .iter()
            .map(|t| {
                let (page, learned) = row(t);
                prepare(&page, rules, learned, &stop)
            })
            .collect());
    };
    let jobs = jobs(&sizes);
    let shared: &Rules = rules;
    let done = map_polled(
        Some(pool),
        &jobs,
        |range: &Range<usize>, stop: &dyn Fn() -> bool| {
            let mut rules = shared.clone();
            Ok(Some(
                items[range.clone()]
                    .iter()
                    .map(|t| {
                        let (page, learned) = row(t);
                        prepare(&page, &mut rules, learned, stop)
                    })
                    .collect::<Vec<_>>(),
            ))
        },
        poll,
    )?;
    Ok(done.into_iter().flatten().collect())
}

/// Consecutive ranges of the rows, each holding about [`JOB_BYTES`] of
/// markup (a row with more is a job of its own).
fn jobs(sizes: &[usize]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, &n) in sizes.iter().enumerate() {
        bytes += n;
        if bytes >= JOB_BYTES {
            out.push(start..i + 1);
            (start, bytes) = (i + 1, 0);
        }
    }
    if start < sizes.len() {
        out.push(start..sizes.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn html(n: usize) -> String {
        let mut s = String::from("<html><head><title>x</title></head><body><nav>Home About</nav>");
        for k in 0..n {
            s.push_str(&format!("<p>Paragraph {k} of the page, with words.</p>"));
        }
        s.push_str("</body></html>");
        s
    }

    struct Item {
        url: String,
        title: Option<Vec<u8>>,
        content: Vec<u8>,
        parsed: Option<Vec<u8>>,
    }

    fn page(t: &Item) -> (PageRow<'_>, &str) {
        (
            PageRow {
                url: TextCell::Text(t.url.as_bytes()),
                title: t.title.as_deref(),
                content: TextCell::Text(&t.content),
                parsed: t.parsed.as_deref().map_or(TextCell::Null, TextCell::Text),
                hash_missing: true,
                length_missing: true,
            },
            "",
        )
    }

    fn items() -> Vec<Item> {
        (0..400)
            .map(|k| Item {
                url: format!(
                    "https://site{}.example/p/{k}/?utm_source=x&id={}",
                    k % 7,
                    k % 3
                ),
                // (Row 251's title is not UTF-8: a failure of its own.)
                title: Some(if k == 251 {
                    vec![0xff, b'a']
                } else {
                    format!("Title {k}").into_bytes()
                }),
                content: html(20 + k % 50).into_bytes(),
                parsed: (k % 5 == 0).then(|| format!("given text {k}").into_bytes()),
            })
            .collect()
    }

    fn describe(r: &Result<Prepared, Failure>) -> String {
        match r {
            Ok(p) => format!("{p:?}"),
            Err(Failure::InvalidText(why)) => format!("invalid: {why}"),
            Err(Failure::Halted(h)) => format!("halted: {h:?}"),
        }
    }

    #[test]
    fn the_batch_on_the_pool_gives_prepare_row_by_row() {
        let items = items();
        let total: usize = items.iter().map(|t| fill_bytes(&page(t).0)).sum();
        assert!(total >= 2 * PARALLEL_BYTES, "the batch must reach the pool");
        let mut rules = Rules::new("", Some("keep_params"), false, false).unwrap();
        let got = prepare_batch(&items, page, &mut rules, &mut || false).unwrap();
        let mut alone = Rules::new("", Some("keep_params"), false, false).unwrap();
        let want: Vec<_> = items
            .iter()
            .map(|t| prepare(&page(t).0, &mut alone, "", &|| false))
            .collect();
        assert_eq!(got.len(), items.len());
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(describe(g), describe(w), "row {k}");
        }
        assert!(describe(&got[251]).starts_with("invalid: "));
        assert!(got[1].as_ref().unwrap().fill.is_some());
    }

    #[test]
    fn a_stop_stops_the_batch() {
        let items = items();
        let mut rules = Rules::new("", None, false, false).unwrap();
        let got = prepare_batch(&items, page, &mut rules, &mut || true);
        assert!(matches!(got, Err(Halt::Stopped)) || pool().is_none());
    }

    #[test]
    fn jobs_cover_the_rows_in_order() {
        assert_eq!(jobs(&[]), Vec::<Range<usize>>::new());
        let one = jobs(&[10, 10]);
        assert_eq!((one.len(), one[0].clone()), (1, 0..2));
        assert_eq!(jobs(&[JOB_BYTES, 1, JOB_BYTES - 1, 5]), [0..1, 1..3, 3..4]);
    }
}
