//! The options of URL canonicalization ([`super::url`]): the reference's
//! lists of ignored patterns, kept parameters and tracking parameters,
//! and the option words the SQL functions and settings take.
//!
//! Cost: none at run time beyond parsing the option words once a call.
//!
//! Reference: the reference pipeline's ignore and keep lists, copied as
//! they are.
use crate::core::invalid::Invalid;

/// The reference's ignore list: URLs containing one of these are dropped.
pub const DEFAULT_IGNORE: &[&str] = &[
    "/tag/",
    "/tags/",
    "/category/",
    "/categories/",
    "/author/",
    "/authors/",
    "/profil/",
    "/profiles/",
    "/user/",
    "/users/",
    "/login/",
    "/signup/",
    "/member/",
    "/members/",
    "/cart/",
    "/shop/",
    "/register",
];

/// Query parameters kept when parameters are discarded (translations,
/// video ids).
pub const DEFAULT_KEEP: &[&str] = &["lang", "v"];

/// Query parameters that are never kept; a trailing `*` makes a prefix.
/// Compared case-insensitively.
pub const DEFAULT_TRACKING: &[&str] = &[
    "utm_*",
    "fbclid",
    "gclid",
    "dclid",
    "gbraid",
    "wbraid",
    "msclkid",
    "yclid",
    "mc_cid",
    "mc_eid",
    "_ga",
    "_gl",
    "igshid",
    "ref",
    "ref_src",
    "source",
    "phpsessid",
    "jsessionid",
    "sessionid",
    "sid",
];

/// Whose URL rules [`super::url::canonicalize`] applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UrlRules {
    /// The project's (RFC host case, slash handling; [`super::url`]).
    #[default]
    Project,
    /// The reference pipeline's, quirks included ([`super::url_reference`]).
    Reference,
}

/// Options of [`super::url::canonicalize`]; `Default` gives the reference's settings
/// (`discard_params` on, `fix_urls` off).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlOptions {
    /// Whose rules apply (option word `reference`).
    pub rules: UrlRules,
    /// Keep every query parameter except tracking ones (the reference's
    /// `discard_params = False`).
    pub keep_params: bool,
    /// Remove a leading `www.` from the host.
    pub strip_www: bool,
    /// Rewrite `http` to `https`.
    pub prefer_https: bool,
    /// Substrings that mark a URL as ignored.
    pub ignore: Vec<String>,
    /// Query parameter names kept when parameters are discarded.
    pub keep: Vec<String>,
    /// Query parameter names (or `prefix*`) never kept.
    pub tracking: Vec<String>,
}

impl Default for UrlOptions {
    fn default() -> Self {
        let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
        UrlOptions {
            rules: UrlRules::Project,
            keep_params: false,
            strip_www: false,
            prefer_https: false,
            ignore: owned(DEFAULT_IGNORE),
            keep: owned(DEFAULT_KEEP),
            tracking: owned(DEFAULT_TRACKING),
        }
    }
}

/// The option words [`UrlOptions::parse`] accepts.
pub const OPTION_WORDS: &str = "reference, keep_params, discard_params, strip_www, https, \
    ignore=a|b, ignore+=a|b, keep=a|b, keep+=a|b, tracking=a|b, tracking+=a|b";

