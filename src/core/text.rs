//! Text normalization and tokenization: the "parsed" form the pipeline compares.
//!
//! [`normalize`] folds a page to lowercase ASCII and collapses whitespace. It is
//! idempotent and leaves text that the reference pipeline already normalized
//! unchanged, so `sha1(normalize(parsed)) == sha1(parsed)` on reference data.
//! [`words`] splits text into lowercased runs of Unicode alphanumerics.
//!
//! Cost: one pass over the text; one allocation for the result.
//!
//! Reference: the reference pipeline's `parsed` text, which
//! [`normalize`] leaves unchanged (tested on its corpora).

use unicode_normalization::UnicodeNormalization;

use crate::core::halt::{never, Halt};

/// Typographic characters folded the way the reference does, before the
/// generic transliteration (deunicode) handles everything else.
fn typographic_fold(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2018}' | '\u{2019}' | '\u{02bc}' | '\u{00b4}' => "'",
        '\u{201c}' | '\u{201d}' | '\u{00ab}' | '\u{00bb}' => "\"",
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{ff0d}' | '\u{fe63}' => "-",
        '\u{00a6}' | '\u{2022}' | '\u{00b7}' | '\u{00a9}' | '\u{00ae}' | '\u{2122}'
        | '\u{2191}' | '\u{21b5}' | '\u{2714}' | '\u{200b}' | '\u{200c}' | '\u{00a0}' => " ",
        '\u{00d7}' => "x",
        '\u{2026}' => "...",
        '\u{2190}' => "<-",
        '\u{2192}' => "->",
        '\u{2194}' => "<->",
        '\u{00ad}' | '\u{200d}' | '\u{feff}' => "",
        _ => return None,
    })
}

/// Normalizes page text: lowercase, Unicode NFKC, typographic characters and
/// every other non-ASCII character transliterated to ASCII (deunicode; CJK,
/// Cyrillic, Greek and Arabic become Latin letters instead of vanishing),
/// whitespace collapsed, trimmed.
///
/// Whitespace rules, applied to each maximal run of blanks (space, tab, CR,
/// LF, VT, FF; `|` counts as a space; CR LF counts as one line break):
/// - no line break: one space;
/// - two or more line breaks: one blank line (`"\n\n"`);
/// - exactly one line break between two word characters with no space
///   around it: one space (a line wrapped inside a sentence);
/// - otherwise that one line break (tab kept as tab), with at most one space
///   kept on each side (the form the reference leaves in its output).
///
/// Also `` ` `` becomes `'` and `''` becomes `"`. The function is idempotent.
///
/// One exception to lowercasing, for parity with the reference: the
/// trademark sign `™` becomes `TM` (the reference lowercases before NFKC), and
/// a `TM` not preceded by an uppercase letter nor followed by a letter stays
/// uppercase, so `normalize` is the identity on the reference's output.
pub fn normalize(text: &str) -> String {
    normalize_or_halt(text, &never).expect("out of memory")
}

/// [`normalize`] that asks `stop` every MiB of work and allocates its
/// output fallibly.
pub fn normalize_or_halt(text: &str, stop: &dyn Fn() -> bool) -> Result<String, Halt> {
    // `collapse_ascii` only ever writes ASCII bytes.
    Ok(String::from_utf8(normalize_ascii_or_halt(text, stop)?).expect("normalized text is ASCII"))
}

/// [`normalize_or_halt`] as the ASCII bytes it produces (for hashing: no
/// UTF-8 check of the output).
pub fn normalize_ascii_or_halt(text: &str, stop: &dyn Fn() -> bool) -> Result<Vec<u8>, Halt> {
    let mut out = Vec::new();
    out.try_reserve(text.len()).map_err(|_| Halt::OutOfMemory)?;
    if text.is_ascii() {
        collapse_ascii::<true>(text.as_bytes(), &mut out, stop)?;
    } else {
        collapse_ascii::<true>(transliterate(text, stop)?.as_bytes(), &mut out, stop)?;
    }
    Ok(out)
}

