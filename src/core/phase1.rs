//! Phase 1's per-row rules, once for every caller: what the pipeline makes
//! of one page before any election (the SQL runner's phase 1 through the
//! table-valued `dedup_phase1`, and a run made elsewhere, Spark's tasks,
//! over Arrow buffers).
//!
//! For a row with its URL, title, content and parsed text ([`PageRow`]),
//! under the run's [`Rules`], [`prepare`] gives a [`Prepared`]:
//! - `skip_reason`: the row is skipped (never compared, never removed)
//!   when its url, content or parsed is not text (a BLOB, a number) or
//!   not valid UTF-8 ([`PageRow::invalid`]);
//! - `canonical_url`, `domain`, `wayback`, or `discard_reason` (an ignored
//!   or unparseable URL, or none: `unparseable: NULL url`), from
//!   [`crate::core::url::canonicalize`] with the run's URL options and the
//!   row's learned ones ([`Rules::options_for`]);
//! - `strict_url`: the canonical URL under the strict options (every
//!   parameter kept but tracking ones), when the run has them;
//! - `fill`: without parsed text but with content, the text phase 4
//!   compares, `normalize(title + "\n\n" + text)`, where text is the
//!   content's visible text when it is HTML (`main_text` with boilerplate
//!   stripped) and the content itself under the reference's rules;
//! - `hash` and `length`: of the fill when there is one, else of parsed
//!   when the row has none given ([`Given`]: the row's own value stays);
//! - `has_text`: whether the text phase 4 would compare is not empty;
//! - `https`: an `https://` URL (the elections' last tie-break; never
//!   under the reference's rules).
//!
//! The rules mirror SQL's: a number or BLOB title joins as SQLite writes
//! it as text (the binding passes it so), and a length counts characters.
//!
//! Cost: one canonicalization of the URL (two with strict options and a
//! query), and for a fill one HTML parse and one normalization of the
//! text; a hash of the fill or of parsed.
//!
//! Reference: the reference pipeline's `prepare` (parsed, content hash and
//! length of `title + "\n\n" + content`) and its `canonicalize_url`.

use crate::core::invalid::Invalid;
use std::sync::Arc;

use super::halt::Halt;
use super::url::{canonicalize, unwrap_wayback, UrlOptions};

/// A text column of the row as the table holds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TextCell<'a> {
    /// NULL.
    Null,
    /// TEXT, as bytes (valid UTF-8 or not).
    Text(&'a [u8]),
    /// Another type: `what` names it (`a BLOB`, `an integer`, `a real`);
    /// `sql_length` is SQLite's `length()` of it.
    Other {
        /// How an error names the type.
        what: &'static str,
        /// SQLite's `length()` of the value.
        sql_length: i64,
    },
}

impl TextCell<'_> {
    /// The text, when the cell is valid UTF-8 text.
    fn text(&self) -> Option<&str> {
        match self {
            TextCell::Text(t) => std::str::from_utf8(t).ok(),
            _ => None,
        }
    }

    /// SQL's `cell <> ''`: `None` for NULL; a number or BLOB is never
    /// equal to a text.
    fn not_empty(&self) -> Option<bool> {
        match self {
            TextCell::Null => None,
            TextCell::Text(t) => Some(!t.is_empty()),
            TextCell::Other { .. } => Some(true),
        }
    }

    /// SQL's `length(cell)`: characters of a text (up to a NUL, as SQLite
    /// counts them), SQLite's own length of another value.
    fn sql_length(&self) -> Option<i64> {
        match self {
            TextCell::Null => None,
            TextCell::Text(t) => Some(
                t.iter()
                    .take_while(|&&b| b != 0)
                    .filter(|&&b| b & 0xC0 != 0x80)
                    .count() as i64,
            ),
            TextCell::Other { sql_length, .. } => Some(*sql_length),
        }
    }
}

