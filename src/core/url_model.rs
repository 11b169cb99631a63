//! What `dupe_probability` reads of the learned URL rules, held in memory:
//! the URLs seen (by key, with the raw form last fetched), the paths and
//! queries they cover, the parameters seen beside each rest of a query, and
//! each rule's probability. Built from the model's tables once, then kept
//! current by the [`Change`]s a learning batch makes, so a prediction is a
//! few hash lookups (as MaybeDont's in-memory model), not SQL statements.
//!
//! Cost: building reads each table once; a prediction is a few hash
//! lookups; a batch's changes are applied as they come, without reading
//! the tables again.
//!
//! Reference: MaybeDont's in-memory model (`maybedont/predict.py`).

use std::collections::{HashMap, HashSet};

use super::url_rules::{RuleKey, UrlParts, ANY_DOMAIN};

/// One change a learning batch made to the model's tables.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A URL seen for the first time (`dedup_url_seen` row).
    Seen {
        /// Its key ([`UrlParts::key`]).
        key: String,
        /// Its domain, path and query key.
        domain: String,
        /// Its path.
        path: String,
        /// Its query key ([`UrlParts::query_key`]).
        query: String,
        /// The URL as fetched.
        raw: String,
    },
    /// A URL seen before, fetched again as `raw`.
    Refetched {
        /// Its key.
        key: String,
        /// The URL as fetched this time.
        raw: String,
    },
    /// A parameter of a seen URL (`dedup_url_params` row): the URL's
    /// query without it is `rest`.
    Param {
        /// The URL's domain.
        domain: String,
        /// The URL's path.
        path: String,
        /// The query key without the parameter.
        rest: String,
        /// The parameter's name.
        param: String,
        /// Its value.
        value: String,
    },
    /// A rule's new probability.
    Rule {
        /// The rule.
        key: RuleKey,
        /// Its probability now.
        probability: f64,
    },
}

/// The learned model, as predictions read it.
#[derive(Debug, Default, Clone)]
pub struct UrlModel {
    /// Seen URL key -> the URL as last fetched.
    seen: HashMap<String, String>,
    /// [`joined`] (domain, path) of every seen URL.
    paths: HashSet<String>,
    /// [`joined`] (domain, path, query) of every seen URL.
    queries: HashSet<String>,
    /// [`joined`] (domain, path, rest, param) of every seen parameter.
    params: HashSet<String>,
    /// [`joined`] (domain, path, rest) -> the distinct (param, value) seen there.
    beside: HashMap<String, Vec<(String, String)>>,
    /// [`rule_joined`] rule -> its probability.
    rules: HashMap<String, f64>,
}

/// Appends `part` to `out` so that parts joined stay apart: its length, a
/// colon, the part.
fn push_part(out: &mut String, part: &str) {
    use std::fmt::Write;
    let _ = write!(out, "{}:", part.len());
    out.push_str(part);
}

/// Strings joined without ambiguity (each prefixed by its length).
fn joined(parts: &[&str]) -> String {
    let mut s = String::with_capacity(parts.iter().map(|p| p.len() + 4).sum());
    joined_into(&mut s, parts);
    s
}

/// [`joined`] written into `out` (emptied first): a look-up key without a
/// new allocation.
fn joined_into<'o>(out: &'o mut String, parts: &[&str]) -> &'o str {
    out.clear();
    for p in parts {
        push_part(out, p);
    }
    out
}

/// A rule's key as one text (into `out`, emptied first): each part as
/// [`joined`] writes it, an absent one as `-` (a part present starts with
/// a digit). `path_rest`: the rest of the query after the path and a `?`
/// (the path-and-query hypothesis).
fn rule_joined<'o>(
    out: &'o mut String,
    domain: &str,
    path: Option<(&str, Option<&str>)>,
    param: Option<&str>,
    value: Option<&str>,
) -> &'o str {
    out.clear();
    push_part(out, domain);
    match path {
        None => out.push('-'),
        Some((p, None)) => push_part(out, p),
        Some((p, Some(rest))) => {
            use std::fmt::Write;
            let _ = write!(out, "{}:", p.len() + 1 + rest.len());
            out.push_str(p);
            out.push('?');
            out.push_str(rest);
        }
    }
    for part in [param, value] {
        match part {
            None => out.push('-'),
            Some(x) => push_part(out, x),
        }
    }
    out
}

