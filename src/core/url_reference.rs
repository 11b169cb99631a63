//! The reference pipeline's URL canonicalization, rule for rule, quirks
//! included: what `compat: reference` and `canonical_url(url, 'reference')`
//! give. Pure functions; no SQLite types.
//!
//! What: a URL holding an ignored substring (as stored, case-sensitive) is
//! discarded; otherwise it is trimmed, its trailing slashes go, a
//! `web.archive.org/web/<timestamp>/<url>` wrapper is unwrapped (one level),
//! and it is split as Python's `urllib.parse.urlsplit` splits it (scheme,
//! host, path, query, fragment; tab, CR and LF removed). Then:
//! - the host is kept as written (its case, `www.`, its port), but
//!   `<lang>.m.wikipedia.org` becomes `<lang>.wikipedia.org`; `http` stays
//!   `http`;
//! - the path is kept as written: its trailing slash stays when a query or
//!   fragment followed it (only the URL's end was trimmed);
//! - the query ends at a second `?`; with parameters discarded it is kept
//!   whole when its first parameter is `lang=…` or `v=…` (the `keep`
//!   list), and dropped otherwise; with `keep_params` it is kept whole
//!   (tracking parameters included);
//! - the fragment is kept only when it is `page=N`.
//!
//! The domain is the host so kept. Where the reference's outputs say
//! nothing (another scheme, no host), the URL is unparseable, as under the
//! project's rules ([`super::url`]).
//!
//! Cost: one pass over the URL, one allocation for the result.
//!
//! Reference: checked row by row against the reference's own canonical
//! URLs, domains and archive wrappers on three crawls
//! (`../shared/corpus/expected/*canonical.tsv`; `tests/python/test_compat_urls.py`).

use super::url_common::{unwrap_wayback, CanonicalUrl, Discard, MAX_URL_BYTES};
use super::url_options::UrlOptions;

/// Canonicalizes `url` as the reference does (see the module documentation).
pub fn canonicalize(url: &str, opts: &UrlOptions) -> Result<CanonicalUrl, Discard> {
    if url.len() > MAX_URL_BYTES {
        return Err(Discard::Unparseable(format!(
            "longer than {MAX_URL_BYTES} bytes ({} bytes)",
            url.len()
        )));
    }
    if let Some(p) = opts.ignored_pattern(url) {
        return Err(Discard::Ignored(p.to_string()));
    }
    let cleaned: String;
    let mut target = url.trim();
    if target.contains(['\t', '\r', '\n']) {
        cleaned = target.replace(['\t', '\r', '\n'], "");
        target = &cleaned;
    }
    let target = target.trim_end_matches('/');
    let (target, wayback) = match unwrap_wayback(target) {
        Some((inner, wrapper)) => (inner, Some(wrapper.to_string())),
        None => (target, None),
    };
    let parts = split(target)?;
    let mut host = parts.host.to_string();
    if let Some(lang) = host.strip_suffix(".m.wikipedia.org") {
        host = format!("{lang}.wikipedia.org");
    }
    let query = parts.query.map(|q| q.split('?').next().unwrap_or(""));
    let query = query.filter(|q| opts.keep_params || first_is_kept(q, opts));
    let fragment = parts.fragment.filter(|f| is_page_anchor(f));
    let mut out = String::with_capacity(target.len());
    out.push_str(&parts.scheme);
    out.push_str("://");
    out.push_str(&host);
    out.push_str(parts.path);
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    Ok(CanonicalUrl {
        url: out,
        domain: host,
        wayback,
    })
}

/// A URL split as `urlsplit` splits it.
struct Parts<'a> {
    scheme: String,
    host: &'a str,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

/// Splits an http(s) URL with a host; anything else is unparseable.
fn split(url: &str) -> Result<Parts<'_>, Discard> {
    let excerpt = || crate::core::text::excerpt(url, 200);
    let scheme_end = url
        .find(':')
        .filter(|&i| {
            let s = &url[..i];
            s.starts_with(|c: char| c.is_ascii_alphabetic())
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        })
        .ok_or_else(|| Discard::Unparseable(format!("no scheme in '{}'", excerpt())))?;
    let scheme = url[..scheme_end].to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return Err(Discard::Unparseable(format!(
            "scheme '{}' is not http(s)",
            crate::core::text::excerpt(&scheme, 200)
        )));
    }
    let rest = url[scheme_end + 1..]
        .strip_prefix("//")
        .ok_or_else(|| Discard::Unparseable("no host".to_string()))?;
    let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let host = &rest[..host_end];
    if host.is_empty() {
        return Err(Discard::Unparseable("no host".to_string()));
    }
    let rest = &rest[host_end..];
    let (rest, fragment) = match rest.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (rest, None),
    };
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    Ok(Parts {
        scheme,
        host,
        path,
        query,
        fragment,
    })
}

