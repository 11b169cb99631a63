//! Elections: one survivor per group of rows, the first of the group in an
//! order. A row's group and its place in the order are byte strings (the
//! caller builds the order's with [`OrderKey`]): rows are in one group when
//! their group bytes are equal, and a row comes first when its order bytes
//! sort first, byte by byte. The sort runs on 64-bit hashes of the groups
//! (the bytes compared only where hashes meet), so a million rows elect in
//! a fraction of a second.
//!
//! Cost: O(n log n) for n rows (a sort of 64-bit hashes), plus the bytes of
//! the keys compared where two hashes meet.
//!
//! Reference: the elections of the reference pipeline, whose orders
//! `sql/02_url_winners.sql` and `sql/03_content_winners.sql` spell out.

use std::cmp::Ordering;
use std::hash::Hasher;

/// A value as SQLite orders values: NULL, then numbers (integers and reals
/// compared by value), then text (by its bytes, the BINARY collation), then
/// BLOBs (by their bytes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sortable<'a> {
    /// NULL: before every other value.
    Null,
    /// An integer.
    Integer(i64),
    /// A real (SQLite stores no NaN).
    Real(f64),
    /// Text, as UTF-8 bytes.
    Text(&'a [u8]),
    /// A BLOB.
    Blob(&'a [u8]),
}

/// One row's order key: its values in turn, each ascending or descending,
/// encoded so that comparing two keys byte by byte compares the rows value
/// by value as SQLite orders them. Each value is a tag (NULL, number, text,
/// BLOB), then for a number its double's bits in order and a mark (with
/// the rest of an integer its double rounded away, past 2^53), for text
/// and BLOBs their bytes with 0x00 escaped as 0x00 0xFF and 0x00 0x01 to
/// end them, so that no value's encoding is a prefix of another's; a
/// descending value's encoding is inverted bit by bit. A small number
/// takes 10 bytes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct OrderKey {
    bytes: Vec<u8>,
}

impl OrderKey {
    /// An empty key (every row equal).
    pub fn new() -> OrderKey {
        OrderKey::default()
    }

    /// Empties the key for the next row, keeping its buffer.
    pub fn clear(&mut self) {
        self.bytes.clear();
    }

    /// Appends one value: NULL sorts before every value ascending and
    /// after them descending.
    pub fn push(&mut self, value: Sortable<'_>, descending: bool) {
        let start = self.bytes.len();
        match value {
            Sortable::Null => self.bytes.push(0x01),
            Sortable::Integer(i) => {
                let f = i as f64;
                self.number(f, i128::from(i) - f as i128)
            }
            Sortable::Real(r) => self.number(r, 0),
            Sortable::Text(t) => self.escaped(0x03, t),
            Sortable::Blob(b) => self.escaped(0x04, b),
        }
        if descending {
            for b in &mut self.bytes[start..] {
                *b = !*b;
            }
        }
    }

    /// A number: its double `f` in order, then `offset`, what an integer
    /// differs from `f` by (less than 2^11 either way).
    fn number(&mut self, f: f64, offset: i128) {
        self.bytes.push(0x02);
        self.bytes.extend_from_slice(&ordered_bits(f).to_be_bytes());
        match offset.cmp(&0) {
            Ordering::Equal => self.bytes.push(0x80),
            other => {
                self.bytes
                    .push(if other == Ordering::Less { 0x7F } else { 0x81 });
                let o = (offset.clamp(i64::MIN.into(), i64::MAX.into()) as i64 as u64) ^ (1 << 63);
                self.bytes.extend_from_slice(&o.to_be_bytes());
            }
        }
    }

    fn escaped(&mut self, tag: u8, value: &[u8]) {
        self.bytes.push(tag);
        for &b in value {
            self.bytes.push(b);
            if b == 0 {
                self.bytes.push(0xFF);
            }
        }
        self.bytes.extend_from_slice(&[0x00, 0x01]);
    }

    /// The encoded key.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// A double's bits as an unsigned integer in the double's order (-0.0 as
/// 0.0): compared as integers, two such values compare as the doubles.
pub fn ordered_bits(f: f64) -> u64 {
    let f = if f == 0.0 { 0.0 } else { f };
    let bits = f.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits ^ (1 << 63)
    }
}

/// The rows of an election, their keys held in one buffer.
#[derive(Debug, Default)]
pub struct Ballots {
    bytes: Vec<u8>,
    rows: Vec<Ballot>,
}

#[derive(Debug)]
struct Ballot {
    id: i64,
    hash: u64,
    /// Where its group's bytes start in the buffer; its order's follow.
    start: usize,
    group_len: u32,
    order_len: u32,
}

