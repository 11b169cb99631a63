//! Learned URL rules (MaybeDont's hypotheses): which parts of a site's URLs
//! never change a page's content, learned from pairs of fetched URLs of one
//! path, and the probability that a URL not fetched yet brings nothing new.
//!
//! A rule is a key (domain, path or none, parameter or none, value or none)
//! with counts: of the pairs of fetched URLs it applies to (`observations`),
//! how many had the same content (`duplicates`). The hypotheses:
//!
//! | rule | domain | path | param | value | a pair of fetches … |
//! |---|---|---|---|---|---|
//! | refetch | d | – | – | – | … of one URL, again (its page does not change) |
//! | variant | d | `*` | – | – | … of two forms of one canonical URL |
//! | path | d | path | – | – | … of two URLs of one path (the query never matters) |
//! | param | d, or `*` (any domain) | – | p | – | … of two URLs that differ only in `p` (changed, added or removed) |
//! | path param | d | path | p | – | … same, on this path |
//! | path query param | d | `path?rest` | p | – | … same, the rest of the query being `rest` |
//! | value | d, or `*` | – | p | v | … of two URLs that differ only in `p=v` being added |
//! | path value | d | path | p | v | … same, on this path |
//!
//! The rules of MaybeDont, keyed by domain (its parameter and value rules
//! are global: our `*` rules), plus two of ours: how often fetching a URL
//! again brought the same content (refetch), and how often another form of
//! it (as canonicalized: tracking parameters, fragments, … dropped) did
//! (variant).
//!
//! ```
//! use dedup::core::url_rules::{UrlParts, evidence, RuleKey};
//! let a = UrlParts::parse("https://shop.example/item?id=7").unwrap();
//! let b = UrlParts::parse("https://shop.example/item?id=7&sessionid=x1").unwrap();
//! let keys = evidence(&a, &b);
//! assert!(keys.contains(&RuleKey::new("shop.example", None, Some("sessionid"), None)));
//! assert!(keys.contains(&RuleKey::new("shop.example", Some("/item"), Some("sessionid"), Some("x1"))));
//! assert_eq!(keys.len(), 8); // the path rule, four parameter rules, three value rules
//! ```
//!
//! Cost: a URL's parts are split once; a probability is a few hash lookups
//! per rule that applies.
//!
//! Reference: MaybeDont (`maybedont/predict.py`, `DupePredictor`), whose
//! hypotheses these are.

/// The domain of the rules that hold on every domain.
pub const ANY_DOMAIN: &str = "*";

/// Parameters a URL may have for the rules: one with more is not split (its
/// rules would cost the square of its parameters).
pub const MAX_PARAMS: usize = 64;

/// A URL split as the rules see it. Parameters given more than once are
/// left out (as MaybeDont does); the others are sorted by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlParts {
    /// The host, lowercase, without a leading `www.`.
    pub domain: String,
    /// The path (`/` at least), without query or fragment.
    pub path: String,
    /// Single-valued query parameters, sorted by name.
    pub query: Vec<(String, String)>,
}