impl UrlOptions {
    /// Parses an option string: comma-separated words from [`OPTION_WORDS`].
    /// `name=a|b` replaces a list, `name+=a|b` extends it, `name=` empties it.
    pub fn parse(spec: &str) -> Result<Self, Invalid> {
        let mut opts = UrlOptions::default();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item {
                "reference" => opts.rules = UrlRules::Reference,
                "keep_params" => opts.keep_params = true,
                "discard_params" => opts.keep_params = false,
                "strip_www" => opts.strip_www = true,
                "https" => opts.prefer_https = true,
                _ => {
                    let (name, value, extend) = if let Some((n, v)) = item.split_once("+=") {
                        (n.trim(), v, true)
                    } else if let Some((n, v)) = item.split_once('=') {
                        (n.trim(), v, false)
                    } else {
                        return Err(Invalid::from(format!(
                            "unknown option '{item}' (known: {OPTION_WORDS})"
                        )));
                    };
                    let list = match name {
                        "ignore" => &mut opts.ignore,
                        "keep" => &mut opts.keep,
                        "tracking" => &mut opts.tracking,
                        _ => {
                            return Err(Invalid::from(format!(
                                "unknown option '{item}' (known: {OPTION_WORDS})"
                            )))
                        }
                    };
                    if !extend {
                        list.clear();
                    }
                    let lower = name != "ignore";
                    list.extend(
                        value
                            .split('|')
                            .map(str::trim)
                            .filter(|s| !s.is_empty())
                            .map(|s| {
                                if lower {
                                    s.to_ascii_lowercase()
                                } else {
                                    s.to_string()
                                }
                            }),
                    );
                }
            }
        }
        Ok(opts)
    }

    /// Whether `self` and `other` canonicalize `url` alike because they
    /// differ at most in `keep_params` and `url` has no `?`: only a query
    /// reads `keep_params` (and no rule makes a `?` of anything else:
    /// percent-escapes of reserved characters stay escaped). Phase 1 then
    /// takes a row's strict URL from its canonical one without a second
    /// parse.
    pub fn alike_for(&self, other: &UrlOptions, url: &str) -> bool {
        !url.contains('?')
            && self.rules == other.rules
            && self.strip_www == other.strip_www
            && self.prefer_https == other.prefer_https
            && self.ignore == other.ignore
            && self.keep == other.keep
            && self.tracking == other.tracking
    }

    /// The first pattern of `ignore` (in the list's order) that `url`
    /// contains: `ignore.iter().find(|p| url.contains(p))`, in one pass
    /// over the URL that tries the patterns only where one can begin: at a
    /// byte some pattern begins with (the default ones all begin with `/`),
    /// followed by a byte some pattern has second (`/t`, `/c`, ...), instead
    /// of one search a pattern.
    pub(super) fn ignored_pattern(&self, url: &str) -> Option<&str> {
        let hay = url.as_bytes();
        let (mut begins, mut seconds) = ([false; 256], [false; 256]);
        // (An empty pattern is in every URL; one of one byte leaves the
        // second byte free.)
        let mut best = self.ignore.iter().position(String::is_empty);
        let mut any_second = false;
        for p in &self.ignore {
            match p.as_bytes() {
                [] => {}
                [b] => {
                    begins[*b as usize] = true;
                    any_second = true;
                }
                [b, c, ..] => {
                    begins[*b as usize] = true;
                    seconds[*c as usize] = true;
                }
            }
        }
        for (i, &b) in hay.iter().enumerate() {
            if !begins[b as usize]
                || !(any_second || hay.get(i + 1).is_some_and(|&c| seconds[c as usize]))
            {
                continue;
            }
            let rest = &hay[i..];
            let before = best.unwrap_or(self.ignore.len());
            if let Some(k) = self.ignore[..before]
                .iter()
                .position(|p| !p.is_empty() && begins_with(rest, p.as_bytes()))
            {
                best = Some(k);
                if k == 0 {
                    break;
                }
            }
        }
        best.map(|k| self.ignore[k].as_str())
    }

    /// Whether the query parameter `name` is a tracking one (its exact
    /// name, or a prefix ending in `*`, in `tracking`).
    pub(super) fn is_tracking(&self, name: &str) -> bool {
        self.tracking.iter().any(|t| match t.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == t,
        })
    }
}

/// `hay.starts_with(prefix)`, compared byte by byte: patterns are short and
/// most differ from the URL at their second byte, where this stops without
/// a call to `memcmp`.
fn begins_with(hay: &[u8], prefix: &[u8]) -> bool {
    prefix.len() <= hay.len() && hay.iter().zip(prefix).all(|(a, b)| a == b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn the_ignored_pattern_is_the_first_one_the_url_contains(
            url in "[/ab.?=]{0,40}",
            ignore in proptest::collection::vec("[/ab]{0,4}/?", 0..6),
        ) {
            let o = UrlOptions { ignore, ..UrlOptions::default() };
            let plain = o.ignore.iter().find(|p| url.contains(p.as_str())).map(String::as_str);
            prop_assert_eq!(o.ignored_pattern(&url), plain);
        }
    }

    #[test]
    fn the_default_ignored_patterns_are_found_in_their_order() {
        let o = UrlOptions::default();
        assert_eq!(o.ignored_pattern("https://x.org/a/tags/b"), Some("/tags/"));
        // Both contained: the one listed first wins, wherever it is.
        assert_eq!(o.ignored_pattern("https://x.org/users/tag/"), Some("/tag/"));
        assert_eq!(
            o.ignored_pattern("https://x.org/registered"),
            Some("/register")
        );
        assert_eq!(o.ignored_pattern("https://x.org/tagged/a"), None);
    }
}
