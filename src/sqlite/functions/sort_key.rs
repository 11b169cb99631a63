//! `dedup_sort_key(value)`: a BLOB whose byte order (unsigned,
//! lexicographic) is SQLite's order of the values: numbers (integers and
//! reals compared by value), then text (by bytes, as the BINARY
//! collation), then BLOBs; NULL for NULL. Another engine that sorts the
//! BLOBs (Spark sorts binary columns so) elects as the phase scripts do.

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Result};

use crate::core::election::ordered_bits;

/// The sort key of one value (see the module's documentation).
pub fn sort_key(value: ValueRef<'_>) -> Option<Vec<u8>> {
    let number = |f: f64, offset: i128| {
        let ordered = ordered_bits(f);
        // (An integer past 2^53 differs from its nearest double by less
        // than 2^11: the offset keeps such integers apart, in order.)
        let offset = (offset.clamp(i64::MIN as i128, i64::MAX as i128) as i64 as u64) ^ (1 << 63);
        let mut key = Vec::with_capacity(17);
        key.push(1);
        key.extend_from_slice(&ordered.to_be_bytes());
        key.extend_from_slice(&offset.to_be_bytes());
        key
    };
    match value {
        ValueRef::Null => None,
        ValueRef::Integer(i) => {
            let f = i as f64;
            Some(number(f, i as i128 - f as i128))
        }
        ValueRef::Real(r) => Some(number(r, 0)),
        ValueRef::Text(t) => Some([&[2u8][..], t].concat()),
        ValueRef::Blob(b) => Some([&[3u8][..], b].concat()),
    }
}

/// Registers `dedup_sort_key`.
pub fn register(db: &Connection) -> Result<()> {
    db.create_scalar_function(
        "dedup_sort_key",
        1,
        FunctionFlags::SQLITE_UTF8
            | FunctionFlags::SQLITE_DETERMINISTIC
            | FunctionFlags::SQLITE_INNOCUOUS,
        |ctx| Ok(sort_key(ctx.get_raw(0))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite's own ORDER BY over mixed values gives the keys' byte order.
    #[test]
    fn keys_sort_as_sqlite_sorts_the_values() {
        let db = Connection::open_in_memory().unwrap();
        register(&db).unwrap();
        db.execute_batch(
            "CREATE TABLE v(x);
             INSERT INTO v VALUES (3), (2.5), (-1), (-0.5), (0), (0.0), (9007199254740993),
               (9007199254740992.0), (9007199254740992), (-9223372036854775808), (9223372036854775807),
               ('b'), ('a'), (''), ('ab'), ('é'), (x'00'), (x''), (x'ff'), (1e300), (-1e300);",
        )
        .unwrap();
        let by_sqlite: Vec<String> = db
            .prepare("SELECT quote(x) FROM v ORDER BY x, quote(x)")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        let mut rows: Vec<(Vec<u8>, String)> = db
            .prepare("SELECT dedup_sort_key(x), quote(x) FROM v")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        rows.sort();
        let by_key: Vec<String> = rows.into_iter().map(|(_, q)| q).collect();
        assert_eq!(by_key, by_sqlite);
        // Values SQLite holds equal get one key.
        let equal: i64 = db
            .query_row("SELECT dedup_sort_key(0) = dedup_sort_key(-0.0) AND dedup_sort_key(2) = dedup_sort_key(2.0)", [], |r| r.get(0))
            .unwrap();
        assert_eq!(equal, 1);
        let null: Option<Vec<u8>> = db
            .query_row("SELECT dedup_sort_key(NULL)", [], |r| r.get(0))
            .unwrap();
        assert_eq!(null, None);
    }
}
