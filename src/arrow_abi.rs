//! Phase 1 over Arrow buffers in place, for the Python package's Spark
//! layer: `sqlite_dedup_phase1_arrow` takes a record batch through the
//! Arrow C data interface (pyarrow's `RecordBatch._export_to_c`), reads
//! its buffers where they are, and gives the rows of
//! `dedup_phase1_arrow` (the same function, [`prepare_columns`]) as one
//! batch in `crate::core::arrow_columns`'s format; `sqlite_dedup_free`
//! gives its memory back. Nothing here is reachable from SQL: the package
//! loads the library a second time with `ctypes` and calls these.
//!
//! The batch is a struct array (format `+s`) whose children are an Int64
//! column `rid` and any of the page columns, each `u` (UTF-8), `z`
//! (binary), `l` (int64), `i` (int32) or `n` (null). The URL options are
//! those `temp._dedup_run` holds after `dedup_prepare(settings)` (the
//! settings read and checked by the extension, as for every run).
//!
//! Reference: the Arrow C data interface
//! (arrow.apache.org/docs/format/CDataInterface.html).

use std::ffi::{c_char, c_int, c_void, CStr, CString};

use crate::core::arrow_columns::{ColumnView, Kind};
use crate::core::phase1::Rules;
use crate::sqlite::pipeline::external::phase1_arrow::prepare_columns;

/// `struct ArrowSchema` of the C data interface.
#[repr(C)]
pub struct ArrowSchema {
    format: *const c_char,
    name: *const c_char,
    metadata: *const c_char,
    flags: i64,
    n_children: i64,
    children: *mut *mut ArrowSchema,
    dictionary: *mut ArrowSchema,
    release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    private_data: *mut c_void,
}

/// `struct ArrowArray` of the C data interface.
#[repr(C)]
pub struct ArrowArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut ArrowArray,
    dictionary: *mut ArrowArray,
    release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    private_data: *mut c_void,
}

/// The columns of a struct array, borrowing its buffers.
///
/// # Safety
/// `array` and `schema` are a valid exported record batch, alive while
/// the columns are used.
unsafe fn columns<'a>(
    array: &'a ArrowArray,
    schema: &'a ArrowSchema,
) -> Result<(usize, Vec<ColumnView<'a>>), String> {
    let format = CStr::from_ptr(schema.format).to_bytes();
    if format != b"+s" || array.n_children != schema.n_children {
        return Err("batch must be a record batch (a struct array)".into());
    }
    let rows = usize::try_from(array.length).map_err(|_| "a negative length")?;
    let parent = usize::try_from(array.offset).map_err(|_| "a negative offset")?;
    let mut out = Vec::new();
    for k in 0..usize::try_from(array.n_children).unwrap_or(0) {
        let child = &**array.children.add(k);
        let field = &**schema.children.add(k);
        let name = CStr::from_ptr(field.name)
            .to_str()
            .map_err(|_| "a column name is not UTF-8")?;
        let kind = match CStr::from_ptr(field.format).to_bytes() {
            // (A column of nulls reads as no column: every row NULL.)
            b"n" => continue,
            b"u" => Kind::Utf8,
            b"z" => Kind::Binary,
            b"l" => Kind::Int64,
            b"i" => Kind::Int32,
            other => {
                return Err(format!(
                    "column {name} has the Arrow format {}, not u, z, l, i or n",
                    String::from_utf8_lossy(other)
                ))
            }
        };
        let skip = usize::try_from(child.offset)
            .ok()
            .and_then(|o| parent.checked_add(o))
            .ok_or("a negative or too large offset")?;
        let too_large = || format!("column {name} has more rows than memory can hold");
        let end = skip.checked_add(rows).ok_or_else(too_large)?;
        // (Every buffer's size below is at most 4 * (end + 1) or 8 * end.)
        end.checked_add(1)
            .and_then(|e| e.checked_mul(8))
            .ok_or_else(too_large)?;
        if usize::try_from(child.length).unwrap_or(0)
            < parent.checked_add(rows).ok_or_else(too_large)?
        {
            return Err(format!("column {name} is shorter than the batch"));
        }
        let buffer = |i: i64| -> *const u8 {
            if i < child.n_buffers {
                *child.buffers.add(i as usize) as *const u8
            } else {
                std::ptr::null()
            }
        };
        let slice = |p: *const u8, len: usize| -> &'a [u8] {
            if p.is_null() || len == 0 {
                &[]
            } else {
                std::slice::from_raw_parts(p, len)
            }
        };
        let validity = slice(buffer(0), end.div_ceil(8));
        let (offsets, data) = match kind {
            Kind::Utf8 | Kind::Binary => {
                let offsets = slice(buffer(1), 4 * (end + 1));
                let last = if offsets.len() >= 4 * (end + 1) {
                    i32::from_le_bytes(offsets[4 * end..4 * end + 4].try_into().expect("4 bytes"))
                } else {
                    0
                };
                (
                    offsets,
                    slice(
                        buffer(2),
                        usize::try_from(last).map_err(|_| "a negative offset")?,
                    ),
                )
            }
            Kind::Int64 => (&[][..], slice(buffer(1), 8 * end)),
            Kind::Int32 => (&[][..], slice(buffer(1), 4 * end)),
        };
        out.push(ColumnView::from_buffers(
            name, kind, skip, validity, offsets, data,
        ));
    }
    Ok((rows, out))
}