impl Ballot {
    fn group<'b>(&self, bytes: &'b [u8]) -> &'b [u8] {
        &bytes[self.start..self.start + self.group_len as usize]
    }

    fn order<'b>(&self, bytes: &'b [u8]) -> &'b [u8] {
        let at = self.start + self.group_len as usize;
        &bytes[at..at + self.order_len as usize]
    }
}

impl Ballots {
    /// No rows yet.
    pub fn new() -> Ballots {
        Ballots::default()
    }

    /// Adds row `id` of group `group` at `order`.
    pub fn add(&mut self, id: i64, group: &[u8], order: &[u8]) {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        h.write(group);
        self.add_hashed(id, h.finish(), group, order)
    }

    /// [`Ballots::add`] with the group's hash given (tests give one hash
    /// to every group, so that only the bytes tell groups apart).
    fn add_hashed(&mut self, id: i64, hash: u64, group: &[u8], order: &[u8]) {
        assert!(self.rows.len() < u32::MAX as usize, "fewer than 2^32 rows");
        let start = self.bytes.len();
        self.bytes.extend_from_slice(group);
        self.bytes.extend_from_slice(order);
        self.rows.push(Ballot {
            id,
            hash,
            start,
            group_len: u32::try_from(group.len()).expect("a group key under 4 GB"),
            order_len: u32::try_from(order.len()).expect("an order key under 4 GB"),
        });
    }

