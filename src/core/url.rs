//! URL canonicalization: the reference pipeline's rules, plus the URL
//! normalization it lacks. Pure functions; no SQLite types.
//!
//! Steps, in order (see the README for each rule's rationale and the corpus
//! rows it changes compared with the reference):
//! 1. discard the URL when it contains an ignored substring (`/tag/`, ...);
//! 2. drop trailing slashes, unwrap `web.archive.org/web/<timestamp>/<url>`;
//! 3. parse (http and https only); lowercase scheme and host, drop default
//!    ports, user info and dot segments, normalize percent-encoding;
//! 4. `*.m.wikipedia.org` becomes `*.wikipedia.org`; optionally strip `www.`
//!    and upgrade `http` to `https`;
//! 5. drop trailing slashes of the path; keep only the `lang`/`v` query
//!    parameters (first occurrence each, sorted by name) or, with
//!    `keep_params`, every parameter except tracking ones; drop the fragment
//!    unless it is `#page=N` or an application route (`#/...`, `#!/...`);
//! 6. discard the result when it contains an ignored substring.
//!
//! Cost: one parse of the URL, one allocation for the result.
//!
//! Reference: the WHATWG URL standard as the `url` crate implements it; the
//! reference's rules (`super::url_reference`) for the steps they share.

pub use super::url_common::{unwrap_wayback, CanonicalUrl, Discard, MAX_URL_BYTES};
pub use super::url_options::{
    UrlOptions, UrlRules, DEFAULT_IGNORE, DEFAULT_KEEP, DEFAULT_TRACKING, OPTION_WORDS,
};

/// Canonicalizes `url` (see the module documentation for the rules).
/// Under [`UrlRules::Reference`], the reference's rules instead
/// ([`super::url_reference`]).
pub fn canonicalize(url: &str, opts: &UrlOptions) -> Result<CanonicalUrl, Discard> {
    if opts.rules == UrlRules::Reference {
        return super::url_reference::canonicalize(url, opts);
    }
    let mut c = canonicalize_once(url, opts)?;
    // The rules can make a wrapper of what was none (an invisible character
    // in the host, a newline in the path); a canonical URL is none, so that
    // is canonicalized again (each pass unwraps at least one level).
    for _ in 0..MAX_WRAPPER_PASSES {
        if unwrap_wayback(&c.url).is_none() {
            return Ok(c);
        }
        let again = canonicalize_once(&c.url, opts)?;
        c = CanonicalUrl {
            wayback: c.wayback.or(again.wayback),
            ..again
        };
    }
    Err(Discard::Unparseable(format!(
        "archive wrappers still nested after {MAX_WRAPPER_PASSES} passes in '{}'",
        excerpt(url)
    )))
}

/// At most 200 characters of `s` for a reason: it never copies a huge input.
fn excerpt(s: &str) -> String {
    crate::core::text::excerpt(s, 200)
}

/// Passes [`canonicalize`] makes over wrappers that its rules revealed.
const MAX_WRAPPER_PASSES: usize = 8;