/// Phase 1 of the record batch `array`/`schema` (see the module's doc);
/// on success 0 and the output batch in `*out` (`*out_len` bytes, to be
/// given back with [`sqlite_dedup_free`]); on failure 1 and a message in
/// `*error` (given back with [`sqlite_dedup_free_error`]).
///
/// # Safety
/// The pointers are valid: an exported record batch, NUL-terminated
/// options (`strict_options` may be null), and places for the results.
#[no_mangle]
pub unsafe extern "C" fn sqlite_dedup_phase1_arrow(
    array: *const ArrowArray,
    schema: *const ArrowSchema,
    url_options: *const c_char,
    strict_options: *const c_char,
    reference: c_int,
    out: *mut *mut u8,
    out_len: *mut usize,
    error: *mut *mut c_char,
) -> c_int {
    let result = std::panic::catch_unwind(|| -> Result<Vec<u8>, String> {
        let text = |p: *const c_char| -> Result<Option<&str>, String> {
            if p.is_null() {
                return Ok(None);
            }
            CStr::from_ptr(p)
                .to_str()
                .map(Some)
                .map_err(|_| "options are not UTF-8".to_string())
        };
        let mut rules = Rules::new(
            text(url_options)?.unwrap_or(""),
            text(strict_options)?,
            reference != 0,
            false,
        )
        .map_err(|e| e.to_string())?;
        let (rows, columns) = columns(&*array, &*schema)?;
        prepare_columns(rows, &columns, &mut rules).map_err(|e| match e {
            rusqlite::Error::UserFunctionError(e) => e.to_string(),
            other => other.to_string(),
        })
    })
    .unwrap_or_else(|_| Err("internal error (a bug; please report it)".into()));
    match result {
        Ok(bytes) => {
            let mut bytes = bytes.into_boxed_slice();
            *out_len = bytes.len();
            *out = bytes.as_mut_ptr();
            std::mem::forget(bytes);
            0
        }
        Err(message) => {
            *error = CString::new(message.replace('\0', " "))
                .expect("no NUL")
                .into_raw();
            1
        }
    }
}

/// Gives back a batch [`sqlite_dedup_phase1_arrow`] made.
///
/// # Safety
/// `p` and `len` are what it gave, given back once.
#[no_mangle]
pub unsafe extern "C" fn sqlite_dedup_free(p: *mut u8, len: usize) {
    if !p.is_null() {
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, len)));
    }
}

/// Gives back an error message [`sqlite_dedup_phase1_arrow`] made.
///
/// # Safety
/// `p` is what it gave, given back once.
#[no_mangle]
pub unsafe extern "C" fn sqlite_dedup_free_error(p: *mut c_char) {
    if !p.is_null() {
        drop(CString::from_raw(p));
    }
}
