//! The per-row work of phase 1 as a Python module over Arrow arrays (PyO3),
//! the alternative issue 27 names to the extension on an in-memory SQLite
//! connection. It computes, for the default settings, the values the
//! Spark layer reads from `temp._dedup_rows`, with the same core functions
//! (canonical URLs, text from HTML, normalization, content hash, sort
//! keys), and returns them as one batch of Arrow columns in the
//! extension's format (`dedup::core::arrow_columns`). A bench prototype:
//! no skip reasons (Arrow strings are always valid UTF-8), no learned URL
//! rules, no `prefer`, no placeholders.

use dedup::core::arrow_columns::{encode, Column, Kind};
use dedup::core::{hash, html, text, url};
use dedup::sqlite::functions::sort_key::sort_key;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rusqlite::types::ValueRef;

/// A pyarrow string array's buffers, borrowed: (validity or None, offsets,
/// data, the array's offset).
struct Strings<'a> {
    validity: Option<&'a [u8]>,
    offsets: &'a [i32],
    data: &'a [u8],
    at: usize,
}

fn bytes_of(buffer: &PyBuffer<u8>) -> &[u8] {
    // Safety: the buffer is read-only here and outlives the call (the
    // caller keeps the pyarrow arrays alive).
    unsafe { std::slice::from_raw_parts(buffer.buf_ptr() as *const u8, buffer.len_bytes()) }
}

impl<'a> Strings<'a> {
    fn get(&self, row: usize) -> Option<&'a str> {
        let i = self.at + row;
        if let Some(v) = self.validity {
            if v[i / 8] & (1 << (i % 8)) == 0 {
                return None;
            }
        }
        let (a, b) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        // Safety: pyarrow's string arrays hold UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(&self.data[a..b]) })
    }
}

type Buffers = (Option<PyBuffer<u8>>, PyBuffer<u8>, PyBuffer<u8>, usize);
type IntBuffers = (Option<PyBuffer<u8>>, PyBuffer<u8>, usize);

/// A pyarrow int64 array's buffers, borrowed.
struct Ints<'a> {
    validity: Option<&'a [u8]>,
    values: &'a [i64],
    at: usize,
}

impl<'a> Ints<'a> {
    fn get(&self, row: usize) -> Option<i64> {
        let i = self.at + row;
        match self.validity {
            Some(v) if v[i / 8] & (1 << (i % 8)) == 0 => None,
            _ => Some(self.values[i]),
        }
    }
}

fn ints(b: &IntBuffers) -> Ints<'_> {
    let values = bytes_of(&b.1);
    Ints {
        validity: b.0.as_ref().map(bytes_of),
        // Safety: Arrow's int64 buffers are 8-byte aligned.
        values: unsafe {
            std::slice::from_raw_parts(values.as_ptr() as *const i64, values.len() / 8)
        },
        at: b.2,
    }
}

fn strings(b: &Buffers) -> Strings<'_> {
    let offsets = bytes_of(&b.1);
    Strings {
        validity: b.0.as_ref().map(bytes_of),
        // Safety: Arrow's offset buffers are 4-byte aligned int32s.
        offsets: unsafe {
            std::slice::from_raw_parts(offsets.as_ptr() as *const i32, offsets.len() / 4)
        },
        data: bytes_of(&b.2),
        at: b.3,
    }
}

/// SQLite's `ltrim(substr(content, 1, 64)) LIKE '<%' AND (instr(content,
/// '</') > 0 OR ... LIKE '<!doctype%')`: content the pipeline reads as HTML.
fn is_html(content: &str) -> bool {
    let head: String = content.chars().take(64).collect();
    let head = head.trim_start_matches(' ');
    head.starts_with('<')
        && (content.contains("</") || head.to_ascii_lowercase().starts_with("<!doctype"))
}

