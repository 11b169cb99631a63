//! `paragraph_keys(text, by_lines, min)` and `paragraph_at(text, by_lines,
//! position)`: a text's paragraphs as the paragraph step sees them
//! ([`crate::core::paragraphs`]), for a run made elsewhere (the Spark
//! layer elects each paragraph's owner over every shard with them).

use rusqlite::{Connection, Result};

use crate::core::halt::never;
use crate::core::paragraphs::{paragraph_at, Ledger, Split};
use crate::sqlite::ground::arguments::{check_arity, int_arg, text_arg, PURE};

/// The split argument: 1 for a text made from HTML (one block a line).
fn split_arg(ctx: &rusqlite::functions::Context<'_>, function: &str) -> Result<Split> {
    Ok(
        match int_arg(ctx, 1, function, "by_lines must be 0 or 1")? {
            Some(0) | None => Split::BlankLines,
            Some(1) => Split::Lines,
            Some(_) => {
                return Err(crate::sqlite::ground::arguments::user_error(
                    function,
                    "by_lines must be 0 or 1",
                    "another integer",
                ))
            }
        },
    )
}

/// Registers both functions.
pub fn register(db: &Connection) -> Result<()> {
    db.create_scalar_function("paragraph_keys", 3, PURE, |ctx| {
        const NAME: &str = "paragraph_keys";
        check_arity(ctx, NAME, 3, 3)?;
        let split = split_arg(ctx, NAME)?;
        let min = match int_arg(ctx, 2, NAME, "min must be an integer >= 1")? {
            Some(m) if m >= 1 => m as usize,
            _ => {
                return Err(crate::sqlite::ground::arguments::user_error(
                    NAME,
                    "min must be an integer >= 1",
                    "another value",
                ))
            }
        };
        let Some(text) = text_arg(ctx, 0, NAME, "text")? else {
            return Ok(None);
        };
        let (_, keys) = Ledger::new(min).page_keyed(0, text, split, &never)?;
        let items: Vec<String> = keys.iter().map(|(p, k)| format!("[{p},{k}]")).collect();
        Ok(Some(format!("[{}]", items.join(","))))
    })?;
    db.create_scalar_function("paragraph_at", 3, PURE, |ctx| {
        const NAME: &str = "paragraph_at";
        check_arity(ctx, NAME, 3, 3)?;
        let split = split_arg(ctx, NAME)?;
        let position = int_arg(ctx, 2, NAME, "position must be an integer")?;
        let Some(text) = text_arg(ctx, 0, NAME, "text")? else {
            return Ok(None);
        };
        Ok(position
            .and_then(|p| u32::try_from(p).ok())
            .and_then(|p| paragraph_at(text, split, p))
            .map(str::to_string))
    })
}
