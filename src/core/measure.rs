//! What the near-duplicate scans measure a pair by ([`Measure`]): the
//! reference's Levenshtein ratio (`lev_ratio`, the default), or Broder's
//! resemblance of word shingles as Text::DeDuper decides with it
//! ([`crate::core::shingles`]). A pair is near when its measure is strictly
//! above the threshold, in both.
//!
//! The SQL layer hands a measure to the scans as one text, its [`spec`]:
//! `levenshtein`, or `resemblance N [stopword ...]` (`N` words a shingle,
//! then the stoplist, separated by spaces).
//!
//! Cost: Levenshtein is the LCS kernel's (quadratic at worst, banded by the
//! threshold); resemblance shingles each text once (linear) and compares
//! two sorted sets in linear time.
//!
//! Reference: python-Levenshtein's `ratio`; Text::DeDuper's `find_similar`
//! (its Perl source in `../shared/oracles/`).
//!
//! [`spec`]: Measure::spec

use crate::core::halt::{never, Halt};
use crate::core::invalid::Invalid;
use crate::core::shingles::{Shingles, Stopwords};

/// Text::DeDuper's `sim_trsh`: resemblance's threshold unless given.
pub const DEFAULT_RESEMBLANCE_THRESHOLD: f64 = 0.2;

/// The measure of a pair of texts.
#[derive(Debug, Clone, Default)]
pub enum Measure {
    /// `lev_ratio`: `1 - indel distance / total length`.
    #[default]
    Levenshtein,
    /// Broder's resemblance of word shingles.
    Resemblance(Resemblance),
}

/// Resemblance's settings: the shingle size and the stoplist.
#[derive(Debug, Clone)]
pub struct Resemblance {
    /// Words a shingle, 1 to 64.
    pub n: usize,
    /// The stoplist as given (words separated by spaces).
    pub words: String,
    /// The stoplist's tokens.
    pub stopwords: Stopwords,
}

impl Measure {
    /// Resemblance of `n`-word shingles without the words of `stoplist`
    /// (separated by spaces or commas); `n` must be in [1, 64].
    pub fn resemblance(n: i64, stoplist: &str) -> Result<Self, Invalid> {
        if !(1..=64).contains(&n) {
            return Err(Invalid::from(format!(
                "ngram_size must be an integer in [1, 64], got {n}"
            )));
        }
        let words = stoplist
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        Ok(Measure::Resemblance(Resemblance {
            n: n as usize,
            stopwords: Stopwords::parse(&words),
            words,
        }))
    }

    /// The measure a spec names ([`Measure::spec`]'s form).
    ///
    /// ```
    /// use dedup::measure::Measure;
    /// let m = Measure::parse("resemblance 3 the a").unwrap();
    /// assert_eq!(m.spec(), "resemblance 3 the a");
    /// assert_eq!(Measure::parse("levenshtein").unwrap().spec(), "levenshtein");
    /// assert!(Measure::parse("cosine").is_err());
    /// ```
    pub fn parse(spec: &str) -> Result<Self, Invalid> {
        let mut words = spec.split_whitespace();
        match words.next() {
            Some("levenshtein") if words.next().is_none() => Ok(Measure::Levenshtein),
            Some("resemblance") => {
                let n = words.next().and_then(|n| n.parse::<i64>().ok());
                let Some(n) = n else {
                    return Err(Invalid::from(format!(
                        "measure must be 'levenshtein' or 'resemblance N [stopword ...]', got '{spec}'"
                    )));
                };
                Measure::resemblance(n, &words.collect::<Vec<_>>().join(" "))
            }
            _ => Err(Invalid::from(format!(
                "measure must be 'levenshtein' or 'resemblance N [stopword ...]', got '{spec}'"
            ))),
        }
    }

    /// The measure as one text, which [`Measure::parse`] reads back.
    pub fn spec(&self) -> String {
        match self {
            Measure::Levenshtein => "levenshtein".into(),
            Measure::Resemblance(r) if r.words.is_empty() => format!("resemblance {}", r.n),
            Measure::Resemblance(r) => format!("resemblance {} {}", r.n, r.words),
        }
    }

    /// The shingles of `text` under resemblance; `None` under Levenshtein.
    /// Stops with [`Halt::OutOfMemory`] where memory cannot be had.
    pub fn shingles(&self, text: &str) -> Result<Option<Shingles>, Halt> {
        match self {
            Measure::Levenshtein => Ok(None),
            Measure::Resemblance(r) => {
                Shingles::new_or_halt(text, r.n, &r.stopwords, &never).map(Some)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_read_back() {
        for spec in ["levenshtein", "resemblance 5", "resemblance 1 the a an"] {
            assert_eq!(Measure::parse(spec).unwrap().spec(), spec);
        }
        assert_eq!(
            Measure::resemblance(2, "the, a\tan").unwrap().spec(),
            "resemblance 2 the a an"
        );
        assert!(Measure::parse("resemblance").is_err());
        assert!(Measure::parse("resemblance 0").is_err());
        assert!(Measure::parse("resemblance 65").is_err());
        assert!(Measure::parse("levenshtein 5").is_err());
    }
}
