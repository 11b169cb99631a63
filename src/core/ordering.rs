//! SQLite's `ORDER BY` as byte keys: one BLOB a row whose byte order
//! (unsigned, lexicographic) is the order of its ordering terms, so that
//! another engine (Spark) ranks rows of many databases as SQLite would
//! rank their union.
//!
//! What: a term's order is read from SQLite's own compiled program (the
//! `k(N,...)` key description `EXPLAIN` shows: direction, where NULLs go,
//! collation; [`parse_key_info`]); each value's key (`sort_key`, the
//! value's class then its bytes) is made prefix-free ([`push_term_key`]),
//! NULLs placed first or last, and the whole inverted for `DESC`.
//! Collations: BINARY, NOCASE (ASCII letters folded) and RTRIM (trailing
//! spaces ignored), as SQLite's built-ins compare; any other is refused.
//!
//! Cost: O(bytes of the values) a row; the keys are at most twice the
//! values' length plus three bytes a term.
//!
//! Reference: SQLite's `ORDER BY` (lang_select.html#orderby), its
//! collating sequences (datatype3.html#collation) and `displayP4` in
//! vdbeaux.c, which prints the key description.
use crate::core::invalid::Invalid;

/// How SQLite compares the text values of one term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collation {
    /// Byte by byte (`B` in the key description; also a term without one).
    Binary,
    /// ASCII letters folded to lower case, then byte by byte.
    NoCase,
    /// Trailing spaces ignored, then byte by byte.
    RTrim,
}

/// One ordering term as SQLite compiled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermOrder {
    /// `DESC`.
    pub desc: bool,
    /// NULLs sort as the largest value (`ASC NULLS LAST`, `DESC NULLS
    /// FIRST`); otherwise the smallest, SQLite's default.
    pub big_null: bool,
    /// How text values compare.
    pub collation: Collation,
}

/// The terms of a key description as `EXPLAIN` prints it in `p4`, such as
/// `k(3,-N.NOCASE,B,RTRIM)`; an error names what it cannot take (a
/// collation other than the three built-ins, or text of another shape).
pub fn parse_key_info(p4: &str) -> Result<Vec<TermOrder>, Invalid> {
    let inner = p4
        .strip_prefix("k(")
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| format!("not a key description: {p4}"))?;
    let mut parts = inner.split(',');
    let count: usize = parts
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("not a key description: {p4}"))?;
    let terms = parts
        .map(|field| {
            let (desc, rest) = match field.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, field),
            };
            let (big_null, name) = match rest.strip_prefix("N.") {
                Some(name) => (true, name),
                None => (false, rest),
            };
            let collation = match name.to_ascii_uppercase().as_str() {
                "" | "B" | "BINARY" => Collation::Binary,
                "NOCASE" => Collation::NoCase,
                "RTRIM" => Collation::RTrim,
                _ => return Err(Invalid::new(format!("collation {name}"))),
            };
            Ok(TermOrder {
                desc,
                big_null,
                collation,
            })
        })
        .collect::<Result<Vec<_>, Invalid>>()?;
    if terms.len() != count {
        return Err(Invalid::from(format!("not a key description: {p4}")));
    }
    Ok(terms)
}

/// A text value as `collation` compares it (what its key is made of).
pub fn collated(text: &[u8], collation: Collation) -> std::borrow::Cow<'_, [u8]> {
    match collation {
        Collation::Binary => text.into(),
        Collation::NoCase => text.to_ascii_lowercase().into(),
        Collation::RTrim => {
            let end = text.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
            text[..end].into()
        }
    }
}

/// Appends one term's key to `out`: `value` is the value's sort key (its
/// class byte, then bytes whose order is the class's order of values;
/// None for NULL). Each 0x00 of it is written 0x00 0xFF and the key ends
/// in 0x00 0x01, so that no term's key is a prefix of another's and the
/// next term's bytes compare only between equal values.
pub fn push_term_key(out: &mut Vec<u8>, value: Option<&[u8]>, order: TermOrder) {
    let start = out.len();
    match value {
        None => out.push(if order.big_null { 2 } else { 0 }),
        Some(bytes) => {
            out.push(1);
            for &b in bytes {
                out.push(b);
                if b == 0 {
                    out.push(0xFF);
                }
            }
            out.extend_from_slice(&[0, 1]);
        }
    }
    if order.desc {
        for b in &mut out[start..] {
            *b = !*b;
        }
    }
}