/// Work between two calls of `stop`.
const STOP_EVERY: usize = 1 << 20;

/// Maps non-ASCII text to ASCII: lowercase, NFKC, typographic fold, deunicode.
/// Lowercasing is per character (no final-sigma context): `ς` and `σ` both
/// transliterate to `s`, so the result is the same as `str::to_lowercase`'s.
fn transliterate(text: &str, stop: &dyn Fn() -> bool) -> Result<String, Halt> {
    let mut ascii = String::new();
    ascii
        .try_reserve(text.len() + text.len() / 2)
        .map_err(|_| Halt::OutOfMemory)?;
    for (k, c) in text.chars().flat_map(char::to_lowercase).nfkc().enumerate() {
        if k % STOP_EVERY == STOP_EVERY - 1 && stop() {
            return Err(Halt::Stopped);
        }
        if c.is_ascii() {
            ascii.push(c);
        } else if let Some(folded) = typographic_fold(c) {
            ascii.push_str(folded);
        } else if let Some(t) = deunicode::deunicode_char(c) {
            // deunicode marks unknown characters with "[?]": drop those.
            if t != "[?]" {
                ascii.push_str(t);
            }
        }
    }
    Ok(ascii)
}

const fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// True when `input[i..]` starts a trademark sign as the reference renders
/// it: `TM` not preceded by an uppercase letter nor followed by a letter.
/// The reference lowercases before NFKC, so `™` survives as uppercase `TM`;
/// keeping it lets reference-normalized text hash identically.
fn is_trademark_at(input: &[u8], i: usize) -> bool {
    input.get(i + 1) == Some(&b'M')
        && (i == 0 || !input[i - 1].is_ascii_uppercase())
        && !input.get(i + 2).is_some_and(u8::is_ascii_alphabetic)
}

/// Bytes the ASCII pass copies unchanged whatever surrounds them.
const fn is_plain(b: u8) -> bool {
    matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'!'..=b'&' | b'('..=b'@' | b'['..=b'_' | b'{' | b'}' | b'~')
}

/// [`is_plain`] as a lookup table, for the hot loop.
const PLAIN: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = is_plain(b as u8);
        b += 1;
    }
    table
};

/// True when 8 bytes that follow a plain byte are copied unchanged: all
/// plain except single spaces or apostrophes followed by a plain byte
/// inside the chunk. Exact per-byte SWAR masks (every byte below 0x80 after
/// the first check, so no borrow crosses a byte).
fn chunk_is_kept(chunk: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let w = u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
    if w & HIGH != 0 {
        return false;
    }
    let at_least = |c: u8| ((w | HIGH) - ONES * u64::from(c)) & HIGH;
    let equal = |c: u8| {
        let x = w ^ (ONES * u64::from(c));
        !(((x & LOW7) + LOW7) | x) & HIGH
    };
    let below = |c: u8| !at_least(c) & HIGH;
    let bad = below(b' ')
        | (at_least(b'A') & below(b'Z' + 1))
        | equal(b'`')
        | equal(b'|')
        | at_least(0x7f);
    let sep = equal(b' ') | equal(b'\'');
    // No bad byte, no separator followed by a separator, last byte plain.
    bad == 0 && sep & (sep >> 8) == 0 && sep >> 56 == 0
}

