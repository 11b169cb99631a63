//! `dedup_differing_params(strict_url, canonical_url)`, the aggregate phase
//! 6 names the parameters of pages kept apart with (the report's `kept
//! apart:` lines, `explain`'s notes): over a group of survivors that share
//! a canonical URL, the dropped parameters whose values differ between
//! them ([`crate::core::url::differing_params`]), comma-separated, sorted,
//! each once; NULL for no row.

use rusqlite::functions::{Aggregate, Context, FunctionFlags};
use rusqlite::Connection;

use crate::sqlite::ground::arguments::text_arg;

/// The aggregate's name.
const NAME: &str = "dedup_differing_params";

struct DifferingParams;

impl Aggregate<Vec<(String, String)>, Option<String>> for DifferingParams {
    fn init(&self, _: &mut Context<'_>) -> rusqlite::Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }

    fn step(
        &self,
        ctx: &mut Context<'_>,
        pages: &mut Vec<(String, String)>,
    ) -> rusqlite::Result<()> {
        if let (Some(strict), Some(canonical)) = (
            text_arg(ctx, 0, NAME, "strict")?,
            text_arg(ctx, 1, NAME, "canonical")?,
        ) {
            pages.push((strict.to_string(), canonical.to_string()));
        }
        Ok(())
    }

    fn finalize(
        &self,
        _: &mut Context<'_>,
        pages: Option<Vec<(String, String)>>,
    ) -> rusqlite::Result<Option<String>> {
        Ok(pages.map(|pages| {
            let pairs: Vec<(&str, &str)> = pages
                .iter()
                .map(|(s, c)| (s.as_str(), c.as_str()))
                .collect();
            crate::core::url::differing_params(&pairs).join(",")
        }))
    }
}

/// Registers `dedup_differing_params`.
pub fn register(db: &Connection) -> rusqlite::Result<()> {
    db.create_aggregate_function(
        NAME,
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        DifferingParams,
    )
}