/// A list of ordering terms cut at its top-level commas (not those inside
/// brackets, quotes or comments), each trimmed. The caller checks with
/// SQLite that the pieces read as the list did.
pub fn split_list(list: &str) -> Vec<&str> {
    let bytes = list.as_bytes();
    let (mut out, mut start, mut depth, mut i) = (Vec::new(), 0, 0usize, 0);
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == q {
                        if bytes.get(i + 1) == Some(&q) {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    i += 1;
                }
            }
            b'[' => {
                while i < bytes.len() && bytes[i] != b']' {
                    i += 1;
                }
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                out.push(list[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(list[start.min(list.len())..].trim());
    out
}

/// An ordering term cut into its expression and its tail (`ASC`/`DESC`
/// and `NULLS FIRST`/`NULLS LAST`, as written, possibly empty). The cut
/// only looks at the last words; the caller checks with SQLite that the
/// two read as the term did.
pub fn split_term(term: &str) -> (&str, &str) {
    let mut end = term.trim_end().len();
    let body = &term[..end];
    let last_word = |s: &str| -> Option<(usize, String)> {
        let s = s.trim_end();
        let start = s
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphabetic())
            .last()
            .map(|(i, _)| i)?;
        // (A word only: preceded by a space or a closing bracket.)
        let before = s[..start].chars().last();
        if !matches!(before, Some(c) if c.is_whitespace() || c == ')') {
            return None;
        }
        Some((start, s[start..].to_ascii_uppercase()))
    };
    if let Some((at, word)) = last_word(&body[..end]) {
        if word == "FIRST" || word == "LAST" {
            if let Some((at2, nulls)) = last_word(&body[..at]) {
                if nulls == "NULLS" {
                    end = at2;
                }
            }
        }
    }
    if let Some((at, word)) = last_word(&body[..end]) {
        if word == "ASC" || word == "DESC" {
            end = at;
        }
    }
    let expr = body[..end].trim_end();
    (expr, body[expr.len()..].trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(desc: bool, big_null: bool) -> TermOrder {
        TermOrder {
            desc,
            big_null,
            collation: Collation::Binary,
        }
    }

    #[test]
    fn key_descriptions_as_sqlite_prints_them() {
        let got = parse_key_info("k(3,-N.NOCASE,B,RTRIM)").unwrap();
        assert_eq!(
            got,
            vec![
                TermOrder {
                    desc: true,
                    big_null: true,
                    collation: Collation::NoCase
                },
                order(false, false),
                TermOrder {
                    desc: false,
                    big_null: false,
                    collation: Collation::RTrim
                },
            ]
        );
        assert_eq!(parse_key_info("k(1,)").unwrap(), vec![order(false, false)]);
        assert_eq!(
            parse_key_info("k(1,-MYCOLL)").unwrap_err().as_str(),
            "collation MYCOLL"
        );
        assert!(parse_key_info("k(2,B)").is_err());
        assert!(parse_key_info("dense_rank(0)").is_err());
    }

    #[test]
    fn lists_split_at_their_top_level_commas() {
        assert_eq!(split_list("a DESC, b"), vec!["a DESC", "b"]);
        assert_eq!(
            split_list("coalesce(a, b) , 'x,y' = c, \"d,e\" NULLS LAST"),
            vec!["coalesce(a, b)", "'x,y' = c", "\"d,e\" NULLS LAST"]
        );
        assert_eq!(split_list("a = 'it''s, so'"), vec!["a = 'it''s, so'"]);
        assert_eq!(
            split_list("[a,b] /* x, y */ DESC"),
            vec!["[a,b] /* x, y */ DESC"]
        );
        assert_eq!(split_list("title"), vec!["title"]);
    }

    #[test]
    fn terms_split_at_their_direction_and_nulls() {
        assert_eq!(split_term("crawled DESC"), ("crawled", "DESC"));
        assert_eq!(split_term("a nulls last "), ("a", "nulls last"));
        assert_eq!(
            split_term("length(url) DESC NULLS FIRST"),
            ("length(url)", "DESC NULLS FIRST")
        );
        assert_eq!(split_term("(x)desc"), ("(x)", "desc"));
        assert_eq!(split_term("title"), ("title", ""));
        assert_eq!(split_term("xdesc"), ("xdesc", ""));
        assert_eq!(
            split_term("url LIKE 'https%' ASC"),
            ("url LIKE 'https%'", "ASC")
        );
    }

    fn key(values: &[(Option<&[u8]>, TermOrder)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (v, o) in values {
            push_term_key(&mut out, *v, *o);
        }
        out
    }

    #[test]
    fn keys_order_as_the_terms_do_and_later_terms_only_break_ties() {
        let asc = order(false, false);
        let desc = order(true, false);
        // A prefix sorts first ascending, last descending; 0x00 bytes inside
        // a value do not end it.
        let (a, ab, a0) = (&b"a"[..], &b"ab"[..], &b"a\0"[..]);
        assert!(key(&[(Some(a), asc)]) < key(&[(Some(ab), asc)]));
        assert!(key(&[(Some(a), asc)]) < key(&[(Some(a0), asc)]));
        assert!(key(&[(Some(a0), asc)]) < key(&[(Some(ab), asc)]));
        assert!(key(&[(Some(a), desc)]) > key(&[(Some(ab), desc)]));
        // The second term decides only between equal first values.
        assert!(
            key(&[(Some(a), asc), (Some(b"z"), asc)]) < key(&[(Some(ab), asc), (Some(b"a"), asc)])
        );
        assert!(
            key(&[(Some(a), asc), (Some(b"z"), desc)]) < key(&[(Some(a), asc), (Some(b"a"), desc)])
        );
        // NULLs: first ascending, last descending, unless big.
        assert!(key(&[(None, asc)]) < key(&[(Some(a), asc)]));
        assert!(key(&[(None, desc)]) > key(&[(Some(a), desc)]));
        assert!(key(&[(None, order(false, true))]) > key(&[(Some(a), order(false, true))]));
        assert!(key(&[(None, order(true, true))]) < key(&[(Some(a), order(true, true))]));
    }

    #[test]
    fn collations_compare_as_sqlites_built_ins() {
        assert_eq!(&*collated(b"AbC", Collation::NoCase), b"abc");
        assert_eq!(
            &*collated("É".as_bytes(), Collation::NoCase),
            "É".as_bytes()
        );
        assert_eq!(&*collated(b"ab  ", Collation::RTrim), b"ab");
        assert_eq!(&*collated(b"   ", Collation::RTrim), b"");
        assert_eq!(&*collated(b"ab ", Collation::Binary), b"ab ");
    }
}