/// Phase 1 of `rows` pages: the string columns url, title, content,
/// parsed, content_hash, datetime, crawled as pyarrow buffers, and length
/// (None or an int per row); `opts`, `strict_opts` the run's URL options.
#[pyfunction]
#[pyo3(signature = (rows, rids, columns, lengths, opts, strict_opts=None))]
#[allow(clippy::too_many_arguments)]
fn prepare<'py>(
    py: Python<'py>,
    rows: usize,
    rids: IntBuffers,
    columns: Vec<Buffers>,
    lengths: IntBuffers,
    opts: &str,
    strict_opts: Option<&str>,
) -> PyResult<Bound<'py, PyBytes>> {
    let opts = url::UrlOptions::parse(opts).map_err(PyValueError::new_err)?;
    let strict = strict_opts
        .map(url::UrlOptions::parse)
        .transpose()
        .map_err(PyValueError::new_err)?;
    let (rids, lengths) = (ints(&rids), ints(&lengths));
    let [urls, titles, contents, parseds, hashes, datetimes, crawleds] =
        [0, 1, 2, 3, 4, 5, 6].map(|i| strings(&columns[i]));
    let names = [
        ("rid", Kind::Int64),
        ("discard_reason", Kind::Utf8),
        ("canonical_url", Kind::Utf8),
        ("strict_url", Kind::Utf8),
        ("domain", Kind::Utf8),
        ("content_hash", Kind::Utf8),
        ("https", Kind::Int32),
        ("datetime_key", Kind::Binary),
        ("crawled_key", Kind::Binary),
        ("length_key", Kind::Binary),
        ("url_length", Kind::Int64),
        ("has_text", Kind::Int32),
        ("text", Kind::Utf8),
    ];
    let mut out: Vec<Column> = names.iter().map(|(n, k)| Column::new(n, *k)).collect();
    let bad = |e: String| PyValueError::new_err(e);
    let done = py.allow_threads(|| -> Result<(), String> {
        for row in 0..rows {
            let u = urls.get(row);
            let parsed = parseds.get(row);
            let fill = match (parsed, contents.get(row)) {
                (None, Some(c)) if !c.is_empty() => {
                    let body = if is_html(c) {
                        html::html_text(c)
                    } else {
                        c.to_string()
                    };
                    Some(text::normalize(&format!(
                        "{}\n\n{body}",
                        titles.get(row).unwrap_or("")
                    )))
                }
                _ => None,
            };
            let canonical = u.map(|u| url::canonicalize(u, &opts));
            let hash = match (&fill, hashes.get(row), parsed) {
                (Some(f), _, _) => hash::content_hash(f),
                (None, None, Some(p)) if !p.is_empty() => hash::content_hash(p),
                (None, h, _) => h.map(str::to_string),
            };
            let length = match (&fill, lengths.get(row), parsed) {
                (Some(f), _, _) => Some(f.chars().count() as i64),
                (None, None, Some(p)) if !p.is_empty() => Some(p.chars().count() as i64),
                (None, l, _) => l,
            }
            .filter(|&l| l != 0);
            let text = fill.as_deref().or(parsed).filter(|t| !t.is_empty());
            let https = u.is_some_and(|u| u.len() >= 8 && u[..8].eq_ignore_ascii_case("https://"));
            let c = &mut out;
            c[0].push_int(rids.get(row).ok_or("a NULL id")?)?;
            match &canonical {
                None => {
                    c[1].push_bytes(b"unparseable: NULL url")?;
                    c[2].push_null();
                    c[4].push_null();
                }
                Some(Err(d)) => {
                    c[1].push_bytes(d.to_string().as_bytes())?;
                    c[2].push_null();
                    c[4].push_null();
                }
                Some(Ok(k)) => {
                    c[1].push_null();
                    c[2].push_bytes(k.url.as_bytes())?;
                    c[4].push_bytes(k.domain.as_bytes())?;
                }
            }
            match (u, &strict) {
                (Some(u), Some(s)) => match url::canonicalize(u, s) {
                    Ok(k) => c[3].push_bytes(k.url.as_bytes())?,
                    Err(_) => c[3].push_null(),
                },
                _ => c[3].push_null(),
            }
            match &hash {
                Some(h) => c[5].push_bytes(h.as_bytes())?,
                None => c[5].push_null(),
            }
            c[6].push_int(https as i64)?;
            for (col, value) in [(7, datetimes.get(row)), (8, crawleds.get(row))] {
                match value.and_then(|v| sort_key(ValueRef::Text(v.as_bytes()))) {
                    Some(k) => c[col].push_bytes(&k)?,
                    None => c[col].push_null(),
                }
            }
            match length.and_then(|l| sort_key(ValueRef::Integer(l))) {
                Some(k) => c[9].push_bytes(&k)?,
                None => c[9].push_null(),
            }
            match &canonical {
                Some(Ok(k)) => c[10].push_int(k.url.chars().count() as i64 - https as i64)?,
                _ => c[10].push_null(),
            }
            c[11].push_int(text.is_some() as i64)?;
            match (text, &canonical) {
                (Some(t), Some(Ok(_))) => c[12].push_bytes(t.as_bytes())?,
                _ => c[12].push_null(),
            }
        }
        Ok(())
    });
    done.map_err(bad)?;
    let blob = encode(&out).map_err(bad)?;
    Ok(PyBytes::new(py, &blob))
}

#[pymodule]
fn pyo3_rows(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(prepare, m)?)
}