/// One pass of the rules.
fn canonicalize_once(url: &str, opts: &UrlOptions) -> Result<CanonicalUrl, Discard> {
    if url.len() > MAX_URL_BYTES {
        return Err(Discard::Unparseable(format!(
            "longer than {MAX_URL_BYTES} bytes ({} bytes)",
            url.len()
        )));
    }
    let original = url.trim();
    if let Some(p) = opts.ignored_pattern(original) {
        return Err(Discard::Ignored(p.to_string()));
    }
    // Wrappers inside wrappers are unwrapped to the innermost URL; the
    // outermost is the one kept (so a canonical URL is a fixpoint).
    let mut target = original.trim_end_matches('/');
    let mut wayback = None;
    while let Some((inner, wrapper)) = unwrap_wayback(target) {
        wayback.get_or_insert_with(|| wrapper.to_string());
        target = inner.trim_end_matches('/');
    }
    let parsed = ::url::Url::parse(target)
        .map_err(|e| Discard::Unparseable(format!("{e} in '{}'", excerpt(target))))?;
    let scheme = match parsed.scheme() {
        "http" if opts.prefer_https => "https",
        s @ ("http" | "https") => s,
        other => {
            return Err(Discard::Unparseable(format!(
                "scheme '{}' is not http(s)",
                excerpt(other)
            )))
        }
    };
    let mut host = parsed
        .host_str()
        .ok_or_else(|| Discard::Unparseable("no host".to_string()))?
        .trim_end_matches('.')
        .to_string();
    if host.is_empty() {
        return Err(Discard::Unparseable("empty host".to_string()));
    }
    while let Some(lang) = host.strip_suffix(".m.wikipedia.org") {
        host = format!("{lang}.wikipedia.org");
    }
    if opts.strip_www {
        while let Some(bare) = host.strip_prefix("www.") {
            if !bare.contains('.') {
                break;
            }
            host = bare.to_string();
        }
    }
    if host != parsed.host_str().unwrap_or_default() {
        // A host the trims changed is parsed again: `2..` trimmed is `2`,
        // which a URL parser reads as the address 0.0.0.2.
        host = ::url::Host::parse(&host)
            .map_err(|e| Discard::Unparseable(format!("{e} in host '{}'", excerpt(&host))))?
            .to_string();
    }

    let mut out = String::with_capacity(target.len());
    out.push_str(scheme);
    out.push_str("://");
    out.push_str(&host);
    if let Some(port) = parsed.port() {
        // `Url` already dropped the scheme's default port.
        if !(scheme == "https" && port == 443) {
            out.push(':');
            out.push_str(&port.to_string());
        }
    }
    out.push_str(normalize_percent(parsed.path()).trim_end_matches('/'));
    if let Some(query) = parsed.query() {
        out.push_str(&canonical_query(query, opts));
    }
    if let Some(fragment) = parsed.fragment() {
        if let Some(page) = page_anchor(fragment) {
            out.push_str("#page=");
            out.push_str(page);
        } else {
            // A route fragment, without the slashes the end trim would take.
            let route = normalize_percent(fragment);
            let route = route.trim_end_matches('/');
            if route.starts_with('/') || route.starts_with("!/") {
                out.push('#');
                out.push_str(route);
            }
        }
    }
    // Like the reference, no canonical URL ends with a slash (here a query
    // value may end with one).
    out.truncate(out.trim_end_matches('/').len());
    if let Some(p) = opts.ignored_pattern(&out) {
        return Err(Discard::Ignored(p.to_string()));
    }
    Ok(CanonicalUrl {
        url: out,
        domain: host,
        wayback,
    })
}