impl UrlParts {
    /// Splits an absolute `http(s)` URL (canonicalize it first); `None` for
    /// anything else, and for a URL of more than [`MAX_PARAMS`] parameters.
    pub fn parse(url: &str) -> Option<UrlParts> {
        let (scheme, rest) = url.split_once("://")?;
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return None;
        }
        let rest = rest.split('#').next().unwrap_or("");
        let host_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let host = rest[..host_end].to_ascii_lowercase();
        let host = host.rsplit('@').next().unwrap_or("");
        let host = host.split(':').next().unwrap_or("");
        if host.is_empty() {
            return None;
        }
        let domain = host.strip_prefix("www.").unwrap_or(host).to_string();
        let (path, query) = match rest[host_end..].split_once('?') {
            Some((p, q)) => (p, q),
            None => (&rest[host_end..], ""),
        };
        let path = if path.is_empty() { "/" } else { path }.to_string();
        if query
            .split('&')
            .filter(|p| !p.is_empty())
            .nth(MAX_PARAMS)
            .is_some()
        {
            return None;
        }
        let mut pairs: Vec<(String, String)> = query_pairs(query).collect();
        pairs.sort();
        let mut query = Vec::with_capacity(pairs.len());
        let mut i = 0;
        while i < pairs.len() {
            let mut j = i + 1;
            while j < pairs.len() && pairs[j].0 == pairs[i].0 {
                j += 1;
            }
            if j == i + 1 {
                query.push(pairs[i].clone());
            }
            i = j;
        }
        Some(UrlParts {
            domain,
            path,
            query,
        })
    }

    /// Parts from a domain, a path and a query key ([`UrlParts::query_key`]).
    pub fn from_key(domain: &str, path: &str, key: &str) -> UrlParts {
        UrlParts {
            domain: domain.to_string(),
            path: path.to_string(),
            query: query_pairs(key).collect(),
        }
    }

    /// The URL as the rules see it: domain, path and query key
    /// (`example.com/a?b=1`): one key for the `http`/`https`, `www.`/bare
    /// and parameter-order variants of a URL.
    pub fn key(&self) -> String {
        let query = self.query_key();
        if query.is_empty() {
            format!("{}{}", self.domain, self.path)
        } else {
            format!("{}{}?{query}", self.domain, self.path)
        }
    }

    /// The query as one key: `name=value` pairs, sorted, joined by `&`.
    pub fn query_key(&self) -> String {
        query_key(self.query.iter())
    }

    /// The value of parameter `name`, if the query has it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The query key without parameter `name`.
    pub fn query_key_without(&self, name: &str) -> String {
        query_key(self.query.iter().filter(|(k, _)| k != name))
    }
}

/// The `name=value` pairs of a query (`&`-separated; a name without `=` has
/// an empty value), in order.
fn query_pairs(query: &str) -> impl Iterator<Item = (String, String)> + '_ {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (p.to_string(), String::new()),
        })
}

/// `name=value` pairs joined by `&` (in the order given).
fn query_key<'a>(pairs: impl Iterator<Item = &'a (String, String)>) -> String {
    let mut key = String::new();
    for (k, v) in pairs {
        if !key.is_empty() {
            key.push('&');
        }
        key.push_str(k);
        key.push('=');
        key.push_str(v);
    }
    key
}

/// The key of one rule.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleKey {
    /// The domain (host without `www.`).
    pub domain: String,
    /// The path (`/a/b`, or `/a/b?rest` for the path-and-query hypothesis),
    /// or none for a rule of the whole domain.
    pub path: Option<String>,
    /// The query parameter, or none for the path rule.
    pub param: Option<String>,
    /// The parameter's value for an "adding `param=value`" rule.
    pub value: Option<String>,
}

impl RuleKey {
    /// A key from its parts.
    pub fn new(domain: &str, path: Option<&str>, param: Option<&str>, value: Option<&str>) -> Self {
        RuleKey {
            domain: domain.to_string(),
            path: path.map(str::to_string),
            param: param.map(str::to_string),
            value: value.map(str::to_string),
        }
    }
}

/// The rules a pair of URLs of one domain and path is evidence for: the path
/// rule always; when the queries differ in exactly one parameter, the three
/// parameter rules; when that parameter is in one query only, the two value
/// rules too. Empty when the URLs are not of one domain and path, or equal.
pub fn evidence(a: &UrlParts, b: &UrlParts) -> Vec<RuleKey> {
    if a.domain != b.domain || a.path != b.path || a.query == b.query {
        return Vec::new();
    }
    let mut keys = vec![RuleKey::new(&a.domain, Some(&a.path), None, None)];
    if let Some((param, added)) = only_difference(a, b) {
        keys.extend(param_rules(a, &param, added.as_deref()));
    }
    keys
}

/// The key of the variant rule of `domain`: another form of a fetched URL
/// (scheme, `www.`, tracking parameters, fragment, parameter order) brings
/// the same content. Its path is `*`, which no real path is.
pub fn variant_rule(domain: &str) -> RuleKey {
    RuleKey::new(domain, Some("*"), None, None)
}

/// The key of the refetch rule of `domain`.
pub fn refetch_rule(domain: &str) -> RuleKey {
    RuleKey::new(domain, None, None, None)
}