/// One row as phase 1 reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageRow<'a> {
    /// `url`.
    pub url: TextCell<'a>,
    /// `title` as text (a number or BLOB as SQLite writes it as text); `None`
    /// for NULL.
    pub title: Option<&'a [u8]>,
    /// `content`.
    pub content: TextCell<'a>,
    /// `parsed`.
    pub parsed: TextCell<'a>,
    /// Whether `content_hash` is NULL.
    pub hash_missing: bool,
    /// Whether `length` is NULL.
    pub length_missing: bool,
}

impl PageRow<'_> {
    /// Why the row is skipped: its url, content or parsed is not text, or
    /// not valid UTF-8 (`content is not valid UTF-8 (byte 7)`).
    pub fn invalid(&self) -> Option<String> {
        for (name, cell) in [
            ("url", self.url),
            ("content", self.content),
            ("parsed", self.parsed),
        ] {
            match cell {
                TextCell::Null => {}
                TextCell::Text(t) => {
                    if let Err(e) = std::str::from_utf8(t) {
                        return Some(format!(
                            "{name} is not valid UTF-8 (byte {})",
                            e.valid_up_to()
                        ));
                    }
                }
                TextCell::Other { what, .. } => {
                    return Some(if what == "a BLOB" {
                        format!("{name} is a BLOB")
                    } else {
                        format!("{name} is {what}, not TEXT")
                    })
                }
            }
        }
        None
    }
}

/// A value phase 1 computes, or the row's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Given<T> {
    /// NULL.
    Null,
    /// The row's own value, as the table holds it.
    Given,
    /// Computed here.
    Computed(T),
}

/// What phase 1 makes of a row (see the module's doc).
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// Why the row is skipped, or `None`.
    pub skip_reason: Option<String>,
    /// The canonical URL (`None`: skipped or discarded).
    pub canonical_url: Option<String>,
    /// Its domain.
    pub domain: Option<String>,
    /// The archive wrapper the URL came in.
    pub wayback: Option<String>,
    /// Why the URL leaves the pipeline here.
    pub discard_reason: Option<String>,
    /// The content hash.
    pub hash: Given<String>,
    /// The text's length in characters (0 is `Null`; a given length is
    /// NULL where it is 0, SQL's `NULLIF(length, 0)`).
    pub length: Given<i64>,
    /// The text made from content (the row has no parsed text).
    pub fill: Option<String>,
    /// Whether the text phase 4 compares is not empty.
    pub has_text: bool,
    /// The canonical URL under the strict options.
    pub strict_url: Option<String>,
    /// An `https://` URL (never under the reference's rules); `None` for a
    /// NULL URL outside them (SQL's `url LIKE 'https://%'` of NULL).
    pub https: Option<bool>,
}

/// Why [`prepare`] did not finish a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Interrupted, or out of memory.
    Halted(Halt),
    /// The text made from title and content is not valid UTF-8 (a BLOB
    /// title): `title and content joined are not valid UTF-8 (byte 3)`.
    InvalidText(String),
}

impl From<Halt> for Failure {
    fn from(h: Halt) -> Self {
        Failure::Halted(h)
    }
}

/// The run's rules for phase 1, read once for every row.
#[derive(Debug, Clone)]
pub struct Rules {
    /// The URL options as the settings write them (`url_options`).
    spec: String,
    /// Parsed.
    options: Arc<UrlOptions>,
    /// The strict options' text, and parsed (`strict_options`).
    strict: Option<(String, Arc<UrlOptions>)>,
    /// Whether the strict options canonicalize a URL without `?` as the
    /// URL options do (then the strict URL is the canonical one).
    strict_alike: bool,
    /// The reference's rules (`compat = 'reference'`): markup compared as
    /// it is, no https tie-break.
    reference: bool,
    /// `boilerplate = 'strip'`: an HTML content's main text.
    strip: bool,
    /// The last options with learned ones parsed (their text first).
    learned: Vec<(String, Arc<UrlOptions>, Option<Arc<UrlOptions>>)>,
}

