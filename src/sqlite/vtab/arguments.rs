//! What the table-valued functions share: their arguments read and checked
//! (a table's name and columns, a threshold, a plan's bounds), their errors
//! worded alike, and their callbacks kept from unwinding into SQLite.

use std::ffi::c_int;

use crate::sqlite::ground::arguments::module_error;
use rusqlite::types::ValueRef;
use rusqlite::vtab::{Filters, IndexConstraintOp, IndexInfo};
use rusqlite::{Connection, Result};

use crate::sqlite::ground::arguments::describe;

/// Runs a table-valued function's callback so that a panic inside it is an
/// SQL error naming the function, never an unwind across SQLite's frames
/// (which aborts the host).
pub fn unwind_safe<T>(name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(crate::sqlite::ground::arguments::coded_module_error(
            name,
            crate::sqlite::ground::error::Code::Internal,
            "internal error (a bug; please report it)",
            &crate::sqlite::ground::arguments::escape(&what, 200),
        ))
    })
}

/// The table or view name given as argument `what` of function `name`.
pub fn table_argument(name: &str, what: &str, value: Option<ValueRef<'_>>) -> Result<String> {
    match value {
        Some(ValueRef::Text(t)) => String::from_utf8(t.to_vec()).map_err(|_| {
            module_error(
                name,
                &format!("{what} must be valid UTF-8"),
                "invalid bytes",
            )
        }),
        Some(other) => Err(module_error(
            name,
            &format!("{what} must be the name of a table or view"),
            &describe(other),
        )),
        None => Err(module_error(
            name,
            &format!("{what} table or view name is required"),
            "no argument",
        )),
    }
}

/// The threshold argument of function `name`: a number, 0.9 when not given
/// (the range is checked by [`crate::core::near_dups::validate`]).
pub fn threshold_argument(name: &str, value: Option<ValueRef<'_>>) -> Result<f64> {
    match value {
        None => Ok(crate::core::near_dups::DEFAULT_THRESHOLD),
        Some(ValueRef::Real(r)) => Ok(r),
        Some(ValueRef::Integer(i)) => Ok(i as f64),
        Some(other) => Err(module_error(
            name,
            "threshold must be a number in [0.0, 1.0]",
            &describe(other),
        )),
    }
}

/// The measure argument of function `name`: a spec
/// ([`crate::core::measure::Measure::parse`]), Levenshtein when not given
/// or NULL.
pub fn measure_argument(
    name: &str,
    value: Option<ValueRef<'_>>,
) -> Result<crate::core::measure::Measure> {
    use crate::core::measure::Measure;
    match value {
        None | Some(ValueRef::Null) => Ok(Measure::Levenshtein),
        Some(ValueRef::Text(t)) => {
            let spec = String::from_utf8_lossy(t);
            Measure::parse(&spec)
                .map_err(|e| rusqlite::Error::ModuleError(format!("{name}[argument]: {e}")))
        }
        Some(other) => Err(module_error(
            name,
            "measure must be 'levenshtein' or 'resemblance N [stopword ...]'",
            &describe(other),
        )),
    }
}

/// Checks that `table`, argument `what` of function `name`, is a table or
/// view with `columns`.
pub fn require_columns(
    db: &Connection,
    name: &str,
    what: &str,
    table: &str,
    columns: &[&str],
) -> Result<()> {
    let have = table_columns(db, name, what, table)?;
    let missing: Vec<&str> = columns
        .iter()
        .copied()
        .filter(|c| !have.iter().any(|h| h == c))
        .collect();
    if !missing.is_empty() {
        return Err(module_error(
            name,
            &format!(
                "{what} must have columns {} (missing {})",
                columns.join(", "),
                missing.join(", ")
            ),
            &format!("'{table}'"),
        ));
    }
    Ok(())
}

/// The lowercased column names of table or view `table`, or an error
/// saying that `what` must name one.
pub fn table_columns(db: &Connection, name: &str, what: &str, table: &str) -> Result<Vec<String>> {
    let mut stmt = db.prepare("SELECT lower(name) FROM pragma_table_info(?1)")?;
    let have: Vec<String> = stmt
        .query_map([table], |r| r.get(0))?
        .collect::<Result<_>>()?;
    if have.is_empty() {
        return Err(module_error(
            name,
            &format!("{what} must be the name of a table or view"),
            &format!("'{table}'"),
        ));
    }
    Ok(have)
}

/// A `text` column value: `Some` for TEXT, `None` for NULL (a placeholder),
/// an error naming the row `id` otherwise.
pub fn text_value(name: &str, value: ValueRef<'_>, id: i64) -> Result<Option<String>> {
    match value {
        ValueRef::Text(t) => String::from_utf8(t.to_vec()).map(Some).map_err(|_| {
            module_error(
                name,
                "text must be valid UTF-8",
                &format!("invalid text in row id {id}"),
            )
        }),
        ValueRef::Null => Ok(None),
        other => Err(module_error(
            name,
            "text must be TEXT",
            &format!("{} in row id {id}", describe(other)),
        )),
    }
}

/// Plans a table-valued function whose `count` hidden argument columns
/// start at column `first`: each `=` constraint on argument `k` is passed to
/// `filter` (bit `k` of `idx_num`). Plans that lack an argument of
/// `required` (a mask), or constrain one otherwise, cost 1e18 so SQLite
/// picks another; the rest cost `cost`.
pub fn plan_arguments(
    info: &mut IndexInfo,
    first: c_int,
    count: usize,
    required: c_int,
    cost: f64,
) -> Result<()> {
    let mut argv: Vec<Option<usize>> = vec![None; count];
    for (i, c) in info.constraints().enumerate() {
        let Some(slot) = c
            .column()
            .checked_sub(first)
            .and_then(|k| usize::try_from(k).ok())
            .filter(|&k| k < count)
        else {
            continue;
        };
        if !c.is_usable() || c.operator() != IndexConstraintOp::SQLITE_INDEX_CONSTRAINT_EQ {
            info.set_estimated_cost(1e18);
            return Ok(());
        }
        argv[slot] = Some(i);
    }
    let (mut mask, mut n) = (0, 0);
    for (slot, c) in argv.iter().enumerate() {
        if let Some(i) = c {
            n += 1;
            mask |= 1 << slot;
            let mut usage = info.constraint_usage(*i);
            usage.set_argv_index(n);
            usage.set_omit(true);
        }
    }
    info.set_idx_num(mask);
    info.set_estimated_cost(if mask & required == required {
        cost
    } else {
        1e18
    });
    Ok(())
}

/// The arguments [`plan_arguments`] passed, by position; `None` for those
/// not given.
pub fn planned_arguments<'a>(
    idx_num: c_int,
    args: &'a Filters<'_>,
    count: usize,
) -> Vec<Option<ValueRef<'a>>> {
    let mut values = args.iter();
    (0..count)
        .map(|k| {
            if idx_num & (1 << k) != 0 {
                values.next()
            } else {
                None
            }
        })
        .collect()
}
