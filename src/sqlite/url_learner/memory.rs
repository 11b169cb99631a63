//! What a connection's URL-rule learner remembers from one
//! `dedup_learn_url_rules()` call to the next: the URLs seen on each path
//! (as the batch compares with them), the chrome segments' pages, and the
//! rules' counts. Each is what the model's tables hold for those keys when
//! the call ends, so the next call reads its keys from memory, not SQL.
//!
//! The memory is stamped with the version (`dedup_url_state`'s `version`)
//! its batch wrote, and is used only when the tables still carry that
//! stamp: another connection's batch, an edit of `dedup_url_rules` (its
//! triggers) or a rollback of the batch (the older version comes back)
//! each leave another, and the next call starts from the tables again.
//! As for the model `dupe_probability` holds ([`super::model`]), hand
//! edits of `dedup_url_seen` or `dedup_url_segments` are not seen.
//!
//! Apart, it remembers what the batch found of the schema (the pages
//! table's columns, the model's tables and the temp views it reads
//! through), for as long as the schema versions of `main` and `temp` are
//! those the batch left and the batch is known to have committed (the
//! tables carry its stamp): a schema version is a small count that a
//! rollback takes back, and other objects can bring it to the same number.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rusqlite::types::Value;

use super::chrome::SegmentCache;
use super::model::Stamp;
use crate::core::url_rules::{jaccard_at_least, RuleKey, UrlParts};
use crate::sqlite::tables::schema::Source;

/// Estimated Jaccard (word 4-shingles) at which two texts are the same
/// content, as MaybeDont's default.
pub const JACCARD_DUPLICATE: f64 = 0.9;

/// Seen URLs kept between calls (about 700 bytes each), over all paths.
/// With the two limits below, a connection keeps at most about 35 MB.
const MAX_SEEN: usize = 20_000;
/// Chrome segments kept between calls.
const MAX_SEGMENTS: usize = 100_000;
/// Rules' counts kept between calls.
const MAX_RULES: usize = 50_000;

/// One URL the learner has seen, as `dedup_url_seen` keeps it.
pub struct Seen {
    /// Its domain, path and query.
    pub parts: UrlParts,
    /// Its text's hash.
    pub content_hash: Option<String>,
    /// The duplicate group of an earlier run it was in.
    pub grp: Option<i64>,
    /// The low 16 bits of its text's MinHash values.
    pub signature: Option<Vec<u16>>,
}

impl Seen {
    /// Whether two seen URLs brought the same content: one hash, one
    /// duplicate group of an earlier run, or MinHash Jaccard at least 0.9.
    pub fn same_content(&self, other: &Seen) -> bool {
        if let (Some(a), Some(b)) = (&self.content_hash, &other.content_hash) {
            if a == b {
                return true;
            }
        }
        if let (Some(a), Some(b)) = (self.grp, other.grp) {
            if a == b {
                return true;
            }
        }
        match (&self.signature, &other.signature) {
            (Some(a), Some(b)) => jaccard_at_least(a, b, JACCARD_DUPLICATE),
            _ => false,
        }
    }
}

/// The URLs seen on one domain and path, most recent last, as a batch
/// compares with them (the most recent `MAX_COMPARED` of the path, or
/// more).
pub type PathCache = HashMap<(String, String), Vec<Seen>>;

/// A rule's row in `dedup_url_rules`: rowid, observations, duplicates.
pub type RuleRow = (i64, i64, i64);

/// What the learner remembers (see the module's documentation).
#[derive(Default)]
pub struct LearnerMemory {
    /// The seen URLs of the paths read so far.
    pub paths: PathCache,
    /// The chrome segments read so far ([`super::chrome`]).
    pub segments: SegmentCache,
    /// The rules read or written so far.
    pub rules: HashMap<RuleKey, RuleRow>,
}

/// The schema as a batch checked (and completed) it: the pages table
/// `table` as [`Source`] found it, at `main`'s and `temp`'s schema
/// versions `versions`.
#[derive(Clone)]
pub struct SchemaSeen {
    /// `PRAGMA main.schema_version` and `PRAGMA temp.schema_version`.
    pub versions: (i64, i64),
    /// The stamp the batch wrote.
    pub stamp: Stamp,
    /// The `table` setting it was checked for.
    pub table: String,
    /// The table as inspected.
    pub source: Source,
}

/// A connection's memory, with the stamp of the batch that left it, and
/// the schema that batch saw.
#[derive(Clone, Default)]
pub struct MemoryCache {
    memory: Arc<Mutex<Option<(Stamp, LearnerMemory)>>>,
    schema: Arc<Mutex<Option<SchemaSeen>>>,
}