/// How many options texts with learned parts [`Rules`] keeps parsed.
const LEARNED_KEPT: usize = 8;

impl Rules {
    /// The rules of a run: its URL options, strict options, whether it
    /// follows the reference (`compat`) and strips boilerplate. Errors
    /// name the options that do not parse.
    pub fn new(
        url_options: &str,
        strict_options: Option<&str>,
        reference: bool,
        strip: bool,
    ) -> Result<Self, Invalid> {
        let options = Arc::new(UrlOptions::parse(url_options)?);
        let strict = match strict_options {
            Some(s) => Some((s.to_string(), Arc::new(UrlOptions::parse(s)?))),
            None => None,
        };
        let strict_alike = strict
            .as_ref()
            .is_some_and(|(_, s)| options.alike_for(s, ""));
        Ok(Rules {
            spec: url_options.to_string(),
            options,
            strict,
            strict_alike,
            reference,
            strip,
            learned: Vec::new(),
        })
    }

    /// The URL options (and strict ones) of a row whose learned options
    /// are `learned` (`,tracking+=a|b` from `url_rules`, `,https` from
    /// `fix_urls`; empty: the run's own).
    pub fn options_for(
        &mut self,
        learned: &str,
    ) -> Result<(Arc<UrlOptions>, Option<Arc<UrlOptions>>), Invalid> {
        if learned.is_empty() {
            return Ok((
                self.options.clone(),
                self.strict.as_ref().map(|s| s.1.clone()),
            ));
        }
        if let Some(k) = self.learned.iter().position(|(l, _, _)| l == learned) {
            let (_, o, s) = &self.learned[k];
            return Ok((o.clone(), s.clone()));
        }
        let options = Arc::new(UrlOptions::parse(&format!("{}{learned}", self.spec))?);
        let strict = match &self.strict {
            Some((spec, _)) => Some(Arc::new(UrlOptions::parse(&format!("{spec}{learned}"))?)),
            None => None,
        };
        self.learned
            .insert(0, (learned.to_string(), options.clone(), strict.clone()));
        self.learned.truncate(LEARNED_KEPT);
        Ok((options, strict))
    }
}

