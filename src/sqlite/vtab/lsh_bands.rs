//! `lsh_bands(signature, bands [, rows])`: the LSH band keys of a MinHash
//! signature, one row per band (`band`, `key`). Two signatures that share a
//! (`band`, `key`) row are a candidate pair; `rows` defaults to
//! `num_perm / bands`, and `bands * rows` may not exceed `num_perm`.

use std::ffi::c_int;

use crate::sqlite::ground::arguments::module_error;
use rusqlite::types::ValueRef;
use rusqlite::vtab::{eponymous_only_module, Context, Filters, IndexInfo, VTab, VTabConnection};
use rusqlite::{ffi, Connection, Result};

use super::arguments::{plan_arguments, planned_arguments, unwind_safe};
use super::rows_cursor::{RowSource, RowsCursor};
use crate::core::band_keys::band_keys;
use crate::core::sketch::Signature;
use crate::sqlite::ground::arguments::describe;

const NAME: &str = "lsh_bands";
/// First of the hidden argument columns (signature, bands, rows).
const COL_SIGNATURE: c_int = 2;

/// Registers the eponymous table-valued function `lsh_bands`.
pub fn register(db: &Connection) -> Result<()> {
    db.create_module(NAME, eponymous_only_module::<LshBandsTab>(), None)
}

#[repr(C)]
struct LshBandsTab {
    base: ffi::sqlite3_vtab,
}

unsafe impl<'vtab> VTab<'vtab> for LshBandsTab {
    type Aux = ();
    type Cursor = RowsCursor<'vtab, BandKeys>;

    fn connect(
        _db: &mut VTabConnection,
        _aux: Option<&()>,
        _args: &[&[u8]],
    ) -> Result<(String, Self)> {
        Ok((
            "CREATE TABLE x(band INTEGER, key INTEGER, signature HIDDEN, bands HIDDEN, rows HIDDEN)".to_owned(),
            LshBandsTab { base: ffi::sqlite3_vtab::default() },
        ))
    }

    fn best_index(&self, info: &mut IndexInfo) -> Result<()> {
        unwind_safe(NAME, || plan_arguments(info, COL_SIGNATURE, 3, 3, 10.0))
    }

    fn open(&mut self) -> Result<RowsCursor<'_, BandKeys>> {
        Ok(RowsCursor::new(BandKeys))
    }
}

/// The band keys of the constraint values, checked.
fn keys_of(idx_num: c_int, args: &Filters<'_>) -> Result<Vec<i64>> {
    let given = planned_arguments(idx_num, args, 3);
    let signature = match given[0] {
        None | Some(ValueRef::Null) => return Ok(Vec::new()),
        Some(ValueRef::Blob(b)) => Signature::parse(b)
            .map_err(|e| module_error(NAME, e.as_str(), &format!("blob of {} bytes", b.len())))?,
        Some(other) => {
            return Err(module_error(
                NAME,
                "not a minhash signature",
                &describe(other),
            ))
        }
    };
    let positive = |v: Option<ValueRef<'_>>, name: &str| -> Result<Option<usize>> {
        match v {
            None | Some(ValueRef::Null) => Ok(None),
            Some(ValueRef::Integer(i)) if i > 0 => Ok(Some(i as usize)),
            Some(other) => Err(module_error(
                NAME,
                &format!("{name} must be a positive integer"),
                &describe(other),
            )),
        }
    };
    let Some(bands) = positive(given[1], "bands")? else {
        return Err(module_error(NAME, "bands is required", "NULL"));
    };
    let rows = positive(given[2], "rows")?;
    band_keys(&signature, bands, rows).map_err(|e| {
        let rows = rows.map_or("num_perm / bands".to_string(), |r| r.to_string());
        module_error(NAME, e.as_str(), &format!("{bands} * {rows}"))
    })
}

/// A cursor's source: the band keys, in band order.
struct BandKeys;

impl RowSource for BandKeys {
    const NAME: &'static str = NAME;
    type Row = i64;

    fn rows(&mut self, idx_num: c_int, args: &Filters<'_>) -> Result<Vec<i64>> {
        keys_of(idx_num, args)
    }

    fn column(key: &i64, band: usize, ctx: &mut Context, i: c_int) -> Result<()> {
        match i {
            0 => ctx.set_result(&(band as i64)),
            1 => ctx.set_result(key),
            _ => ctx.set_result(&rusqlite::types::Null),
        }
    }
}
