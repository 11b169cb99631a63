//! Rows as Arrow columns: each column's validity bitmap, offsets and data
//! laid out as the Arrow columnar format has them, so that a reader such as
//! pyarrow's `Array.from_buffers` takes them without a value per cell in
//! the host language. One batch is one byte string:
//!
//! ```text
//! "DDARROW1" | rows: u64 | columns: u64 | each column:
//!   name length: u64 | name (UTF-8) | kind: u64 (Kind as u64) |
//!   buffers, each its length: u64 then its bytes:
//!     validity (bit i set: row i not null), then
//!     Int64/Int32: the values; Utf8/Binary: the rows+1 offsets (i32), the data
//! ```
//!
//! Every integer is little-endian; every length field and buffer starts at a
//! multiple of 8 bytes (zero padding), as Arrow wants its buffers aligned.
//!
//! Cost: one pass over the rows; a batch takes the values' bytes, 4 bytes
//! a row for each text or BLOB column's offsets, a validity bit a row and
//! cell, and up to 7 bytes of padding a buffer.
//!
//! Reference: the Arrow columnar format
//! (arrow.apache.org/docs/format/Columnar.html): validity bitmaps, 32-bit
//! offsets, buffers aligned to 8 bytes.
use crate::core::invalid::Invalid;

/// What a column holds, and so its Arrow type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Arrow `int64`.
    Int64 = 1,
    /// Arrow `int32`.
    Int32 = 2,
    /// Arrow `string` (UTF-8, 32-bit offsets).
    Utf8 = 3,
    /// Arrow `binary` (32-bit offsets).
    Binary = 4,
}

/// One column being filled row by row.
#[derive(Debug, Clone)]
pub struct Column {
    name: String,
    kind: Kind,
    rows: usize,
    validity: Vec<u8>,
    offsets: Vec<i32>,
    data: Vec<u8>,
}

impl Column {
    /// An empty column.
    pub fn new(name: &str, kind: Kind) -> Self {
        let offsets = match kind {
            Kind::Utf8 | Kind::Binary => vec![0],
            _ => Vec::new(),
        };
        Column {
            name: name.to_string(),
            kind,
            rows: 0,
            validity: Vec::new(),
            offsets,
            data: Vec::new(),
        }
    }

    /// The column's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the column holds.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Rows so far.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// True before the first row.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    fn mark(&mut self, valid: bool) {
        if self.rows.is_multiple_of(8) {
            self.validity.push(0);
        }
        if valid {
            *self.validity.last_mut().expect("pushed above") |= 1 << (self.rows % 8);
        }
        self.rows += 1;
    }

    /// Appends a null.
    pub fn push_null(&mut self) {
        match self.kind {
            Kind::Int64 => self.data.extend_from_slice(&0i64.to_le_bytes()),
            Kind::Int32 => self.data.extend_from_slice(&0i32.to_le_bytes()),
            Kind::Utf8 | Kind::Binary => self
                .offsets
                .push(*self.offsets.last().expect("starts with 0")),
        }
        self.mark(false);
    }

    /// Appends an integer; an error says why it does not fit the column.
    pub fn push_int(&mut self, v: i64) -> Result<(), Invalid> {
        match self.kind {
            Kind::Int64 => self.data.extend_from_slice(&v.to_le_bytes()),
            Kind::Int32 => {
                let v = i32::try_from(v)
                    .map_err(|_| format!("integer {v} does not fit a 32-bit column"))?;
                self.data.extend_from_slice(&v.to_le_bytes());
            }
            Kind::Utf8 | Kind::Binary => {
                return Err(Invalid::from(format!(
                    "an integer ({v}) in a column of {:?}",
                    self.kind
                )))
            }
        }
        self.mark(true);
        Ok(())
    }

    /// Appends text (Utf8: must be UTF-8) or bytes (Binary).
    pub fn push_bytes(&mut self, b: &[u8]) -> Result<(), Invalid> {
        match self.kind {
            Kind::Utf8 if std::str::from_utf8(b).is_err() => {
                return Err("text that is not valid UTF-8".into())
            }
            Kind::Utf8 | Kind::Binary => {}
            Kind::Int64 | Kind::Int32 => {
                return Err(Invalid::from(format!(
                    "text or bytes in a column of {:?}",
                    self.kind
                )))
            }
        }
        let end = i32::try_from(self.data.len() + b.len()).map_err(|_| {
            "more than 2 GiB of text in one batch: ask for fewer rows a batch".to_string()
        })?;
        self.data.extend_from_slice(b);
        self.offsets.push(end);
        self.mark(true);
        Ok(())
    }
}

fn pad(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
}

fn put_buffer(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
    pad(out);
}