/// [`rule_joined`] of a [`RuleKey`].
fn key_joined(key: &RuleKey) -> String {
    let mut out = String::new();
    rule_joined(
        &mut out,
        &key.domain,
        key.path.as_deref().map(|p| (p, None)),
        key.param.as_deref(),
        key.value.as_deref(),
    );
    out
}

impl UrlModel {
    /// An empty model (nothing learned).
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one change (or one row read from the tables).
    pub fn apply(&mut self, change: Change) {
        match change {
            Change::Seen {
                key,
                domain,
                path,
                query,
                raw,
            } => {
                self.paths.insert(joined(&[&domain, &path]));
                self.queries.insert(joined(&[&domain, &path, &query]));
                self.seen.insert(key, raw);
            }
            Change::Refetched { key, raw } => {
                if let Some(r) = self.seen.get_mut(&key) {
                    *r = raw;
                }
            }
            Change::Param {
                domain,
                path,
                rest,
                param,
                value,
            } => {
                self.params.insert(joined(&[&domain, &path, &rest, &param]));
                let here = self
                    .beside
                    .entry(joined(&[&domain, &path, &rest]))
                    .or_default();
                if !here.iter().any(|(p, v)| *p == param && *v == value) {
                    here.push((param, value));
                }
            }
            Change::Rule { key, probability } => {
                self.rules.insert(key_joined(&key), probability);
            }
        }
    }

    /// The probability that fetching `url` (key `key`, split as `parts`)
    /// brings no new content: when its key was seen, its domain's refetch
    /// rule (fetched as this very URL; with `refetches` false, `None`: a
    /// re-crawl fetches it again) or variant rule (another form of it);
    /// else the highest probability of the rules that apply to it (as
    /// MaybeDont's `get_dupe_prob`: a parameter rule applies when a URL
    /// differing only in that parameter was seen); `None` when no rule
    /// applies.
    pub fn dupe_probability(
        &self,
        url: &str,
        key: &str,
        parts: &UrlParts,
        refetches: bool,
    ) -> Option<f64> {
        let (d, path) = (parts.domain.as_str(), parts.path.as_str());
        // (Every look-up key is written into this one buffer.)
        let mut buf = String::with_capacity(d.len() + path.len() + url.len() + 32);
        if let Some(raw) = self.seen.get(key) {
            if raw == url && !refetches {
                return None;
            }
            // Its domain's refetch rule when fetched as this very URL, else
            // the variant rule (another form of it).
            let rule_path = (raw != url).then_some(("*", None));
            return self
                .rules
                .get(rule_joined(&mut buf, d, rule_path, None, None))
                .copied();
        }
        if !self.paths.contains(joined_into(&mut buf, &[d, path])) {
            // No URL of this path was seen: no rule of the page can apply.
            return None;
        }
        let mut best = Best {
            rules: &self.rules,
            buf,
            found: None,
            domain: d,
            path,
        };
        best.rule(d, Some((path, None)), None, None);
        // Was a URL seen that lacks one of its parameters (removed), or
        // has another value of it (changed)?
        for (param, value) in &parts.query {
            let rest = parts.query_key_without(param);
            let removed = self
                .queries
                .contains(joined_into(&mut best.buf, &[d, path, &rest]));
            let changed = self
                .params
                .contains(joined_into(&mut best.buf, &[d, path, &rest, param]));
            if removed || changed {
                best.param_rules(param, &rest);
            }
            if removed {
                best.value_rules(param, value);
            }
        }
        // Was a URL seen that is this one plus a parameter?
        let query = parts.query_key();
        if let Some(beside) = self
            .beside
            .get(joined_into(&mut best.buf, &[d, path, &query]))
        {
            for (param, value) in beside {
                if parts.get(param).is_some() {
                    continue;
                }
                best.param_rules(param, &query);
                best.value_rules(param, value);
            }
        }
        best.found
    }
}