/// The page N of a PDF open-parameter fragment (`page=N`, alone or among
/// other parameters: `page=2&zoom=100` is page 2).
fn page_anchor(fragment: &str) -> Option<&str> {
    fragment.split('&').find_map(|part| {
        part.strip_prefix("page=")
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The kept query parameters, sorted by name, as `?a=1&b=2` (or empty).
/// `&` and a stray `?` both separate parameters.
fn canonical_query(query: &str, opts: &UrlOptions) -> String {
    let mut kept: Vec<(String, String)> = Vec::new();
    // What is kept already (whole parameters, or names): a set, so that a
    // URL with many parameters costs n log n, not n².
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    for part in query.split(['&', '?']).filter(|p| !p.is_empty()) {
        let part = normalize_percent(part);
        let name = part.split('=').next().unwrap_or("").to_ascii_lowercase();
        // A part of slashes alone would be a query the end trim empties.
        if name.is_empty() || part.bytes().all(|b| b == b'/') || opts.is_tracking(&name) {
            continue;
        }
        let keep = if opts.keep_params {
            seen.insert(part.clone())
        } else {
            opts.keep.contains(&name) && seen.insert(name.clone())
        };
        if keep {
            kept.push((name, part));
        }
    }
    // Sorted by name; a name's trailing slashes do not count, so that the
    // end trim below cannot move a part on a second pass.
    kept.sort_by(|a, b| a.0.trim_end_matches('/').cmp(b.0.trim_end_matches('/')));
    trim_last_part(&mut kept);
    if kept.is_empty() {
        return String::new();
    }
    let mut q = String::from("?");
    for (i, (_, part)) in kept.iter().enumerate() {
        if i > 0 {
            q.push('&');
        }
        q.push_str(part);
    }
    q
}

/// Applies the URL's end trim to the last of the sorted `kept` parts now:
/// a last part that loses its trailing slashes and then equals another part
/// is dropped (and the part before it is trimmed in turn), so that a
/// canonical URL's query is canonical again (`?p=&p=/` is `?p=`).
fn trim_last_part(kept: &mut Vec<(String, String)>) {
    if !kept.last().is_some_and(|(_, part)| part.ends_with('/')) {
        return;
    }
    let mut others: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (_, part) in kept.iter() {
        *others.entry(part.clone()).or_default() += 1;
    }
    while let Some((_, part)) = kept.last() {
        let trimmed = part.trim_end_matches('/');
        if trimmed.len() == part.len() {
            return;
        }
        if trimmed.is_empty() || others.get(trimmed).is_some_and(|&n| n > 0) {
            let (_, part) = kept.pop().expect("a last part");
            if let Some(n) = others.get_mut(&part) {
                *n -= 1;
            }
            continue;
        }
        let trimmed = trimmed.to_string();
        let last = kept.last_mut().expect("a last part");
        last.1 = trimmed;
        return;
    }
}

/// Decodes percent-escapes of unreserved characters and uppercases the hex
/// digits of the others (RFC 3986, section 6.2.2).
fn normalize_percent(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let (h, l) = (bytes[i + 1], bytes[i + 2]);
            if let (Some(hv), Some(lv)) = (hex_value(h), hex_value(l)) {
                let v = hv * 16 + lv;
                if v.is_ascii_alphanumeric() || matches!(v, b'-' | b'.' | b'_' | b'~') {
                    out.push(char::from(v));
                } else {
                    out.push('%');
                    out.push(char::from(h.to_ascii_uppercase()));
                    out.push(char::from(l.to_ascii_uppercase()));
                }
                i += 3;
                continue;
            }
        }
        if bytes[i] == b'%' {
            // A lone '%' is written as an escape, so that decoding what
            // follows can never form a new escape (`%%34A` would become
            // `%4A`, then `J`).
            out.push_str("%25");
            i += 1;
            continue;
        }
        // Input comes from `Url`, which serializes ASCII only.
        out.push(char::from(bytes[i]));
        i += 1;
    }
    out
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The query parameters of a (canonical) URL, in order, each as written
/// (`name=value`): the text after `?` up to `#`, split at `&`.
///
/// ```
/// use dedup::core::url::query_params;
/// assert_eq!(query_params("https://a.org/read?id=3&lang=en#top"), ["id=3", "lang=en"]);
/// assert!(query_params("https://a.org/read").is_empty());
/// ```
pub fn query_params(url: &str) -> Vec<&str> {
    let Some((_, query)) = url.split_once('?') else {
        return Vec::new();
    };
    let query = query.split('#').next().unwrap_or("");
    query.split('&').filter(|p| !p.is_empty()).collect()
}

/// The parameters of `strict` that `canonical` dropped, each as (name,
/// value) in the order they stand (a parameter counts once per occurrence,
/// so a repeated name whose second value was dropped is there; one without
/// `=` has the value `""`).
///
/// ```
/// use dedup::core::url::dropped_params;
/// assert_eq!(dropped_params("https://a.org/r?id=3&lang=cs", "https://a.org/r?lang=cs"), [("id", "3")]);
/// assert_eq!(dropped_params("https://a.org/r?lang=cs&lang=en&x", "https://a.org/r?lang=cs"), [("lang", "en"), ("x", "")]);
/// ```
pub fn dropped_params<'a>(strict: &'a str, canonical: &str) -> Vec<(&'a str, &'a str)> {
    let mut kept = query_params(canonical);
    let mut out = Vec::new();
    for p in query_params(strict) {
        match kept.iter().position(|k| *k == p) {
            Some(i) => {
                kept.swap_remove(i);
            }
            None => out.push(p.split_once('=').unwrap_or((p, ""))),
        }
    }
    out
}

/// The values of parameter `name` among a page's dropped ones, sorted.
fn values_of<'a>(page: &[(&str, &'a str)], name: &str) -> Vec<&'a str> {
    let mut v: Vec<&str> = page
        .iter()
        .filter(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .collect();
    v.sort_unstable();
    v
}