/// The rules a difference in `param` alone is evidence for, `a` being one
/// of the two URLs: the four parameter rules, and the three value rules when
/// the parameter was `added` (in one URL only) with that value.
pub fn param_rules(a: &UrlParts, param: &str, added: Option<&str>) -> Vec<RuleKey> {
    let (domain, path) = (a.domain.as_str(), a.path.as_str());
    let rest = a.query_key_without(param);
    let mut keys = vec![
        RuleKey::new(ANY_DOMAIN, None, Some(param), None),
        RuleKey::new(domain, None, Some(param), None),
        RuleKey::new(domain, Some(path), Some(param), None),
        RuleKey::new(domain, Some(&format!("{path}?{rest}")), Some(param), None),
    ];
    if let Some(value) = added {
        keys.push(RuleKey::new(ANY_DOMAIN, None, Some(param), Some(value)));
        keys.push(RuleKey::new(domain, None, Some(param), Some(value)));
        keys.push(RuleKey::new(domain, Some(path), Some(param), Some(value)));
    }
    keys
}

/// The one parameter the queries of `a` and `b` differ in (present in one
/// only, or with two values), if there is exactly one, with its value when
/// it is present in one query only (added).
pub fn only_difference(a: &UrlParts, b: &UrlParts) -> Option<(String, Option<String>)> {
    let (mut i, mut j) = (0, 0);
    let mut found: Option<(&str, Option<&str>)> = None;
    loop {
        let diff = match (a.query.get(i), b.query.get(j)) {
            (None, None) => break,
            (Some(x), Some(y)) if x.0 == y.0 => {
                i += 1;
                j += 1;
                if x.1 == y.1 {
                    continue;
                }
                (x.0.as_str(), None)
            }
            (Some(x), Some(y)) if x.0 < y.0 => {
                i += 1;
                (x.0.as_str(), Some(x.1.as_str()))
            }
            (Some(x), None) => {
                i += 1;
                (x.0.as_str(), Some(x.1.as_str()))
            }
            (_, Some(y)) => {
                j += 1;
                (y.0.as_str(), Some(y.1.as_str()))
            }
        };
        if found.replace(diff).is_some() {
            return None;
        }
    }
    found.map(|(p, v)| (p.to_string(), v.map(str::to_string)))
}

/// The probability that a rule holds, as MaybeDont estimates it: 0 below 5
/// observations, else the lower end of the 95% confidence interval of a
/// Bernoulli with one pseudo-count on each side.
///
/// ```
/// use dedup::core::url_rules::probability;
/// assert_eq!(probability(4, 4), 0.0);
/// assert!((probability(100, 100) - 0.9711).abs() < 1e-3);
/// ```
pub fn probability(observations: i64, duplicates: i64) -> f64 {
    if observations < 5 {
        return 0.0;
    }
    let dup = duplicates.clamp(0, observations) as f64;
    let nodup = (observations as f64) - dup;
    let (a, b) = (dup + 1.0, nodup + 1.0);
    let n = a + b;
    let (p, q) = (a / n, b / n);
    (p - 1.96 * (p * q / n).sqrt()).max(0.0)
}

/// The estimated Jaccard similarity of two MinHash signatures of one length:
/// the share of equal values.
pub fn jaccard<T: PartialEq>(a: &[T], b: &[T]) -> f64 {
    if a.is_empty() || a.len() != b.len() {
        return 0.0;
    }
    a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / a.len() as f64
}