/// The highest probability of the rules looked up so far for one URL (of
/// `domain` and `path`), each looked up by its text written in `buf`.
struct Best<'m> {
    rules: &'m HashMap<String, f64>,
    buf: String,
    found: Option<f64>,
    domain: &'m str,
    path: &'m str,
}

impl Best<'_> {
    /// One rule, when it exists.
    fn rule(
        &mut self,
        domain: &str,
        path: Option<(&str, Option<&str>)>,
        param: Option<&str>,
        value: Option<&str>,
    ) {
        let text = rule_joined(&mut self.buf, domain, path, param, value);
        if let Some(&p) = self.rules.get(text) {
            self.found = Some(self.found.map_or(p, |b| b.max(p)));
        }
    }

    /// The four rules of a difference in `param` (the URL's query without
    /// it being `rest`).
    fn param_rules(&mut self, param: &str, rest: &str) {
        let (d, path) = (self.domain, self.path);
        self.rule(ANY_DOMAIN, None, Some(param), None);
        self.rule(d, None, Some(param), None);
        self.rule(d, Some((path, None)), Some(param), None);
        self.rule(d, Some((path, Some(rest))), Some(param), None);
    }

    /// The three rules of adding `param=value`.
    fn value_rules(&mut self, param: &str, value: &str) {
        let (d, path) = (self.domain, self.path);
        self.rule(ANY_DOMAIN, None, Some(param), Some(value));
        self.rule(d, None, Some(param), Some(value));
        self.rule(d, Some((path, None)), Some(param), Some(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::url_rules::{refetch_rule, variant_rule};

    #[test]
    fn rule_texts_are_one_per_key() {
        let keys = [
            RuleKey::new("a", None, None, None),
            RuleKey::new("a", Some(""), None, None),
            RuleKey::new("a", Some("-"), None, None),
            RuleKey::new("a", None, Some(""), None),
            RuleKey::new("a", None, None, Some("")),
            RuleKey::new("a", Some("/p"), Some("x"), None),
            RuleKey::new("a", Some("/p"), None, Some("x")),
            RuleKey::new("a", Some("/p?x"), None, None),
            RuleKey::new("a", Some("/p"), Some("?x"), None),
            RuleKey::new("a-", None, None, None),
            RuleKey::new("1:a", None, None, None),
        ];
        let texts: HashSet<String> = keys.iter().map(key_joined).collect();
        assert_eq!(texts.len(), keys.len());
        // A path-and-query key as the learner writes it (`{path}?{rest}`)
        // is the one a prediction looks up.
        let mut buf = String::new();
        assert_eq!(
            rule_joined(&mut buf, "a", Some(("/p", Some("id=1"))), Some("s"), None),
            key_joined(&RuleKey::new("a", Some("/p?id=1"), Some("s"), None))
        );
    }

    fn seen(model: &mut UrlModel, url: &str) {
        let parts = UrlParts::parse(url).unwrap();
        model.apply(Change::Seen {
            key: parts.key(),
            domain: parts.domain.clone(),
            path: parts.path.clone(),
            query: parts.query_key(),
            raw: url.to_string(),
        });
        for (param, value) in &parts.query {
            model.apply(Change::Param {
                domain: parts.domain.clone(),
                path: parts.path.clone(),
                rest: parts.query_key_without(param),
                param: param.clone(),
                value: value.clone(),
            });
        }
    }

    fn predict(model: &UrlModel, url: &str) -> Option<f64> {
        let parts = UrlParts::parse(url).unwrap();
        model.dupe_probability(url, &parts.key(), &parts, true)
    }

    #[test]
    fn each_kind_of_rule_applies_on_its_own() {
        // A URL seen, then one that adds s=x to it: each of the seven
        // parameter and value rules, alone in the model, is its prediction.
        let d = "a.example";
        let kinds = [
            RuleKey::new(ANY_DOMAIN, None, Some("s"), None),
            RuleKey::new(d, None, Some("s"), None),
            RuleKey::new(d, Some("/p"), Some("s"), None),
            RuleKey::new(d, Some("/p?id=1"), Some("s"), None),
            RuleKey::new(ANY_DOMAIN, None, Some("s"), Some("x")),
            RuleKey::new(d, None, Some("s"), Some("x")),
            RuleKey::new(d, Some("/p"), Some("s"), Some("x")),
        ];
        for key in kinds {
            let mut m = UrlModel::new();
            seen(&mut m, "https://a.example/p?id=1");
            m.apply(Change::Rule {
                key: key.clone(),
                probability: 0.7,
            });
            assert_eq!(
                predict(&m, "https://a.example/p?id=1&s=x"),
                Some(0.7),
                "{key:?}"
            );
            // (Another id: nothing seen differs from it in s alone.)
            assert_eq!(predict(&m, "https://a.example/p?id=2&s=x"), None, "{key:?}");
        }
        // The other way: a URL seen with s=x, then one without it (the
        // path-and-query rule of its rest, the empty query here).
        let mut m = UrlModel::new();
        seen(&mut m, "https://a.example/p?s=x");
        m.apply(Change::Rule {
            key: RuleKey::new(d, Some("/p?"), Some("s"), None),
            probability: 0.6,
        });
        assert_eq!(predict(&m, "https://a.example/p"), Some(0.6));
    }

    #[test]
    fn a_refetch_and_a_variant_read_their_domain_rules() {
        let mut m = UrlModel::new();
        seen(&mut m, "https://a.example/p?x=1");
        m.apply(Change::Rule {
            key: refetch_rule("a.example"),
            probability: 0.25,
        });
        assert_eq!(predict(&m, "https://a.example/p?x=1"), Some(0.25));
        // Another form of the same key: the variant rule, not learned yet.
        assert_eq!(predict(&m, "http://a.example/p?x=1"), None);
        m.apply(Change::Rule {
            key: variant_rule("a.example"),
            probability: 0.5,
        });
        assert_eq!(predict(&m, "http://a.example/p?x=1"), Some(0.5));
        m.apply(Change::Refetched {
            key: "a.example/p?x=1".into(),
            raw: "http://a.example/p?x=1".into(),
        });
        assert_eq!(predict(&m, "http://a.example/p?x=1"), Some(0.25));
    }

    #[test]
    fn parameter_rules_apply_only_beside_a_seen_url() {
        let mut m = UrlModel::new();
        seen(&mut m, "https://a.example/p?id=1");
        m.apply(Change::Rule {
            key: RuleKey::new("a.example", None, Some("s"), None),
            probability: 0.99,
        });
        m.apply(Change::Rule {
            key: RuleKey::new("a.example", Some("/p"), None, None),
            probability: 0.1,
        });
        // Adding s to a seen URL: the rule of s applies, the highest wins.
        assert_eq!(predict(&m, "https://a.example/p?id=1&s=x"), Some(0.99));
        // Nothing seen differs from it in s alone: only the path rule.
        assert_eq!(predict(&m, "https://a.example/p?id=2&s=x"), Some(0.1));
        // Another path: nothing applies.
        assert_eq!(predict(&m, "https://a.example/q?id=1&s=x"), None);
        // A seen URL plus a parameter it lacks (this URL minus s was seen).
        seen(&mut m, "https://a.example/p?id=3&s=y");
        assert_eq!(predict(&m, "https://a.example/p?id=3"), Some(0.99));
    }
}