/// One batch of `columns` (all of the same length) as a byte string in the
/// format above; an error when the lengths differ.
pub fn encode(columns: &[Column]) -> Result<Vec<u8>, Invalid> {
    let rows = columns.first().map_or(0, Column::len);
    if let Some(c) = columns.iter().find(|c| c.len() != rows) {
        return Err(Invalid::from(format!(
            "column {} has {} rows, the first {rows}",
            c.name,
            c.len()
        )));
    }
    let size: usize = columns
        .iter()
        .map(|c| c.data.len() + 4 * c.offsets.len() + c.validity.len() + 64)
        .sum();
    let mut out = Vec::with_capacity(24 + size);
    out.extend_from_slice(b"DDARROW1");
    out.extend_from_slice(&(rows as u64).to_le_bytes());
    out.extend_from_slice(&(columns.len() as u64).to_le_bytes());
    for c in columns {
        put_buffer(&mut out, c.name.as_bytes());
        out.extend_from_slice(&(c.kind as u64).to_le_bytes());
        put_buffer(&mut out, &c.validity);
        if matches!(c.kind, Kind::Utf8 | Kind::Binary) {
            let offsets: Vec<u8> = c.offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
            put_buffer(&mut out, &offsets);
        }
        put_buffer(&mut out, &c.data);
    }
    Ok(out)
}

/// One value of a decoded column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    /// Null.
    Null,
    /// An integer (Int64, Int32).
    Integer(i64),
    /// Text (Utf8: the writer promised UTF-8; not checked here).
    Text(&'a [u8]),
    /// Bytes (Binary).
    Blob(&'a [u8]),
}

/// A column of a batch read back ([`decode`]), borrowing the batch.
#[derive(Debug, Clone, Copy)]
pub struct ColumnView<'a> {
    name: &'a str,
    kind: Kind,
    /// Rows of the buffers before the column's first (Arrow's offset).
    skip: usize,
    validity: &'a [u8],
    offsets: &'a [u8],
    data: &'a [u8],
}

impl<'a> ColumnView<'a> {
    /// A column over Arrow buffers as they are: its first row is row `skip`
    /// of the buffers (Arrow's offset); `validity` empty when every row is
    /// valid, `offsets` empty for a column of integers. The caller checks
    /// that the buffers hold its rows (as [`decode`] does).
    pub fn from_buffers(
        name: &'a str,
        kind: Kind,
        skip: usize,
        validity: &'a [u8],
        offsets: &'a [u8],
        data: &'a [u8],
    ) -> Self {
        ColumnView {
            name,
            kind,
            skip,
            validity,
            offsets,
            data,
        }
    }

    /// The column's name.
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// Row `i`'s value (`i` below the batch's rows).
    pub fn cell(&self, i: usize) -> Cell<'a> {
        let i = i + self.skip;
        // (An empty validity buffer: every row is valid, as Arrow allows.)
        if !self.validity.is_empty() && self.validity[i / 8] & (1 << (i % 8)) == 0 {
            return Cell::Null;
        }
        let at = |b: &[u8], k: usize, w: usize| -> [u8; 8] {
            let mut out = [0u8; 8];
            out[..w].copy_from_slice(&b[k * w..k * w + w]);
            out
        };
        match self.kind {
            Kind::Int64 => Cell::Integer(i64::from_le_bytes(at(self.data, i, 8))),
            Kind::Int32 => Cell::Integer(i64::from(i32::from_le_bytes(
                at(self.data, i, 4)[..4].try_into().expect("4 bytes"),
            ))),
            Kind::Utf8 | Kind::Binary => {
                let offset = |k: usize| {
                    i32::from_le_bytes(at(self.offsets, k, 4)[..4].try_into().expect("4 bytes"))
                        as usize
                };
                let bytes = &self.data[offset(i)..offset(i + 1)];
                if self.kind == Kind::Utf8 {
                    Cell::Text(bytes)
                } else {
                    Cell::Blob(bytes)
                }
            }
        }
    }
}