    /// The rows added.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Each row's id and its group's survivor (the row first in the order;
    /// of rows equal in it, the one added first), in the order the rows
    /// were added.
    pub fn elect(self) -> Vec<(i64, i64)> {
        let Ballots { bytes, rows } = self;
        let survivor = {
            let bytes = &bytes[..];
            // Rows by their group's hash; within a run of one hash, by the
            // group's bytes only when they differ (a collision), then the
            // first of each group by its order bytes.
            let mut at: Vec<(u64, u32)> = rows
                .iter()
                .enumerate()
                .map(|(i, r)| (r.hash, i as u32))
                .collect();
            at.sort_unstable();
            let mut survivor = vec![0i64; rows.len()];
            let mut start = 0;
            while start < at.len() {
                let end = start
                    + at[start..]
                        .iter()
                        .take_while(|x| x.0 == at[start].0)
                        .count();
                let run = &mut at[start..end];
                let group = |i: u32| rows[i as usize].group(bytes);
                if run.iter().any(|x| group(x.1) != group(run[0].1)) {
                    run.sort_by(|x, y| group(x.1).cmp(group(y.1)).then(x.1.cmp(&y.1)));
                }
                let mut first = 0;
                while first < run.len() {
                    let g = group(run[first].1);
                    let n = run[first..].iter().take_while(|x| group(x.1) == g).count();
                    let members = &run[first..first + n];
                    // (Members are in the order added: the first of equal
                    // orders wins.)
                    let best = members
                        .iter()
                        .min_by(|x, y| {
                            rows[x.1 as usize]
                                .order(bytes)
                                .cmp(rows[y.1 as usize].order(bytes))
                        })
                        .map(|x| rows[x.1 as usize].id)
                        .unwrap_or_default();
                    for x in members {
                        survivor[x.1 as usize] = best;
                    }
                    first += n;
                }
                start = end;
            }
            survivor
        };
        drop(bytes);
        rows.iter().zip(survivor).map(|(r, s)| (r.id, s)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(values: &[(Sortable<'_>, bool)]) -> Vec<u8> {
        let mut k = OrderKey::new();
        for &(v, desc) in values {
            k.push(v, desc);
        }
        k.as_bytes().to_vec()
    }

    /// SQLite's order of two values, written out directly: type first,
    /// numbers by exact value (an integer against a real by its integer
    /// part, then the fraction), text and BLOBs by bytes.
    fn sqlite_order(a: Sortable<'_>, b: Sortable<'_>) -> Ordering {
        use Sortable::*;
        let class = |v: &Sortable<'_>| match v {
            Null => 0,
            Integer(_) | Real(_) => 1,
            Text(_) => 2,
            Blob(_) => 3,
        };
        let int_real = |i: i64, r: f64| -> Ordering {
            if r >= 9.3e18 {
                Ordering::Less
            } else if r < -9.3e18 {
                Ordering::Greater
            } else {
                let t = r.trunc();
                i128::from(i)
                    .cmp(&(t as i128))
                    .then_with(|| 0.0f64.partial_cmp(&(r - t)).unwrap())
            }
        };
        match (a, b) {
            (Integer(x), Integer(y)) => x.cmp(&y),
            (Real(x), Real(y)) => x.partial_cmp(&y).unwrap(),
            (Integer(x), Real(y)) => int_real(x, y),
            (Real(x), Integer(y)) => int_real(y, x).reverse(),
            (Text(x), Text(y)) | (Blob(x), Blob(y)) => x.cmp(y),
            _ => class(&a).cmp(&class(&b)),
        }
    }

    const P53: i64 = 1 << 53;
    const VALUES: [Sortable<'static>; 22] = [
        Sortable::Null,
        Sortable::Integer(i64::MIN),
        Sortable::Real(-1e300),
        Sortable::Integer(-3),
        Sortable::Real(-2.5),
        Sortable::Integer(0),
        Sortable::Real(-0.0),
        Sortable::Real(0.5),
        Sortable::Integer(1),
        Sortable::Real(1.0),
        Sortable::Integer(P53),
        Sortable::Integer(P53 + 1),
        Sortable::Real(9007199254740994.0),
        Sortable::Integer(P53 + 3),
        Sortable::Integer(i64::MAX),
        Sortable::Real(9.223_372_036_854_776e18), // 2^63
        Sortable::Text(b""),
        Sortable::Text(b"a"),
        Sortable::Text(b"a\0"),
        Sortable::Text(b"a\x01"),
        Sortable::Blob(b""),
        Sortable::Blob(b"a\0\0"),
    ];

    /// Keys of pairs of values compare as SQLite orders the pairs, first
    /// value ascending or descending, and a key of equal values is equal
    /// (1 and 1.0, 0 and -0.0).
    #[test]
    fn order_keys_compare_as_sqlite_orders_the_values() {
        for desc in [false, true] {
            for a in VALUES {
                for b in VALUES {
                    for (x, y) in [(1, 2), (2, 1), (1, 1)] {
                        let ka = key(&[(a, desc), (Sortable::Integer(x), false)]);
                        let kb = key(&[(b, desc), (Sortable::Integer(y), false)]);
                        let first = sqlite_order(a, b);
                        let want = if desc { first.reverse() } else { first }.then(x.cmp(&y));
                        assert_eq!(ka.cmp(&kb), want, "{a:?} {b:?} desc={desc} {x} {y}");
                    }
                }
            }
        }
        assert_eq!(key(&[(Sortable::Integer(5), false)]).len(), 10);
    }

    /// Each group's survivor is its first row in the order; ties go to the
    /// row added first; groups are told apart by their bytes, not only
    /// their hashes.
    #[test]
    fn each_group_elects_its_first_row() {
        let t = |s: &'static [u8]| key(&[(Sortable::Text(s), false)]);
        let mut b = Ballots::new();
        b.add(10, b"g1", &t(b"2"));
        b.add(11, b"g2", &t(b"1"));
        b.add(12, b"g1", &t(b"1"));
        b.add(13, b"g1", &t(b"1"));
        b.add(14, b"g3", &key(&[(Sortable::Null, false)]));
        b.add(15, b"g2", &key(&[(Sortable::Null, true)]));
        assert_eq!(b.len(), 6);
        assert_eq!(
            b.elect(),
            vec![(10, 12), (11, 11), (12, 12), (13, 12), (14, 14), (15, 11)]
        );
        assert!(Ballots::new().elect().is_empty());
    }

    /// Against a direct election (group by bytes, least order, first
    /// added) on random rows with few distinct groups and orders, and
    /// again with every group's hash the same.
    #[test]
    fn matches_a_direct_election_on_random_rows() {
        let mut seed = 7u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..50 {
            let n = (next() % 60) as usize;
            let rows: Vec<(i64, Vec<u8>, Vec<u8>)> = (0..n)
                .map(|i| {
                    let g = vec![b'a' + (next() % 4) as u8; (next() % 3) as usize];
                    let v = VALUES[(next() % VALUES.len() as u64) as usize];
                    let o = key(&[
                        (v, next() % 2 == 0),
                        (Sortable::Integer((next() % 2) as i64), false),
                    ]);
                    (i as i64 * 3, g, o)
                })
                .collect();
            let (mut b, mut colliding) = (Ballots::new(), Ballots::new());
            for (id, g, o) in &rows {
                b.add(*id, g, o);
                colliding.add_hashed(*id, 42, g, o);
            }
            let want: Vec<(i64, i64)> = rows
                .iter()
                .map(|(id, g, _)| {
                    let best = rows
                        .iter()
                        .filter(|(_, h, _)| h == g)
                        .min_by(|x, y| x.2.cmp(&y.2))
                        .unwrap();
                    (*id, best.0)
                })
                .collect();
            assert_eq!(b.elect(), want);
            assert_eq!(colliding.elect(), want);
        }
    }
}
