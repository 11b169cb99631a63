//! What `dupe_probability` reads of the learned URL rules, held in memory:
//! the URLs seen (by key, with the raw form last fetched), the paths and
//! queries they cover, the parameters seen beside each rest of a query, and
//! each rule's probability. Built from the model's tables once, then kept
//! current by the [`Change`]s a learning batch makes, so a prediction is a
//! few hash lookups (as MaybeDont's in-memory model), not SQL statements.

use std::collections::{HashMap, HashSet};

use super::url_rules::{refetch_rule, variant_rule, RuleKey, UrlParts, ANY_DOMAIN};

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
    /// Each rule's probability.
    rules: HashMap<RuleKey, f64>,
}

/// Strings joined without ambiguity (each prefixed by its length).
fn joined(parts: &[&str]) -> String {
    let mut s = String::with_capacity(parts.iter().map(|p| p.len() + 4).sum());
    for p in parts {
        s.push_str(&p.len().to_string());
        s.push(':');
        s.push_str(p);
    }
    s
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
                self.rules.insert(key, probability);
            }
        }
    }

    /// The probability that fetching `url` (key `key`, split as `parts`)
    /// brings no new content: when its key was seen, its domain's refetch
    /// rule (fetched as this very URL) or variant rule (another form of
    /// it); else the highest probability of the rules that apply to it (as
    /// MaybeDont's `get_dupe_prob`: a parameter rule applies when a URL
    /// differing only in that parameter was seen); `None` when no rule
    /// applies.
    pub fn dupe_probability(&self, url: &str, key: &str, parts: &UrlParts) -> Option<f64> {
        let (d, path) = (parts.domain.as_str(), parts.path.as_str());
        if let Some(raw) = self.seen.get(key) {
            let rule = if raw == url {
                refetch_rule(d)
            } else {
                variant_rule(d)
            };
            return self.rules.get(&rule).copied();
        }
        if !self.paths.contains(&joined(&[d, path])) {
            // No URL of this path was seen: no rule of the page can apply.
            return None;
        }
        let mut keys: Vec<RuleKey> = vec![RuleKey::new(d, Some(path), None, None)];
        let param_keys = |keys: &mut Vec<RuleKey>, param: &str, rest: &str| {
            keys.push(RuleKey::new(ANY_DOMAIN, None, Some(param), None));
            keys.push(RuleKey::new(d, None, Some(param), None));
            keys.push(RuleKey::new(d, Some(path), Some(param), None));
            keys.push(RuleKey::new(
                d,
                Some(&format!("{path}?{rest}")),
                Some(param),
                None,
            ));
        };
        let value_keys = |keys: &mut Vec<RuleKey>, param: &str, value: &str| {
            keys.push(RuleKey::new(ANY_DOMAIN, None, Some(param), Some(value)));
            keys.push(RuleKey::new(d, None, Some(param), Some(value)));
            keys.push(RuleKey::new(d, Some(path), Some(param), Some(value)));
        };
        // Was a URL seen that lacks one of its parameters (removed), or
        // has another value of it (changed)?
        for (param, value) in &parts.query {
            let rest = parts.query_key_without(param);
            let removed = self.queries.contains(&joined(&[d, path, &rest]));
            let changed = self.params.contains(&joined(&[d, path, &rest, param]));
            if removed || changed {
                param_keys(&mut keys, param, &rest);
            }
            if removed {
                value_keys(&mut keys, param, value);
            }
        }
        // Was a URL seen that is this one plus a parameter?
        let query = parts.query_key();
        if let Some(beside) = self.beside.get(&joined(&[d, path, &query])) {
            for (param, value) in beside {
                if parts.get(param).is_some() {
                    continue;
                }
                param_keys(&mut keys, param, &query);
                value_keys(&mut keys, param, value);
            }
        }
        keys.iter()
            .filter_map(|k| self.rules.get(k).copied())
            .fold(None, |best: Option<f64>, p| {
                Some(best.map_or(p, |b| b.max(p)))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        model.dupe_probability(url, &parts.key(), &parts)
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