/// Whether the query's first parameter is `name=…` for a name of `keep`.
fn first_is_kept(query: &str, opts: &UrlOptions) -> bool {
    let first = query.split('&').next().unwrap_or("");
    first
        .split_once('=')
        .is_some_and(|(name, _)| opts.keep.iter().any(|k| k == name))
}

/// `page=N`, the whole fragment.
fn is_page_anchor(fragment: &str) -> bool {
    fragment
        .strip_prefix("page=")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(url: &str) -> Result<CanonicalUrl, Discard> {
        canonicalize(url, &UrlOptions::default())
    }

    fn url(u: &str) -> String {
        reference(u)
            .map(|c| c.url)
            .unwrap_or_else(|d| d.to_string())
    }

    #[test]
    fn the_trailing_slash_stays_before_a_query_or_fragment() {
        // (Rows of the reference's own outputs, parity-5k and the demo.)
        assert_eq!(
            url("https://jlevy.github.io/the-art-of-command-line/meta/?lang=id/"),
            "https://jlevy.github.io/the-art-of-command-line/meta/?lang=id"
        );
        assert_eq!(
            url("https://requests.readthedocs.io/en/v0.8.4/dev/todo/#how-to-help"),
            "https://requests.readthedocs.io/en/v0.8.4/dev/todo/"
        );
        assert_eq!(
            url("https://requests.readthedocs.io/_/downloads/en/latest/pdf/#page=7"),
            "https://requests.readthedocs.io/_/downloads/en/latest/pdf/#page=7"
        );
    }

    #[test]
    fn hosts_keep_their_case_and_http_stays() {
        let c = reference("https://REQUESTS.READTHEDOCS.IO/en/v2.0.0/dev/todo/").unwrap();
        assert_eq!(c.url, "https://REQUESTS.READTHEDOCS.IO/en/v2.0.0/dev/todo");
        assert_eq!(c.domain, "REQUESTS.READTHEDOCS.IO");
        assert_eq!(
            url("http://www.python-requests.org/en/v1.2.1/#feature-support"),
            "http://www.python-requests.org/en/v1.2.1/"
        );
        let w = reference("https://en.m.wikipedia.org/wiki/Imposter_Syndrome").unwrap();
        assert_eq!(
            (w.url.as_str(), w.domain.as_str()),
            (
                "https://en.wikipedia.org/wiki/Imposter_Syndrome",
                "en.wikipedia.org"
            )
        );
    }

    #[test]
    fn lang_is_kept_only_first_and_then_the_whole_query_up_to_a_second_question_mark() {
        assert_eq!(
            url("https://x.example.io/kb/a/?utm_source=feed&lang=en"),
            "https://x.example.io/kb/a/"
        );
        assert_eq!(
            url("https://x.example.io/a/?lang=en&utm_source=feed"),
            "https://x.example.io/a/?lang=en&utm_source=feed"
        );
        assert_eq!(
            url("https://jlevy.github.io/a/?lang=ro?utm_source=newsletter&utm_medium=email"),
            "https://jlevy.github.io/a/?lang=ro"
        );
        let keep = UrlOptions {
            keep_params: true,
            ..UrlOptions::default()
        };
        let kept = |u: &str| canonicalize(u, &keep).unwrap().url;
        assert_eq!(
            kept("https://x.example.io/a/?PHPSESSID=fa"),
            "https://x.example.io/a/?PHPSESSID=fa"
        );
        assert_eq!(
            kept("https://x.example.io/a/?lang=cs?ref=hn"),
            "https://x.example.io/a/?lang=cs"
        );
    }

    #[test]
    fn ignored_patterns_match_the_url_as_stored() {
        assert_eq!(
            url("https://requests.readthedocs.io/login/?next=/cargo/"),
            "ignored: /login/"
        );
        assert_eq!(url("https://x.org/USER/a"), "https://x.org/USER/a");
        assert_eq!(url("https://x.org/tag"), "https://x.org/tag");
    }

    #[test]
    fn archive_wrappers_are_unwrapped_once() {
        let c = reference(
            "https://web.archive.org/web/20151220020000/https://jlevy.github.io/meta/?lang=ru",
        )
        .unwrap();
        assert_eq!(c.url, "https://jlevy.github.io/meta/?lang=ru");
        assert_eq!(
            c.wayback.as_deref(),
            Some(
                "https://web.archive.org/web/20151220020000/https://jlevy.github.io/meta/?lang=ru"
            )
        );
    }

    #[test]
    fn what_is_not_an_http_url_with_a_host_is_unparseable() {
        for u in [
            "ftp://x.org/a",
            "mailto:a@b.org",
            "https:///a",
            "x.org/a",
            "",
        ] {
            assert!(matches!(reference(u), Err(Discard::Unparseable(_))), "{u}");
        }
    }
}
