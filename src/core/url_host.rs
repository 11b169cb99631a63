//! The host a URL is served from, as per-host facts are keyed (`fix_urls`:
//! whether the host answers https, whether its `www.` name serves what the
//! bare one does). One definition for the probe that records the facts and
//! the run that reads them.
//!
//! Cost: one URL parse.
//!
//! Reference: the WHATWG host of the URL (the `url` crate), after
//! [`super::url_common::unwrap_wayback`].

/// The lower-cased host of an http(s) URL, with its port when it is not the
/// scheme's default (`example.org`, `www.example.org:8080`); for a Wayback
/// Machine wrapper, the archived URL's. `None` for anything else.
///
/// ```
/// use dedup::core::url_host::host_key;
/// assert_eq!(host_key("http://WWW.Example.org/a?b=1").as_deref(), Some("www.example.org"));
/// assert_eq!(host_key("https://example.org:8443/").as_deref(), Some("example.org:8443"));
/// assert_eq!(host_key("https://example.org:443/").as_deref(), Some("example.org"));
/// assert_eq!(host_key("https://web.archive.org/web/2015/http://www.a.net/x").as_deref(),
///            Some("www.a.net"));
/// assert_eq!(host_key("ftp://example.org/"), None);
/// assert_eq!(host_key("not a url"), None);
/// ```
pub fn host_key(url: &str) -> Option<String> {
    let trimmed = url.trim();
    let inner = super::url_common::unwrap_wayback(trimmed).map_or(trimmed, |(inner, _)| inner);
    let parsed = url::Url::parse(inner).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return None;
    }
    let host = parsed.host_str()?.to_ascii_lowercase();
    Some(match parsed.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}