/// How many of 32 bytes that follow a plain byte are copied unchanged: the
/// longest prefix [`chunk_is_kept`]'s rule keeps (ending in a plain byte),
/// found with SSE2 (part of every x86-64 CPU): one compare per byte class,
/// a bit per byte, the first byte that stops the run by its bit.
#[cfg(target_arch = "x86_64")]
fn wide_kept_prefix(chunk: &[u8; 32]) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_loadu_si128,
        _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
    };
    /// Bits of the bad bytes and of the separators among 16 bytes.
    /// Safety: SSE2 is always present on x86-64; `bytes` is 16 readable bytes.
    unsafe fn masks(bytes: *const u8) -> (u32, u32) {
        let v = _mm_loadu_si128(bytes.cast::<__m128i>());
        let is = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
        // Signed compares: bytes from 0x80 are negative, so below ' '.
        let control_or_high = _mm_cmplt_epi8(v, _mm_set1_epi8(b' ' as i8));
        let upper = _mm_and_si128(
            _mm_cmpgt_epi8(v, _mm_set1_epi8(b'A' as i8 - 1)),
            _mm_cmplt_epi8(v, _mm_set1_epi8(b'Z' as i8 + 1)),
        );
        let odd = _mm_or_si128(_mm_or_si128(is(b'`'), is(b'|')), is(0x7f));
        let bad = _mm_or_si128(_mm_or_si128(control_or_high, upper), odd);
        let sep = _mm_or_si128(is(b' '), is(b'\''));
        (_mm_movemask_epi8(bad) as u32, _mm_movemask_epi8(sep) as u32)
    }
    // Safety: both halves of `chunk` are 16 readable bytes.
    let ((bad_lo, sep_lo), (bad_hi, sep_hi)) =
        unsafe { (masks(chunk.as_ptr()), masks(chunk.as_ptr().add(16))) };
    let sep = sep_lo | sep_hi << 16;
    // A bad byte, or a separator followed by a separator, stops the run.
    let stop = bad_lo | bad_hi << 16 | sep & (sep >> 1);
    let first = stop.trailing_zeros() as usize;
    // The run ends on a plain byte: a separator before the stop waits.
    if first > 0 && sep >> (first - 1) & 1 == 1 {
        first - 1
    } else {
        first
    }
}

/// [`wide_kept_prefix`] on x86-64; elsewhere 0, which leaves the run to
/// the 8-byte checks.
fn wide_kept(chunk: &[u8; 32]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        wide_kept_prefix(chunk)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = chunk;
        0
    }
}

/// The rule [`chunk_is_kept`] implements, byte by byte: every byte plain
/// or a separator (space, apostrophe), no separator followed by one, the
/// last byte plain.
#[cfg(test)]
fn kept_by_bytes(chunk: &[u8]) -> bool {
    let sep = |b: u8| b == b' ' || b == b'\'';
    chunk.iter().all(|&b| PLAIN[usize::from(b)] || sep(b))
        && chunk.windows(2).all(|w| !(sep(w[0]) && sep(w[1])))
        && chunk.last().is_some_and(|&b| PLAIN[usize::from(b)])
}

