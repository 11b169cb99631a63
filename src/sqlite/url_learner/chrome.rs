//! The URL-rule learner's memory of each site's chrome
//! (`dedup_url_segments`): for every segment of a domain, the distinct
//! pages it was seen on ([`crate::core::chrome_pages`]), so that "same
//! content" is decided on the text without the lines the site repeats on
//! pages of other titles.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension, Result, Statement};

use crate::core::chrome_pages::{page_key, without_chrome_found, SeenOn};
use crate::core::segments::{segment_hash, segments};

/// The table: one row per (domain, segment), keyed by the XOR of their
/// hashes.
pub const SCHEMA: &str =
    "CREATE TABLE IF NOT EXISTS main.dedup_url_segments (key INTEGER PRIMARY KEY, pages BLOB NOT NULL);";

/// Segments held in memory before the changed ones are written out.
const CACHED: usize = 1 << 20;

/// Segments by key, each with whether it changed since it was written.
pub type SegmentCache = HashMap<i64, (SeenOn, bool)>;

/// The segments read or changed in this call.
pub struct ChromeMemory<'c> {
    find: Statement<'c>,
    put: Statement<'c>,
    cache: SegmentCache,
    /// The keys whose segments changed since they were written.
    changed: Vec<i64>,
}

impl<'c> ChromeMemory<'c> {
    /// A memory over `db`'s `dedup_url_segments` (which must exist),
    /// starting from `cache` (segments as the table holds them).
    pub fn new(db: &'c Connection, cache: SegmentCache) -> Result<ChromeMemory<'c>> {
        Ok(ChromeMemory {
            find: db.prepare("SELECT pages FROM main.dedup_url_segments WHERE key = ?1")?,
            put: db.prepare(
                "INSERT OR REPLACE INTO main.dedup_url_segments (key, pages) VALUES (?1, ?2)",
            )?,
            cache,
            changed: Vec::new(),
        })
    }

    /// The segments held, once the changed ones are written.
    pub fn into_cache(mut self) -> Result<SegmentCache> {
        self.save()?;
        Ok(self.cache)
    }

    /// Counts the page's segments, then returns its text without the
    /// domain's chrome (`None` when nothing or everything is chrome).
    pub fn strip(&mut self, domain: &str, title: &str, text: &str) -> Result<Option<String>> {
        if self.cache.len() > CACHED {
            self.save()?;
            self.cache.clear();
        }
        let site = segment_hash(domain);
        let page = page_key(title, text);
        let found: Vec<_> = segments(text).collect();
        for s in &found {
            let key = site ^ s.hash;
            if !self.cache.contains_key(&key) {
                let stored: Option<Vec<u8>> =
                    self.find.query_row([key], |r| r.get(0)).optional()?;
                let seen = stored.map_or_else(SeenOn::default, |b: Vec<u8>| SeenOn::from_blob(&b));
                self.cache.insert(key, (seen, false));
            }
            let entry = self.cache.get_mut(&key).expect("just inserted");
            if entry.0.note(page) && !entry.1 {
                entry.1 = true;
                self.changed.push(key);
            }
        }
        Ok(without_chrome_found(&found, |h| {
            self.cache
                .get(&(site ^ h))
                .is_some_and(|(seen, _)| seen.is_chrome())
        }))
    }

    /// Writes the changed segments.
    pub fn save(&mut self) -> Result<()> {
        for key in self.changed.drain(..) {
            if let Some((seen, changed)) = self.cache.get_mut(&key) {
                if *changed {
                    self.put.execute(params![key, seen.to_blob()])?;
                    *changed = false;
                }
            }
        }
        Ok(())
    }
}