/// The rows and columns of a batch in the format above, each column's
/// buffers checked against the rows (offsets in order and within the data);
/// an error says what is wrong.
pub fn decode(blob: &[u8]) -> Result<(usize, Vec<ColumnView<'_>>), Invalid> {
    let mut at = 0usize;
    let u64_at = |at: usize| -> Result<u64, Invalid> {
        blob.get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .ok_or_else(|| "the batch ends early".to_string())
            .map_err(Invalid::from)
    };
    if blob.get(..8) != Some(b"DDARROW1") {
        return Err("not a batch of Arrow columns (no DDARROW1 header)".into());
    }
    let rows = usize::try_from(u64_at(8)?).map_err(|_| "too many rows".to_string())?;
    let count = u64_at(16)?;
    at += 24;
    let take = |at: &mut usize| -> Result<&[u8], Invalid> {
        let size = usize::try_from(u64_at(*at)?).map_err(|_| "a buffer too large".to_string())?;
        let start = *at + 8;
        let end = start.checked_add(size).ok_or("a buffer too large")?;
        let bytes = blob.get(start..end).ok_or("the batch ends early")?;
        *at = end + (8 - end % 8) % 8;
        Ok(bytes)
    };
    let mut columns = Vec::new();
    for _ in 0..count {
        let name = std::str::from_utf8(take(&mut at)?).map_err(|_| "a column name is not UTF-8")?;
        let kind = match u64_at(at)? {
            1 => Kind::Int64,
            2 => Kind::Int32,
            3 => Kind::Utf8,
            4 => Kind::Binary,
            k => {
                return Err(Invalid::from(format!(
                    "column {name} has an unknown kind {k}"
                )))
            }
        };
        at += 8;
        let validity = take(&mut at)?;
        let offsets = if matches!(kind, Kind::Utf8 | Kind::Binary) {
            take(&mut at)?
        } else {
            &[]
        };
        let data = take(&mut at)?;
        let bad = |why: &str| format!("column {name}: {why}");
        if !validity.is_empty() && validity.len() < rows.div_ceil(8) {
            return Err(Invalid::from(bad("its validity is shorter than its rows")));
        }
        // (Sizes from the batch's own numbers: a count near 2^61 must not
        // wrap when multiplied, so each product is checked.)
        let bytes = |width: usize, n: Option<usize>| n.and_then(|n| n.checked_mul(width));
        match kind {
            Kind::Int64 if bytes(8, Some(rows)).is_none_or(|b| data.len() < b) => {
                return Err(Invalid::from(bad(&format!(
                    "fewer values than rows ({rows} rows)"
                ))))
            }
            Kind::Int32 if bytes(4, Some(rows)).is_none_or(|b| data.len() < b) => {
                return Err(Invalid::from(bad(&format!(
                    "fewer values than rows ({rows} rows)"
                ))))
            }
            Kind::Utf8 | Kind::Binary => {
                if bytes(4, rows.checked_add(1)).is_none_or(|b| offsets.len() < b) {
                    return Err(Invalid::from(bad(&format!(
                        "fewer offsets than rows ({rows} rows)"
                    ))));
                }
                let mut last = 0i64;
                for k in 0..=rows {
                    let o = i64::from(i32::from_le_bytes(
                        offsets[4 * k..4 * k + 4].try_into().expect("4 bytes"),
                    ));
                    if o < last || o as usize > data.len() || (k == 0 && o != 0) {
                        return Err(Invalid::from(bad(
                            "its offsets are out of order or past its data",
                        )));
                    }
                    last = o;
                }
            }
            _ => {}
        }
        columns.push(ColumnView::from_buffers(
            name, kind, 0, validity, offsets, data,
        ));
    }
    Ok((rows, columns))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn a_hand_checked_batch() {
        let mut ids = Column::new("id", Kind::Int64);
        let mut names = Column::new("name", Kind::Utf8);
        for (id, name) in [(Some(7), Some("ab")), (None, None), (Some(-1), Some("é"))] {
            match id {
                Some(v) => ids.push_int(v).unwrap(),
                None => ids.push_null(),
            }
            match name {
                Some(s) => names.push_bytes(s.as_bytes()).unwrap(),
                None => names.push_null(),
            }
        }
        let b = encode(&[ids, names]).unwrap();
        assert_eq!(&b[..8], b"DDARROW1");
        assert_eq!((u64_at(&b, 8), u64_at(&b, 16)), (3, 2));
        // Column "id": name (2 bytes, padded to 8), kind 1, validity 0b101,
        // then 3 values.
        assert_eq!(u64_at(&b, 24), 2);
        assert_eq!(&b[32..34], b"id");
        assert_eq!(u64_at(&b, 40), Kind::Int64 as u64);
        assert_eq!((u64_at(&b, 48), b[56]), (1, 0b101));
        assert_eq!(u64_at(&b, 64), 24);
        let values: Vec<i64> = (0..3).map(|i| u64_at(&b, 72 + 8 * i) as i64).collect();
        assert_eq!(values, vec![7, 0, -1]);
        // Column "name": offsets 0, 2, 2, 4 and the data "abé".
        let at = 96;
        assert_eq!(&b[at + 8..at + 12], b"name");
        assert_eq!(u64_at(&b, at + 16), Kind::Utf8 as u64);
        assert_eq!((u64_at(&b, at + 24), b[at + 32]), (1, 0b101));
        assert_eq!(u64_at(&b, at + 40), 16);
        let offsets: Vec<i32> = (0..4)
            .map(|i| i32::from_le_bytes(b[at + 48 + 4 * i..at + 52 + 4 * i].try_into().unwrap()))
            .collect();
        assert_eq!(offsets, vec![0, 2, 2, 4]);
        assert_eq!(u64_at(&b, at + 64), 4);
        assert_eq!(&b[at + 72..at + 76], "abé".as_bytes());
        assert_eq!(b.len(), at + 80);
        assert!(b.len().is_multiple_of(8));
    }

    #[test]
    fn values_that_do_not_fit_are_refused() {
        let mut c = Column::new("n", Kind::Int32);
        assert!(c.push_int(1 << 40).unwrap_err().as_str().contains("32-bit"));
        assert!(c.push_bytes(b"x").is_err());
        let mut t = Column::new("t", Kind::Utf8);
        assert!(t
            .push_bytes(&[0xff])
            .unwrap_err()
            .as_str()
            .contains("UTF-8"));
        assert!(t.push_int(3).is_err());
        assert!(Column::new("b", Kind::Binary).push_bytes(&[0xff]).is_ok());
        let mut short = Column::new("s", Kind::Int64);
        short.push_null();
        assert!(encode(&[Column::new("e", Kind::Int64), short])
            .unwrap_err()
            .as_str()
            .contains("column s"));
    }

    #[test]
    fn validity_spans_bytes() {
        let mut c = Column::new("n", Kind::Int64);
        for i in 0..19 {
            if i % 3 == 0 {
                c.push_null()
            } else {
                c.push_int(i).unwrap()
            }
        }
        let b = encode(&[c]).unwrap();
        // name "n" padded: validity at 48.
        assert_eq!(u64_at(&b, 48), 3);
        let bits: Vec<bool> = (0..19)
            .map(|i| b[56 + i / 8] & (1 << (i % 8)) != 0)
            .collect();
        assert_eq!(bits, (0..19).map(|i| i % 3 != 0).collect::<Vec<_>>());
    }

    #[test]
    fn a_batch_reads_back_as_written() {
        let mut ids = Column::new("id", Kind::Int64);
        let mut names = Column::new("name", Kind::Utf8);
        let mut raw = Column::new("raw", Kind::Binary);
        for (i, name) in [Some("ab"), None, Some("é"), Some("")].iter().enumerate() {
            ids.push_int(i as i64 * 10 - 5).unwrap();
            match name {
                Some(s) => names.push_bytes(s.as_bytes()).unwrap(),
                None => names.push_null(),
            }
            raw.push_bytes(&[i as u8, 0xff]).unwrap();
        }
        let blob = encode(&[ids, names, raw]).unwrap();
        let (rows, cols) = decode(&blob).unwrap();
        assert_eq!(rows, 4);
        assert_eq!(
            cols.iter().map(|c| c.name()).collect::<Vec<_>>(),
            ["id", "name", "raw"]
        );
        assert_eq!(cols[0].cell(3), Cell::Integer(25));
        assert_eq!(cols[1].cell(0), Cell::Text(b"ab"));
        assert_eq!(cols[1].cell(1), Cell::Null);
        assert_eq!(cols[1].cell(2), Cell::Text("é".as_bytes()));
        assert_eq!(cols[1].cell(3), Cell::Text(b""));
        assert_eq!(cols[2].cell(2), Cell::Blob(&[2, 0xff]));
        assert!(decode(&blob[..blob.len() - 8]).is_err());
        assert!(decode(b"nonsense")
            .unwrap_err()
            .as_str()
            .contains("DDARROW1"));
    }

    #[test]
    fn a_row_count_whose_buffer_sizes_would_wrap_is_refused() {
        // (Issue 76: 8 * rows wrapped for a count near 2^61, and the check
        // passed, then a slice panicked.)
        for kind in [Kind::Int64, Kind::Int32, Kind::Utf8] {
            let mut c = Column::new("n", kind);
            match kind {
                Kind::Utf8 => c.push_bytes(b"x").unwrap(),
                _ => c.push_int(1).unwrap(),
            }
            let mut blob = encode(&[c]).unwrap();
            for rows in [1u64 << 61, (1u64 << 62) + 1, u64::MAX / 4, u64::MAX] {
                blob[8..16].copy_from_slice(&rows.to_le_bytes());
                let e = decode(&blob).map(|_| ()).unwrap_err();
                assert!(
                    e.as_str().contains("rows") || e.as_str().contains("too many"),
                    "{kind:?} {rows}: {e}"
                );
            }
        }
    }
}