/// Whether [`jaccard`]`(a, b) >= threshold`, stopping at the first value
/// that makes it impossible (most pairs of different texts are decided in a
/// few dozen values).
pub fn jaccard_at_least<T: PartialEq>(a: &[T], b: &[T], threshold: f64) -> bool {
    if a.is_empty() || a.len() != b.len() {
        return false;
    }
    let allowed = ((1.0 - threshold) * a.len() as f64 + 1e-9).floor() as usize;
    let mut misses = 0;
    for (x, y) in a.iter().zip(b) {
        if x != y {
            misses += 1;
            if misses > allowed {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(url: &str) -> UrlParts {
        UrlParts::parse(url).unwrap()
    }

    #[test]
    fn parse_splits_host_path_and_single_valued_parameters() {
        let p = parts("https://WWW.Example.com:8080/a/b?z=1&a=2&t=1&t=2&flag#frag");
        assert_eq!(p.domain, "example.com");
        assert_eq!(p.path, "/a/b");
        assert_eq!(p.query_key(), "a=2&flag=&z=1");
        assert_eq!(p.key(), "example.com/a/b?a=2&flag=&z=1");
        assert_eq!(
            parts("http://www.example.com/a/b?z=1&a=2&flag").key(),
            p.key()
        );
        assert_eq!(parts("http://example.com").path, "/");
        assert_eq!(parts("http://example.com?x=1").query_key(), "x=1");
        assert!(UrlParts::parse("ftp://example.com/").is_none());
        assert!(UrlParts::parse("https:///nohost").is_none());
        assert!(UrlParts::parse("not a url").is_none());
        let many: Vec<String> = (0..=MAX_PARAMS).map(|i| format!("p{i}=1")).collect();
        assert!(UrlParts::parse(&format!("http://e.com/?{}", many[1..].join("&"))).is_some());
        assert!(UrlParts::parse(&format!("http://e.com/?{}", many.join("&"))).is_none());
    }

    #[test]
    fn evidence_per_hypothesis() {
        let d = "example.com";
        // Changed value: the three parameter rules, no value rule.
        let keys = evidence(
            &parts("http://example.com/p?a=1&s=1"),
            &parts("http://example.com/p?a=1&s=2"),
        );
        assert_eq!(
            keys,
            [
                RuleKey::new(d, Some("/p"), None, None),
                RuleKey::new("*", None, Some("s"), None),
                RuleKey::new(d, None, Some("s"), None),
                RuleKey::new(d, Some("/p"), Some("s"), None),
                RuleKey::new(d, Some("/p?a=1"), Some("s"), None),
            ]
        );
        // Added in the second URL only: the value rules name its value.
        let keys = evidence(
            &parts("http://example.com/p"),
            &parts("http://example.com/p?print=1"),
        );
        assert_eq!(keys.len(), 8);
        assert!(keys.contains(&RuleKey::new(d, Some("/p?"), Some("print"), None)));
        assert!(keys.contains(&RuleKey::new("*", None, Some("print"), Some("1"))));
        assert!(keys.contains(&RuleKey::new(d, None, Some("print"), Some("1"))));
        // Symmetric.
        let mut back = evidence(
            &parts("http://example.com/p?print=1"),
            &parts("http://example.com/p"),
        );
        let mut fore = keys.clone();
        back.sort();
        fore.sort();
        assert_eq!(back, fore);
        // Two differences: the path rule only.
        let keys = evidence(
            &parts("http://example.com/p?a=1"),
            &parts("http://example.com/p?b=2"),
        );
        assert_eq!(keys, [RuleKey::new(d, Some("/p"), None, None)]);
        // Other path, other domain, same URL: nothing.
        assert!(evidence(
            &parts("http://example.com/p"),
            &parts("http://example.com/q")
        )
        .is_empty());
        assert!(evidence(
            &parts("http://example.com/p"),
            &parts("http://example.org/p")
        )
        .is_empty());
        assert!(evidence(
            &parts("http://example.com/p?a=1"),
            &parts("http://www.example.com/p?a=1")
        )
        .is_empty());
    }

    #[test]
    fn probability_matches_maybedont() {
        // DupStat.get_prob by hand: dup 10, nodup 0 -> a 11, b 1, n 12,
        // p = 11/12, lower bound p - 1.96 sqrt(p q / n) = 0.760287 (computed
        // with MaybeDont's formula in Python).
        assert!((probability(10, 10) - 0.760_287).abs() < 1e-6);
        assert_eq!(probability(0, 0), 0.0);
        assert_eq!(probability(50, 0), 0.0);
        assert!(probability(1000, 1000) > 0.99);
        assert!(probability(1000, 990) < probability(1000, 1000));
    }

    #[test]
    fn jaccard_is_the_share_of_equal_values() {
        assert_eq!(jaccard(&[1, 2, 3, 4], &[1, 2, 0, 4]), 0.75);
        assert_eq!(jaccard::<u16>(&[], &[]), 0.0);
        assert_eq!(jaccard(&[1], &[1, 2]), 0.0);
        for (a, b) in [
            (
                [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
                [1, 2, 3, 4, 5, 6, 7, 8, 9, 0],
            ),
            (
                [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
                [1, 2, 3, 4, 5, 6, 7, 8, 0, 0],
            ),
            (
                [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
                [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
            ),
        ] {
            for t in [0.8, 0.9, 0.95, 1.0] {
                assert_eq!(
                    jaccard_at_least(&a, &b, t),
                    jaccard(&a, &b) >= t,
                    "{a:?} {b:?} {t}"
                );
            }
        }
    }
}