/// The ASCII pass: lowercase, quote folding and whitespace collapsing.
/// `FAST` = false disables the run-copy fast path (for testing it).
fn collapse_ascii<const FAST: bool>(
    input: &[u8],
    out: &mut Vec<u8>,
    stop: &dyn Fn() -> bool,
) -> Result<(), Halt> {
    // The fast path runs up to `check`, where `stop` is asked.
    let mut check = STOP_EVERY;
    // State of the pending whitespace run.
    let mut in_run = false;
    let mut breaks = 0u32;
    let mut break_byte = b'\n';
    let mut spaces_before = false; // a space before the first break
    let mut spaces_after = false; // a space after the last break
    let mut prev_cr = false;
    let mut keep_upper = false;
    let mut i = 0;
    while i < input.len() {
        if i >= check {
            if stop() {
                return Err(Halt::Stopped);
            }
            check = i + STOP_EVERY;
        }
        // Fast path: copy a run of bytes the rules leave unchanged (plain
        // bytes, and a single space or apostrophe between two of them) in
        // one go.
        if FAST && !in_run && !keep_upper && PLAIN[usize::from(input[i])] {
            let start = i;
            i += 1;
            // Invariant: `input[i - 1]` is plain.
            loop {
                while let Some(chunk) = input.get(i..i + 32) {
                    let kept = if i < check {
                        wide_kept(chunk.try_into().expect("32 bytes"))
                    } else {
                        0
                    };
                    if kept == 0 {
                        break;
                    }
                    i += kept;
                }
                while let Some(chunk) = input.get(i..i + 8) {
                    if i >= check || !chunk_is_kept(chunk) {
                        break;
                    }
                    i += 8;
                }
                if i >= check {
                    break;
                }
                // Separators the rules keep as they are, between the plain
                // byte before `i` and a plain byte after them.
                let rest = &input[i..];
                let plain_at = |k: usize| rest.get(k).is_some_and(|&b| PLAIN[usize::from(b)]);
                let kept = match rest {
                    _ if plain_at(0) => 1,
                    [b' ' | b'\'', ..] if plain_at(1) => 2,
                    [b' ', b'\'', ..] | [b'\n', b'\n', ..] if plain_at(2) => 3,
                    [b'\n', next, ..]
                        if plain_at(1) && !(is_word_byte(input[i - 1]) && is_word_byte(*next)) =>
                    {
                        2
                    }
                    _ => break,
                };
                i += kept;
            }
            out.extend_from_slice(&input[start..i]);
            continue;
        }
        let raw = input[i];
        i += 1;
        let i = i - 1;
        let b = match raw {
            b'T' if is_trademark_at(input, i) => {
                keep_upper = true;
                raw
            }
            b'M' if keep_upper => {
                keep_upper = false;
                raw
            }
            b'A'..=b'Z' => raw + 32,
            b'`' => b'\'',
            b'|' => b' ',
            _ => raw,
        };
        match b {
            b' ' => {
                if !in_run {
                    in_run = true;
                    breaks = 0;
                    spaces_before = false;
                    spaces_after = false;
                }
                if breaks == 0 {
                    spaces_before = true;
                } else {
                    spaces_after = true;
                }
                prev_cr = false;
            }
            b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => {
                if !in_run {
                    in_run = true;
                    breaks = 0;
                    spaces_before = false;
                    spaces_after = false;
                }
                if !(b == b'\n' && prev_cr) {
                    breaks += 1;
                    break_byte = if b == b'\t' { b'\t' } else { b'\n' };
                    spaces_after = false;
                }
                prev_cr = b == b'\r';
            }
            _ => {
                if in_run {
                    in_run = false;
                    prev_cr = false;
                    if let Some(&last) = out.last() {
                        match breaks {
                            0 => out.push(b' '),
                            1 => {
                                if !spaces_before
                                    && !spaces_after
                                    && is_word_byte(last)
                                    && is_word_byte(b)
                                {
                                    out.push(b' ');
                                } else {
                                    if spaces_before {
                                        out.push(b' ');
                                    }
                                    out.push(break_byte);
                                    if spaces_after {
                                        out.push(b' ');
                                    }
                                }
                            }
                            _ => out.extend_from_slice(b"\n\n"),
                        }
                    }
                    out.push(b);
                } else if b == b'\'' && out.last() == Some(&b'\'') {
                    *out.last_mut().expect("checked non-empty") = b'"';
                } else {
                    out.push(b);
                }
            }
        }
    }
    Ok(())
}

/// Splits text into tokens as Text::DeDuper does (`lc`, then runs of
/// `[[:alnum:]]`), except in scripts written without spaces between words:
/// the whole text is lowercased character by character (Unicode's full
/// lowercase mapping without context, as Perl's `lc`: `Σ` is always `σ`,
/// `İ` becomes `i` and a combining dot), then split into maximal runs of
/// word characters: letters (Alphabetic) and decimal digits (Nd) — not
/// superscript digits or vulgar fractions (No), which
/// `char::is_alphanumeric` would accept. A character of a script that
/// [`is_character_token`] names is a token by itself (Text::DeDuper makes
/// a whole Han run one token, so two Chinese sentences differing in one
/// character share nothing).
///
/// ```
/// use dedup::text::words;
/// let tokens: Vec<String> = words("Linux向けに書いています, 2 TIMES").collect();
/// assert_eq!(tokens, ["linux", "向", "け", "に", "書", "い", "て", "い", "ま", "す", "2", "times"]);
/// ```
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut chars = text.chars().flat_map(char::to_lowercase).peekable();
    std::iter::from_fn(move || {
        while chars.peek().is_some_and(|&c| !is_word_char(c)) {
            chars.next();
        }
        let mut word = String::new();
        while let Some(&c) = chars.peek() {
            if is_character_token(c) {
                if word.is_empty() {
                    word.push(c);
                    chars.next();
                }
                break;
            }
            if !is_word_char(c) {
                break;
            }
            word.push(c);
            chars.next();
        }
        (!word.is_empty()).then_some(word)
    })
}