/// Phase 1 of one row (see the module's doc): `learned` its learned URL
/// options (empty: none), `stop` asked every few milliseconds of work.
pub fn prepare(
    row: &PageRow<'_>,
    rules: &mut Rules,
    learned: &str,
    stop: &dyn Fn() -> bool,
) -> Result<Prepared, Failure> {
    let skip_reason = row.invalid();
    let parsed_given = row.parsed.not_empty();
    if skip_reason.is_some() {
        // (A skipped row has no hash; it keeps its length, or parsed's as
        // SQL counts it when it has none.)
        return Ok(Prepared {
            skip_reason,
            canonical_url: None,
            domain: None,
            wayback: None,
            discard_reason: None,
            hash: Given::Null,
            length: given_length(row, parsed_given),
            fill: None,
            has_text: parsed_given.unwrap_or(false),
            strict_url: None,
            https: Some(false),
        });
    }
    let fill = match (row.parsed, row.content.text()) {
        (TextCell::Null, Some(content)) if !content.is_empty() => {
            Some(fill(row, content, rules, stop)?)
        }
        _ => None,
    };
    let (hash, length) = match &fill {
        Some(f) => (
            match crate::core::hash::content_hash_or_halt(f, stop)? {
                Some(h) => Given::Computed(h),
                None => Given::Null,
            },
            nonzero(TextCell::Text(f.as_bytes()).sql_length().unwrap_or(0)),
        ),
        None => {
            let parsed = row.parsed.text().filter(|p| !p.is_empty());
            let hash = match parsed {
                Some(p) if row.hash_missing => {
                    match crate::core::hash::content_hash_or_halt(p, stop)? {
                        Some(h) => Given::Computed(h),
                        None => Given::Null,
                    }
                }
                _ if row.hash_missing => Given::Null,
                _ => Given::Given,
            };
            (hash, given_length(row, parsed_given))
        }
    };
    let has_text = match &fill {
        Some(f) => !f.is_empty(),
        None => parsed_given.unwrap_or(false),
    };
    let (mut canonical_url, mut domain, mut wayback, mut discard_reason, mut strict_url) =
        (None, None, None, None, None);
    let mut https = if rules.reference { Some(false) } else { None };
    match row.url.text() {
        None => discard_reason = Some("unparseable: NULL url".to_string()),
        Some(url) => {
            let (options, strict) = rules
                .options_for(learned)
                .map_err(|e| Failure::InvalidText(e.to_string()))?;
            match canonicalize(url, &options) {
                Ok(c) => {
                    canonical_url = Some(c.url);
                    domain = Some(c.domain);
                }
                Err(d) => discard_reason = Some(d.to_string()),
            }
            wayback = unwrap_wayback(url.trim().trim_end_matches('/')).map(|(_, w)| w.to_string());
            if let Some(strict) = strict {
                strict_url = if rules.strict_alike && learned.is_empty() && !url.contains('?') {
                    canonical_url.clone()
                } else {
                    canonicalize(url, &strict).ok().map(|c| c.url)
                };
            }
            https = Some(
                !rules.reference
                    && url.len() >= 8
                    && url.as_bytes()[..8].eq_ignore_ascii_case(b"https://"),
            );
        }
    }
    Ok(Prepared {
        skip_reason: None,
        canonical_url,
        domain,
        wayback,
        discard_reason,
        hash,
        length,
        fill,
        has_text,
        strict_url,
        https,
    })
}

/// The length a row without a fill keeps: its own, or parsed's characters
/// when it has none; 0 is NULL (SQL's `NULLIF(length, 0)`).
fn given_length(row: &PageRow<'_>, parsed_given: Option<bool>) -> Given<i64> {
    if !row.length_missing {
        return Given::Given;
    }
    match (parsed_given, row.parsed.sql_length()) {
        (Some(true), Some(n)) => nonzero(n),
        _ => Given::Null,
    }
}

fn nonzero(n: i64) -> Given<i64> {
    if n == 0 {
        Given::Null
    } else {
        Given::Computed(n)
    }
}