impl MemoryCache {
    /// The memory when the tables carry its stamp `now`, else an empty one
    /// (the memory is taken: a call that fails leaves none).
    pub fn take(&self, now: &Stamp) -> LearnerMemory {
        let Ok(mut held) = self.memory.lock() else {
            return LearnerMemory::default();
        };
        match held.take() {
            Some((stamp, memory)) if stamp == *now && *now != Value::Null => memory,
            _ => LearnerMemory::default(),
        }
    }

    /// Keeps `memory` as the tables are at `stamp` (after the batch's
    /// transaction ended well), less what exceeds the limits.
    pub fn keep(&self, stamp: Stamp, mut memory: LearnerMemory) {
        if memory.paths.values().map(Vec::len).sum::<usize>() > MAX_SEEN {
            memory.paths.clear();
        }
        if memory.segments.len() > MAX_SEGMENTS {
            memory.segments.clear();
        }
        if memory.rules.len() > MAX_RULES {
            memory.rules.clear();
        }
        if let Ok(mut held) = self.memory.lock() {
            *held = Some((stamp, memory));
        }
    }

    /// What the last batch found of the schema, when the schema versions
    /// are still `versions` (the caller then checks its stamp: see the
    /// module's documentation).
    pub fn schema(&self, versions: (i64, i64), table: &str) -> Option<SchemaSeen> {
        let held = self.schema.lock().ok()?;
        held.as_ref()
            .filter(|s| s.versions == versions && s.table == table)
            .cloned()
    }

    /// Keeps the schema a batch saw (after its transaction ended well).
    pub fn keep_schema(&self, seen: SchemaSeen) {
        if let Ok(mut held) = self.schema.lock() {
            *held = Some(seen);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(url: &str) -> Seen {
        Seen {
            parts: UrlParts::parse(url).expect("a URL"),
            content_hash: None,
            grp: None,
            signature: None,
        }
    }

    fn memory(seen_urls: usize) -> LearnerMemory {
        let mut m = LearnerMemory::default();
        m.paths.insert(
            ("a.example".into(), "/p".into()),
            (0..seen_urls)
                .map(|i| seen(&format!("https://a.example/p?id={i}")))
                .collect(),
        );
        m.rules
            .insert(RuleKey::new("a.example", None, None, None), (1, 2, 3));
        m
    }

    #[test]
    fn the_memory_is_used_only_at_its_own_stamp_and_once() {
        let cache = MemoryCache::default();
        cache.keep(Value::Integer(7), memory(3));
        // Another stamp: the tables changed since; nothing is remembered.
        assert!(cache.take(&Value::Integer(8)).rules.is_empty());
        // (Taken: gone, even at its stamp.)
        assert!(cache.take(&Value::Integer(7)).rules.is_empty());
        cache.keep(Value::Integer(7), memory(3));
        let m = cache.take(&Value::Integer(7));
        assert_eq!(m.paths.values().map(Vec::len).sum::<usize>(), 3);
        assert_eq!(m.rules.values().copied().collect::<Vec<_>>(), [(1, 2, 3)]);
        assert!(cache.take(&Value::Integer(7)).paths.is_empty());
        // Tables without a version are never taken as known.
        cache.keep(Value::Null, memory(3));
        assert!(cache.take(&Value::Null).rules.is_empty());
    }

    #[test]
    fn seen_urls_past_the_limit_are_forgotten_not_the_rest() {
        let cache = MemoryCache::default();
        cache.keep(Value::Integer(1), memory(MAX_SEEN + 1));
        let m = cache.take(&Value::Integer(1));
        assert!(m.paths.is_empty());
        assert_eq!(m.rules.len(), 1);
        cache.keep(Value::Integer(2), memory(MAX_SEEN));
        assert_eq!(cache.take(&Value::Integer(2)).paths.len(), 1);
    }

    #[test]
    fn same_content_by_hash_group_or_signature() {
        let (mut a, mut b) = (seen("https://a.example/p"), seen("https://a.example/q"));
        assert!(!a.same_content(&b));
        a.grp = Some(4);
        b.grp = Some(4);
        assert!(a.same_content(&b));
        b.grp = Some(5);
        a.signature = Some(vec![1; 100]);
        b.signature = Some([vec![1; 95], vec![2; 5]].concat());
        assert!(a.same_content(&b));
        b.signature = Some([vec![1; 85], vec![2; 15]].concat());
        assert!(!a.same_content(&b));
        b.content_hash = Some("h".into());
        a.content_hash = Some("h".into());
        assert!(a.same_content(&b));
    }
}