/// Whether `c` is a token by itself in [`words`]: a letter of Han
/// (ideographs, their extensions and compatibility forms), Hiragana,
/// Katakana, Hangul syllables, Thai, Lao, Khmer or Myanmar. Each character
/// a token was chosen over character bigrams and over a dictionary
/// segmenter (jieba) by measurement on real Chinese, Japanese and Korean
/// text: `benches/cjk_tokens.py`, results in `benches/results/`.
pub fn is_character_token(c: char) -> bool {
    matches!(u32::from(c),
        0x0E00..=0x0EFF // Thai, Lao
        | 0x1000..=0x109F // Myanmar
        | 0x1780..=0x17FF // Khmer
        | 0x3040..=0x30FF // Hiragana, Katakana
        | 0x31F0..=0x31FF // Katakana phonetic extensions
        | 0x3400..=0x4DBF // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified ideographs
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0xF900..=0xFAFF // CJK compatibility ideographs
        | 0xFF66..=0xFF9D // halfwidth Katakana
        | 0x20000..=0x3FFFF // CJK extensions B onwards
    ) && is_word_char(c)
}

/// At most `max` characters of `text` for a message (`...` appended when
/// cut), control characters (NUL included) written as `\u{..}`: a message
/// never copies a huge input, and never holds a NUL (SQLite would drop it).
///
/// ```
/// use dedup::text::excerpt;
/// assert_eq!(excerpt("a\0b", 10), "a\\u{0}b");
/// assert_eq!(excerpt("abcdef", 3), "abc...");
/// ```
pub fn excerpt(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push_str("...");
            break;
        }
        if c.is_control() {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// Perl's `[[:alnum:]]` on Unicode text: Alphabetic or a decimal digit.
pub fn is_word_char(c: char) -> bool {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    c.is_alphabetic() || c.general_category() == GeneralCategory::DecimalNumber
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn stop_checks_inside_long_runs_do_not_change_the_result() {
        // 3 MB: the fast path is cut at every MiB boundary.
        let unit = "Plain words and more words, 42 of them.\nA line\n\n  Another TM para\t`x`  ";
        let text: String = unit.repeat(3 << 20 >> 6);
        let (mut fast, mut slow) = (Vec::new(), Vec::new());
        collapse_ascii::<true>(text.as_bytes(), &mut fast, &never).unwrap();
        collapse_ascii::<false>(text.as_bytes(), &mut slow, &never).unwrap();
        assert_eq!(fast, slow);
        let calls = std::cell::Cell::new(0);
        let stop = || {
            calls.set(calls.get() + 1);
            calls.get() == 2
        };
        assert_eq!(normalize_or_halt(&text, &stop), Err(Halt::Stopped));
        let wide = format!("Ελληνικά {text}");
        assert_eq!(normalize_or_halt(&wide, &|| true), Err(Halt::Stopped));
    }

    #[test]
    fn lowercases_and_collapses_spaces() {
        assert_eq!(normalize("  Hello   World  "), "hello world");
    }

    #[test]
    fn blank_line_runs_become_one_blank_line() {
        assert_eq!(normalize("a\n\n\n\nb"), "a\n\nb");
        assert_eq!(normalize("a \n \n b"), "a\n\nb");
        assert_eq!(normalize("a\r\n\r\nb"), "a\n\nb");
    }

    #[test]
    fn single_newline_inside_words_becomes_space() {
        assert_eq!(normalize("wrapped\nline"), "wrapped line");
        assert_eq!(normalize("wrapped\r\nline"), "wrapped line");
        // Not between two word characters: the line break stays.
        assert_eq!(normalize("end.\nNext"), "end.\nnext");
    }

    #[test]
    fn spaces_around_a_single_break_keep_at_most_one() {
        assert_eq!(normalize("a   \n   b"), "a \n b");
        assert_eq!(normalize("a \nb"), "a \nb");
        assert_eq!(normalize("a\n b"), "a\n b");
    }

    #[test]
    fn quotes_and_pipes_fold() {
        assert_eq!(normalize("it`s ''quoted'' a|b"), "it's \"quoted\" a b");
        assert_eq!(normalize("'''"), "\"'");
    }

    #[test]
    fn typographic_characters_fold_like_the_reference() {
        assert_eq!(
            normalize("\u{201c}Smart\u{201d} \u{2014} it\u{2019}s\u{2026}"),
            "\"smart\" - it's..."
        );
    }

    #[test]
    fn non_latin_scripts_are_transliterated_not_dropped() {
        assert_eq!(normalize("Привет, мир"), "privet, mir");
        assert_eq!(normalize("Καλημέρα"), "kalemera");
        assert_eq!(normalize("مرحبا"), "mrhb");
        assert_eq!(normalize("北京"), "bei jing");
        assert_ne!(normalize("Один"), normalize("Два"));
    }

    #[test]
    fn trademark_sign_renders_as_the_reference_does() {
        assert_eq!(
            normalize("Requests: HTTP for Humans\u{2122}"),
            "requests: http for humansTM"
        );
        assert_eq!(
            normalize("requests: http for humansTM"),
            "requests: http for humansTM"
        );
        assert_eq!(normalize("ATM HTML TMs"), "atm html tms");
    }

    #[test]
    fn accented_latin_folds() {
        assert_eq!(normalize("Élève à Noël, Straße"), "eleve a noel, strasse");
    }

    #[test]
    fn empty_and_blank_text_normalize_to_empty() {
        assert_eq!(normalize(""), "");
        assert_eq!(normalize(" \n\t "), "");
    }

    #[test]
    fn words_are_lowercased_alphanumeric_runs() {
        let w: Vec<_> = words("Hello, World! Straße 42x — Привет").collect();
        assert_eq!(w, ["hello", "world", "straße", "42x", "привет"]);
    }

    proptest! {
        #[test]
        fn normalize_is_idempotent(s in "[a-zA-Z0-9 .,'`|\"\t\r\n\u{a0}\u{2019}\u{2014}éПж北]{0,80}") {
            let once = normalize(&s);
            prop_assert_eq!(normalize(&once), once.clone());
            prop_assert!(once.is_ascii());
        }

        #[test]
        fn fast_path_changes_nothing(parts in prop::collection::vec(prop_oneof![
            6 => "[a-z0-9.]{1,9}",
            3 => "[ '\n]",
            1 => "[ '`|TMAZ\t\r\n_-]{1,3}",
        ], 0..24)) {
            let s = parts.concat();
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            collapse_ascii::<true>(s.as_bytes(), &mut fast, &never).unwrap();
            collapse_ascii::<false>(s.as_bytes(), &mut slow, &never).unwrap();
            prop_assert_eq!(fast, slow);
        }

        #[test]
        fn chunk_checks_follow_the_byte_rule(
            bytes in prop::collection::vec(prop_oneof![
                8 => b'a'..=b'z',
                2 => Just(b' '),
                1 => Just(b'\''),
                1 => any::<u8>(),
            ], 32),
        ) {
            let chunk: &[u8; 32] = bytes.as_slice().try_into().unwrap();
            let longest = (1..=32).rev().find(|&p| kept_by_bytes(&chunk[..p])).unwrap_or(0);
            #[cfg(target_arch = "x86_64")]
            prop_assert_eq!(wide_kept(chunk), longest);
            #[cfg(not(target_arch = "x86_64"))]
            prop_assert!(wide_kept(chunk) == 0 && longest <= 32);
            prop_assert_eq!(chunk_is_kept(&bytes[..8]), kept_by_bytes(&bytes[..8]));
        }

        #[test]
        fn normalize_is_idempotent_on_any_string(s in any::<String>()) {
            let once = normalize(&s);
            prop_assert_eq!(normalize(&once), once);
        }
    }
}
