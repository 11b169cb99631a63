//! The survivor columns a run rewrites, and when.

use crate::sqlite::tables::schema::{quote_ident, Source};

/// The survivor columns a run may rewrite: (column, changed, new value),
/// with `g` the table's row and `p` its row of `_dedup_prepared`. A
/// survivor's URL becomes the URL phase 2 grouped it by: its strict URL
/// (tracking parameters and learned ones dropped, every other kept), so
/// that `?sku=123` keeps naming its page; its canonical URL where the run
/// has no strict one (`compat = 'reference'`, whose rewrite is the
/// reference's, or `discard_params` off, where they are one).
pub const REWRITES: [(&str, &str, &str); 6] = [
    (
        "url",
        "g.{c} IS NOT coalesce(p.rewrite_url, p.strict_url, p.canonical_url)",
        "coalesce(p.rewrite_url, p.strict_url, p.canonical_url)",
    ),
    ("domain", "g.{c} IS NOT p.domain", "p.domain"),
    (
        "wayback",
        "p.wayback IS NOT NULL AND g.{c} IS NOT p.wayback",
        "p.wayback",
    ),
    ("parsed", "p.fill_parsed IS NOT NULL", "p.fill_parsed"),
    (
        "content_hash",
        "g.{c} IS NULL AND p.content_hash IS NOT NULL",
        "p.content_hash",
    ),
    (
        "length",
        "g.{c} IS NULL AND p.length IS NOT NULL",
        "p.length",
    ),
];

/// `(condition)` that holds when a run would rewrite a column of the row
/// other than `url` (whose rewrite depends on its group: see phase 6), or
/// `0` when the table has none of them.
pub fn pending_besides_url(source: &Source) -> String {
    let pending: Vec<String> = REWRITES
        .iter()
        .filter(|(c, _, _)| *c != "url")
        .filter_map(|(c, changed, _)| {
            let real = source.column(c)?;
            Some(format!("({})", changed.replace("{c}", &quote_ident(&real))))
        })
        .collect();
    if pending.is_empty() {
        "0".into()
    } else {
        format!("({})", pending.join(" OR "))
    }
}

/// `parsed`'s (changed, new value) in a run with `paragraphs = 'dedup'`:
/// the text the paragraph step left (`temp._dedup_paragraph_texts`), else
/// `parsed`'s own rewrite (its fill).
pub fn paragraph_rewrite(changed: &str, new: &str) -> (String, String) {
    (
        format!("({changed} OR p.source_rowid IN (SELECT rid FROM temp._dedup_paragraph_texts))"),
        format!("coalesce((SELECT t.parsed FROM temp._dedup_paragraph_texts AS t WHERE t.rid = p.source_rowid), {new})"),
    )
}