/// The text phase 4 compares for a row without parsed text:
/// `normalize(title + "\n\n" + text of content)`.
fn fill(
    row: &PageRow<'_>,
    content: &str,
    rules: &Rules,
    stop: &dyn Fn() -> bool,
) -> Result<String, Failure> {
    let text;
    let body: &str = if !rules.reference && crate::core::html::looks_like_html(content) {
        text = if rules.strip {
            crate::core::html::main_text_or_halt(content, stop)?
        } else {
            crate::core::html::html_text_or_halt(content, stop)?
        };
        &text
    } else {
        content
    };
    let title = row.title.unwrap_or(b"");
    let joined = match std::str::from_utf8(title) {
        Ok(t) => format!("{t}\n\n{body}"),
        Err(e) => {
            return Err(Failure::InvalidText(format!(
                "title is not valid UTF-8 (byte {})",
                e.valid_up_to()
            )))
        }
    };
    Ok(crate::core::text::normalize_or_halt(&joined, stop)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::halt::never;

    fn row<'a>(
        url: &'a str,
        title: Option<&'a str>,
        content: Option<&'a str>,
        parsed: Option<&'a str>,
    ) -> PageRow<'a> {
        let cell = |v: Option<&'a str>| v.map_or(TextCell::Null, |s| TextCell::Text(s.as_bytes()));
        PageRow {
            url: TextCell::Text(url.as_bytes()),
            title: title.map(str::as_bytes),
            content: cell(content),
            parsed: cell(parsed),
            hash_missing: true,
            length_missing: true,
        }
    }

    fn rules() -> Rules {
        Rules::new("", Some("keep_params"), false, false).unwrap()
    }

    /// Hand-checked: HTML content without parsed text gives the visible
    /// text after the title, normalized; its SHA-1 and length.
    #[test]
    fn html_content_is_filled_hashed_and_measured() {
        let r = row(
            "HTTPS://Example.org/a/?utm_source=x&id=3#top",
            Some("Title"),
            Some("<html><body><p>Hello <b>World</b></p><script>x()</script></body></html>"),
            None,
        );
        let p = prepare(&r, &mut rules(), "", &never).unwrap();
        assert_eq!(p.fill.as_deref(), Some("title\n\nhello world"));
        assert_eq!(p.length, Given::Computed(18));
        assert_eq!(
            p.hash,
            Given::Computed(crate::core::hash::sha1_hex(b"title\n\nhello world"))
        );
        assert_eq!(p.canonical_url.as_deref(), Some("https://example.org/a"));
        assert_eq!(p.strict_url.as_deref(), Some("https://example.org/a?id=3"));
        assert_eq!(p.domain.as_deref(), Some("example.org"));
        assert!(p.https == Some(true) && p.has_text && p.skip_reason.is_none());
    }

    #[test]
    fn a_blob_or_invalid_text_skips_the_row_and_a_null_url_is_discarded() {
        let mut r = row("https://a.example/", None, Some("x"), None);
        r.content = TextCell::Other {
            what: "a BLOB",
            sql_length: 3,
        };
        let p = prepare(&r, &mut rules(), "", &never).unwrap();
        assert_eq!(p.skip_reason.as_deref(), Some("content is a BLOB"));
        assert_eq!(p.canonical_url, None);
        r.content = TextCell::Text(b"ok\xff");
        let p = prepare(&r, &mut rules(), "", &never).unwrap();
        assert_eq!(
            p.skip_reason.as_deref(),
            Some("content is not valid UTF-8 (byte 2)")
        );
        let mut r = row("", None, Some("text"), None);
        r.url = TextCell::Null;
        let p = prepare(&r, &mut rules(), "", &never).unwrap();
        assert_eq!(p.discard_reason.as_deref(), Some("unparseable: NULL url"));
    }

    #[test]
    fn parsed_text_is_hashed_only_when_the_row_has_no_hash() {
        let mut r = row(
            "https://a.example/x",
            None,
            Some("<p>ignored</p>"),
            Some("given text"),
        );
        let p = prepare(&r, &mut rules(), "", &never).unwrap();
        assert_eq!(p.fill, None);
        assert_eq!(
            p.hash,
            Given::Computed(crate::core::hash::sha1_hex(b"given text"))
        );
        assert_eq!(p.length, Given::Computed(10));
        r.hash_missing = false;
        r.length_missing = false;
        let p = prepare(&r, &mut rules(), "", &never).unwrap();
        assert_eq!((p.hash, p.length), (Given::Given, Given::Given));
        // Empty parsed text: nothing to hash, no text to compare.
        let r = row("https://a.example/x", None, Some("content"), Some(""));
        let p = prepare(&r, &mut rules(), "", &never).unwrap();
        assert_eq!(
            (p.hash, p.length, p.has_text),
            (Given::Null, Given::Null, false)
        );
    }

    #[test]
    fn learned_options_extend_the_runs() {
        let mut rules = rules();
        let r = row("https://a.example/x?color=1&id=2", None, None, Some("t"));
        let p = prepare(&r, &mut rules, ",tracking+=color", &never).unwrap();
        assert_eq!(p.strict_url.as_deref(), Some("https://a.example/x?id=2"));
        let p = prepare(&r, &mut rules, "", &never).unwrap();
        assert_eq!(
            p.strict_url.as_deref(),
            Some("https://a.example/x?color=1&id=2")
        );
    }
}