/// Of pages that share a canonical URL, given as (strict URL, canonical
/// URL), the names of the dropped parameters whose values are not the same
/// on every page (a page without the parameter counts as one more value):
/// the parameters that tell them apart. Sorted, each once.
///
/// ```
/// use dedup::core::url::differing_params;
/// let pages = [("https://a.org/r?id=1&start=0", "https://a.org/r"), ("https://a.org/r?id=2&start=0", "https://a.org/r")];
/// assert_eq!(differing_params(&pages), ["id"]);
/// ```
pub fn differing_params(pages: &[(&str, &str)]) -> Vec<String> {
    let dropped: Vec<Vec<(&str, &str)>> = pages.iter().map(|(s, c)| dropped_params(s, c)).collect();
    let mut names: Vec<&str> = dropped.iter().flatten().map(|(n, _)| *n).collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .filter(|name| {
            let first = values_of(&dropped[0], name);
            dropped[1..]
                .iter()
                .any(|page| values_of(page, name) != first)
        })
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn differing_params_name_only_what_tells_the_pages_apart() {
        let pages = [
            ("https://f.org/t?id=1&start=0", "https://f.org/t"),
            ("https://f.org/t?id=2&start=0", "https://f.org/t"),
            ("https://f.org/t?id=1&id=3&start=0", "https://f.org/t"),
        ];
        assert_eq!(differing_params(&pages), ["id"]);
        // A parameter one page lacks tells it apart.
        let pages = [
            ("https://f.org/t?id=1&p=2", "https://f.org/t"),
            ("https://f.org/t?id=1", "https://f.org/t"),
        ];
        assert_eq!(differing_params(&pages), ["p"]);
        assert!(differing_params(&pages[..1]).is_empty());
    }

    fn canon(url: &str) -> String {
        canonicalize(url, &UrlOptions::default()).unwrap().url
    }

    #[test]
    fn issue_example() {
        assert_eq!(
            canon("HTTP://WWW.Example.COM:80/a/./b/../page/?utm_source=x&lang=fr#top"),
            "http://www.example.com/a/page?lang=fr"
        );
    }

    #[test]
    fn reference_rules() {
        assert_eq!(
            canon("https://blog.rust-lang.org/2023/09/19/Rust-1.72.1/"),
            "https://blog.rust-lang.org/2023/09/19/Rust-1.72.1"
        );
        assert_eq!(
            canon("https://x.example.org/kb/a/?PHPSESSID=7d0b"),
            "https://x.example.org/kb/a"
        );
        assert_eq!(
            canon("https://x.org/doc.pdf#page=7"),
            "https://x.org/doc.pdf#page=7"
        );
        assert_eq!(canon("https://x.org/post#comments"), "https://x.org/post");
        assert_eq!(
            canon("https://en.m.wikipedia.org/wiki/Rust"),
            "https://en.wikipedia.org/wiki/Rust"
        );
        assert_eq!(
            canon("https://x.org/watch?v=abc&t=10"),
            "https://x.org/watch?v=abc"
        );
        assert_eq!(canon("https://x.org/"), "https://x.org");
    }

    #[test]
    fn improvements_over_the_reference() {
        // lang kept wherever it is, tracking parameters never kept.
        assert_eq!(
            canon("https://x.org/a/?utm_source=feed&lang=en"),
            "https://x.org/a?lang=en"
        );
        // A stray second '?' separates parameters.
        assert_eq!(
            canon("https://x.org/a/?lang=es?sessionid=77ce"),
            "https://x.org/a?lang=es"
        );
        // First occurrence of a kept parameter; kept parameters sorted.
        assert_eq!(
            canon("https://x.org/a?v=2&lang=fr&lang=en"),
            "https://x.org/a?lang=fr&v=2"
        );
        // Percent-encoding normalized, default https port dropped.
        assert_eq!(
            canon("https://X.org:443/%7euser%2fx"),
            "https://x.org/~user%2Fx"
        );
        assert_eq!(canon("http://x.org:8080/a/"), "http://x.org:8080/a");
    }

    #[test]
    fn wayback_wrappers_are_unwrapped() {
        let c = canonicalize(
            "https://web.archive.org/web/20240318151909/https://requests.readthedocs.io/en/v2.12.5/community/recommended/",
            &UrlOptions::default(),
        )
        .unwrap();
        assert_eq!(
            c.url,
            "https://requests.readthedocs.io/en/v2.12.5/community/recommended"
        );
        assert_eq!(c.domain, "requests.readthedocs.io");
        assert_eq!(
            c.wayback.as_deref(),
            Some("https://web.archive.org/web/20240318151909/https://requests.readthedocs.io/en/v2.12.5/community/recommended")
        );
        assert_eq!(
            unwrap_wayback("http://web.archive.org/web/2020id_/http://a.org/x").map(|p| p.0),
            Some("http://a.org/x")
        );
        assert_eq!(unwrap_wayback("https://web.archive.org/web/*/a.org"), None);
    }

    #[test]
    fn ignored_before_and_after_unwrapping() {
        let o = UrlOptions::default();
        assert_eq!(
            canonicalize("https://x.org/tag/rust/", &o),
            Err(Discard::Ignored("/tag/".into()))
        );
        // A dot segment hides "/login/" until the path is resolved.
        assert_eq!(
            canonicalize("https://x.org/a/../login/x", &o),
            Err(Discard::Ignored("/login/".into()))
        );
    }

    #[test]
    fn unparseable_urls_are_reported() {
        let o = UrlOptions::default();
        assert!(matches!(
            canonicalize("not a url", &o),
            Err(Discard::Unparseable(_))
        ));
        assert!(matches!(
            canonicalize("ftp://x.org/a", &o),
            Err(Discard::Unparseable(_))
        ));
        assert!(matches!(canonicalize("", &o), Err(Discard::Unparseable(_))));
    }

    #[test]
    fn options_parse_and_apply() {
        let o =
            UrlOptions::parse("keep_params, strip_www, https, ignore+=/private/, keep=lang|page")
                .unwrap();
        assert!(o.keep_params && o.strip_www && o.prefer_https);
        assert_eq!(o.keep, ["lang", "page"]);
        assert!(
            o.ignore.contains(&"/private/".to_string()) && o.ignore.contains(&"/tag/".to_string())
        );
        let c = canonicalize("http://www.x.org/a/?b=2&utm_medium=x&a=1", &o).unwrap();
        assert_eq!(c.url, "https://x.org/a?a=1&b=2");
        assert_eq!(c.domain, "x.org");
        assert_eq!(
            canonicalize("https://x.org/private/a", &o),
            Err(Discard::Ignored("/private/".into()))
        );
        assert!(UrlOptions::parse("ignore=").unwrap().ignore.is_empty());
        assert_eq!(
            UrlOptions::parse("bogus").unwrap_err().to_string(),
            format!("unknown option 'bogus' (known: {OPTION_WORDS})")
        );
    }

    #[test]
    fn app_route_fragments_are_kept() {
        assert_eq!(
            canon("https://app.example.org/#/room/abc"),
            "https://app.example.org#/room/abc"
        );
    }

    proptest! {
        #[test]
        fn canonicalization_is_idempotent(
            scheme in "(http|https|HTTP)",
            host in "(www\\.)?[a-zA-Z]{1,8}\\.(org|COM)(:80|:443|:8080)?",
            path in "(/[a-zA-Z0-9.%~_-]{0,6}){0,4}/?",
            query in "(\\?[a-z_]{1,5}=[a-z0-9%/]{0,4}([&?][a-z_]{1,5}=[a-z0-9]{0,3}){0,3})?",
            frag in "(#page=[0-9]{1,2}|#[a-z]{1,4}|#/[a-z/]{0,5})?",
            keep in any::<bool>(),
        ) {
            let o = UrlOptions { keep_params: keep, ..UrlOptions::default() };
            let url = format!("{scheme}://{host}{path}{query}{frag}");
            if let Ok(c) = canonicalize(&url, &o) {
                let again = canonicalize(&c.url, &o).expect("canonical URL stays valid");
                prop_assert_eq!(&again.url, &c.url);
                prop_assert_eq!(again.domain, c.domain);
            }
        }
    }

    #[test]
    fn a_wrapper_the_rules_reveal_is_unwrapped() {
        // A zero-width space before the archive's host hides the wrapper
        // until the host is mapped; a newline inside the path likewise.
        assert_eq!(
            canon("https://\u{200b}web.archive.org/web/2020/\nhttps://x.org/a/"),
            "https://x.org/a"
        );
        assert!(canonicalize(
            "https://\u{200b}web.archive.org/web/2020/https://%25x.org",
            &UrlOptions::default()
        )
        .is_err());
        // Nested: each pass reveals the next level.
        assert_eq!(
            canon("https://\u{200b}web.archive.org/web/1/https://\u{200b}web.archive.org/web/2/https://x.org/b"),
            "https://x.org/b"
        );
    }

    #[test]
    fn a_query_of_slashes_alone_is_dropped_and_the_last_part_trimmed() {
        let o = UrlOptions::parse("keep_params").unwrap();
        for (url, want) in [
            ("https://x.org/a?/", "https://x.org/a"),
            ("https://x.org/a?/&//", "https://x.org/a"),
            // The URL's own trailing slash goes first, then parts sort.
            ("https://x.org/a?b/&a/", "https://x.org/a?a&b"),
            ("https://x.org/a?b/&a/&/", "https://x.org/a?a/&b"),
            // The last part, trimmed, equals another: one is kept.
            ("http://a.org?p=?p=/#", "http://a.org?p="),
            // Only the last part is trimmed.
            (
                "https://x.org/a?p=a//&p=a/&p=a&q",
                "https://x.org/a?p=a//&p=a/&p=a&q",
            ),
            ("https://x.org/a?p=a&p=a/&p=a//", "https://x.org/a?p=a"),
            // A name's trailing slash does not count in the order.
            ("https://x.org/a?p.&p/&q", "https://x.org/a?p/&p.&q"),
            ("https://x.org/a?p/&a#", "https://x.org/a?a&p"),
        ] {
            assert_eq!(canonicalize(url, &o).unwrap().url, want, "{url}");
            assert_eq!(canonicalize(want, &o).unwrap().url, want, "{want}");
        }
    }

    #[test]
    fn a_host_the_trims_change_is_parsed_again() {
        // `2..` keeps its dots in a URL parser (the last label is empty, so
        // it is no number); trimmed, `2` is the IPv4 number 0.0.0.2.
        assert_eq!(canon("https://2../a"), "https://0.0.0.2/a");
        assert_eq!(canon("https://\u{b2}../a"), "https://0.0.0.2/a");
        assert_eq!(canon("https://0.0.0.2/a"), "https://0.0.0.2/a");
        // `www.2..` trims to `www.2`, which ends in a number but is no
        // address: unparseable, as `http://www.2` itself is.
        let o = UrlOptions::default();
        assert!(canonicalize("http://www.2", &o).is_err());
        assert!(canonicalize("http://www.2../", &o).is_err());
    }

    #[test]
    fn nested_and_repeated_forms_unwrap_in_one_call() {
        let o = UrlOptions::parse("strip_www").unwrap();
        let c = canonicalize(
            "http://web.archive.org/web/2020/https://web.archive.org/web/2019id_/http://en.m.m.wikipedia.org/wiki/X/",
            &o,
        )
        .unwrap();
        assert_eq!(c.url, "http://en.wikipedia.org/wiki/X");
        assert_eq!(
            c.wayback.as_deref(),
            Some("http://web.archive.org/web/2020/https://web.archive.org/web/2019id_/http://en.m.m.wikipedia.org/wiki/X")
        );
        assert_eq!(
            canonicalize("http://www.www.x.org/a", &o).unwrap().url,
            "http://x.org/a"
        );
        assert_eq!(
            canonicalize("http://www.www.org/a", &o).unwrap().url,
            "http://www.org/a"
        );
        assert_eq!(canon("http://a.org/p#!/\u{e}"), "http://a.org/p");
        assert_eq!(canon("http://a.org/p#/a/\u{1}"), "http://a.org/p#/a");
        assert_eq!(canon("http://a.org/%%34A"), "http://a.org/%254A");
    }

    #[test]
    fn pdf_open_parameters_keep_the_page() {
        assert_eq!(
            canon("https://x.org/doc.pdf#page=2&zoom=100"),
            "https://x.org/doc.pdf#page=2"
        );
        assert_eq!(
            canon("https://x.org/doc.pdf#zoom=100&page=12"),
            "https://x.org/doc.pdf#page=12"
        );
        assert_eq!(
            canon("https://x.org/doc.pdf#zoom=100"),
            "https://x.org/doc.pdf"
        );
    }

    /// Nested and repeated forms: wayback wrappers inside wrappers, `www.`
    /// and mobile Wikipedia layers, odd fragments with control characters.
    fn nested_url() -> impl Strategy<Value = String> {
        let wrapper = ("(http|https|HTTPS)", "[0-9]{1,14}", "(|id_|im_|js_)", "/*")
            .prop_map(|(s, t, f, slash)| format!("{s}://web.archive.org/web/{t}{f}/{slash}"));
        let host = prop_oneof![
            ("(www\\.){0,3}", "[a-z]{1,6}\\.(org|com)").prop_map(|(w, h)| format!("{w}{h}")),
            ("[a-z]{2}", "(\\.m){0,3}").prop_map(|(l, m)| format!("{l}{m}.wikipedia.org")),
            ("(www\\.){1,3}").prop_map(|w| format!("{w}org")),
        ];
        (
            proptest::collection::vec(wrapper, 0..3),
            "(http|https)",
            host,
            "(/[a-zA-Z0-9.%~_-]{0,6}){0,3}/{0,2}",
            "(\\?[a-z]{1,4}=[a-z0-9%/]{0,4}){0,2}/{0,2}",
            "(#page=[0-9]{1,2}(&zoom=[0-9]{1,3})?|#[\\x00-\\x1f /!]{0,4}|#!?/[a-z/]{0,5}|#.{0,3})?",
        )
            .prop_map(|(wrappers, scheme, host, path, query, frag)| {
                format!("{}{scheme}://{host}{path}{query}{frag}", wrappers.concat())
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn options_alike_for_a_url_canonicalize_it_alike(
            url in nested_url(),
            strip_www in any::<bool>(),
            https in any::<bool>(),
        ) {
            let o = UrlOptions { strip_www, prefer_https: https, ..UrlOptions::default() };
            let kept = UrlOptions { keep_params: true, ..o.clone() };
            if o.alike_for(&kept, &url) {
                prop_assert_eq!(canonicalize(&url, &o), canonicalize(&url, &kept), "{:?}", url);
            } else {
                prop_assert!(url.contains('?'));
            }
        }
    }

    #[test]
    fn options_are_alike_only_without_a_query_and_but_for_keep_params() {
        let o = UrlOptions::default();
        let kept = UrlOptions {
            keep_params: true,
            ..o.clone()
        };
        assert!(o.alike_for(&kept, "https://x.org/a#b"));
        assert!(!o.alike_for(&kept, "https://x.org/a?id=1"));
        assert!(!o.alike_for(&kept, "https://x.org/a#?id=1"));
        let www = UrlOptions {
            strip_www: true,
            ..kept.clone()
        };
        assert!(!o.alike_for(&www, "https://www.x.org/a"));
        // (the reason: these two differ on that URL)
        assert_ne!(
            canonicalize("https://www.x.org/a", &o),
            canonicalize("https://www.x.org/a", &www)
        );
        let ignore = UrlOptions {
            ignore: vec!["/a".into()],
            ..kept
        };
        assert!(!o.alike_for(&ignore, "https://x.org/a"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn canonicalization_is_idempotent_on_nested_forms(
            url in nested_url(),
            keep in any::<bool>(),
            strip_www in any::<bool>(),
            https in any::<bool>(),
        ) {
            let o = UrlOptions { keep_params: keep, strip_www, prefer_https: https, ..UrlOptions::default() };
            if let Ok(c) = canonicalize(&url, &o) {
                let again = canonicalize(&c.url, &o);
                prop_assert!(again.is_ok(), "{:?} -> {:?} -> {:?}", url, c.url, again);
                let again = again.unwrap();
                prop_assert_eq!(&again.url, &c.url, "from {:?}", url);
                prop_assert_eq!(again.domain, c.domain);
            }
        }
    }
}
