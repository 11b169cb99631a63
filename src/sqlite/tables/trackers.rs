//! The extension's triggers, as it creates them and as SQLite keeps them:
//! the change log's three on the pages table (`dedup_track_insert`,
//! `_update`, `_delete`, which write rowids into `dedup_changes`) and the
//! trackers of its own tables (which mark `dedup_index_state` when a user
//! edits what an incremental run reads). Data and the statements made from
//! it, so that the check of a user's triggers ([`super::own_tables`]) and
//! the change log ([`crate::sqlite::pipeline::incremental::changes`]) name
//! the same triggers.

use crate::sqlite::tables::schema::quote_ident;

/// The triggers: (name, event, the rowids they log; `{r}` is the rowid's
/// name).
pub const TRACKERS: [(&str, &str, &str); 3] = [
    ("dedup_track_insert", "INSERT", "(new.{r})"),
    ("dedup_track_update", "UPDATE", "(old.{r}), (new.{r})"),
    ("dedup_track_delete", "DELETE", "(old.{r})"),
];

/// The trackers of the extension's own tables that an incremental run
/// reads as the last run left them, and a user may edit between runs:
/// (name, table, when it fires, the key it sets in `dedup_index_state`).
/// A row of `dedup_removed` that keeps a window slot (phases 4 and 5: the
/// index's scan order holds its slot as a placeholder) added, changed or
/// deleted outside a run (a purge of the archive) changes what a full run
/// compares; an edit of `dedup_domains` changes the counts phase 5 of an
/// incremental run starts from; a deleted or changed row of the change log
/// (`dedup_changes`) or an edit of the index and its scan order makes an
/// incremental run blind to what changed. Each makes the next run full.
pub const OWN_TRACKERS: [(&str, &str, &str, &str); 17] = [
    (
        "dedup_track_archive_insert",
        "dedup_removed",
        "AFTER INSERT ON \"dedup_removed\" WHEN new.dedup_phase IN (4, 5)",
        "archive",
    ),
    (
        "dedup_track_archive_update",
        "dedup_removed",
        "AFTER UPDATE ON \"dedup_removed\" WHEN old.dedup_phase IN (4, 5) OR new.dedup_phase IN (4, 5)",
        "archive",
    ),
    (
        "dedup_track_archive_delete",
        "dedup_removed",
        "AFTER DELETE ON \"dedup_removed\" WHEN old.dedup_phase IN (4, 5)",
        "archive",
    ),
    (
        "dedup_track_domains_insert",
        "dedup_domains",
        "AFTER INSERT ON \"dedup_domains\"",
        "domains",
    ),
    (
        "dedup_track_domains_update",
        "dedup_domains",
        "AFTER UPDATE ON \"dedup_domains\"",
        "domains",
    ),
    (
        "dedup_track_domains_delete",
        "dedup_domains",
        "AFTER DELETE ON \"dedup_domains\"",
        "domains",
    ),
    (
        "dedup_track_changes_update",
        "dedup_changes",
        "AFTER UPDATE ON \"dedup_changes\"",
        "index",
    ),
    (
        "dedup_track_changes_delete",
        "dedup_changes",
        "AFTER DELETE ON \"dedup_changes\"",
        "index",
    ),
    (
        "dedup_track_index_insert",
        "dedup_index",
        "AFTER INSERT ON \"dedup_index\"",
        "index",
    ),
    (
        "dedup_track_index_update",
        "dedup_index",
        "AFTER UPDATE ON \"dedup_index\"",
        "index",
    ),
    (
        "dedup_track_index_delete",
        "dedup_index",
        "AFTER DELETE ON \"dedup_index\"",
        "index",
    ),
    (
        "dedup_track_paragraphs_insert",
        "dedup_index_paragraphs",
        "AFTER INSERT ON \"dedup_index_paragraphs\"",
        "index",
    ),
    (
        "dedup_track_paragraphs_update",
        "dedup_index_paragraphs",
        "AFTER UPDATE ON \"dedup_index_paragraphs\"",
        "index",
    ),
    (
        "dedup_track_paragraphs_delete",
        "dedup_index_paragraphs",
        "AFTER DELETE ON \"dedup_index_paragraphs\"",
        "index",
    ),
    (
        "dedup_track_order_insert",
        "dedup_index_order",
        "AFTER INSERT ON \"dedup_index_order\"",
        "index",
    ),
    (
        "dedup_track_order_update",
        "dedup_index_order",
        "AFTER UPDATE ON \"dedup_index_order\"",
        "index",
    ),
    (
        "dedup_track_order_delete",
        "dedup_index_order",
        "AFTER DELETE ON \"dedup_index_order\"",
        "index",
    ),
];

/// The statement that creates an own table's tracker, as SQLite keeps it.
pub fn own_tracker_sql(name: &str, when: &str, key: &str) -> String {
    format!(
        "CREATE TRIGGER {name} {when} BEGIN INSERT OR REPLACE INTO dedup_index_state (key, value) VALUES ('{key}', 'edited'); END"
    )
}

/// The statement that creates tracker `name` on `table`, as SQLite keeps
/// it in `sqlite_schema` (without the `main.` it is created with).
pub fn tracker_sql(name: &str, event: &str, rows: &str, table: &str, rowid: &str) -> String {
    format!(
        "CREATE TRIGGER {name} AFTER {event} ON {} BEGIN INSERT OR IGNORE INTO dedup_changes (rid) VALUES {}; END",
        quote_ident(table),
        rows.replace("{r}", rowid)
    )
}

/// Whether the trigger `name` on `table` with this `sql` is one of ours
/// (for the check that no trigger writes to the extension's tables).
pub fn is_tracker(name: &str, table: &str, sql: &str) -> bool {
    let own = OWN_TRACKERS.iter().any(|(n, on, when, key)| {
        *n == name && *on == table && own_tracker_sql(n, when, key) == sql
    });
    own || TRACKERS.iter().any(|(n, event, rows)| {
        *n == name
            && ["rowid", "_rowid_", "oid"]
                .iter()
                .any(|r| tracker_sql(n, event, rows, table, r) == sql)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tracker_is_recognised_only_as_created() {
        let sql = tracker_sql(
            "dedup_track_update",
            "UPDATE",
            "(old.{r}), (new.{r})",
            "pages",
            "rowid",
        );
        assert_eq!(
            sql,
            "CREATE TRIGGER dedup_track_update AFTER UPDATE ON \"pages\" BEGIN INSERT OR IGNORE INTO dedup_changes (rid) VALUES (old.rowid), (new.rowid); END"
        );
        assert!(is_tracker("dedup_track_update", "pages", &sql));
        assert!(!is_tracker("dedup_track_update", "other", &sql));
        assert!(!is_tracker("dedup_track_insert", "pages", &sql));
        assert!(!is_tracker(
            "dedup_track_update",
            "pages",
            &sql.replace("dedup_changes", "dedup_runs")
        ));
    }

    #[test]
    fn the_archive_trackers_fire_for_the_phases_that_keep_a_slot() {
        let slot = crate::core::phase::Phase::sql_list(&crate::core::phase::Phase::KEEP_SLOT);
        for (name, table, when, _) in OWN_TRACKERS {
            if table == "dedup_removed" {
                assert!(
                    when.contains(&format!("dedup_phase IN {slot}")),
                    "{name}: {when}"
                );
            }
        }
    }

    #[test]
    fn an_own_tables_tracker_is_recognised_only_on_its_table_as_created() {
        let (name, _, when, key) = OWN_TRACKERS[2];
        let sql = own_tracker_sql(name, when, key);
        assert_eq!(
            sql,
            "CREATE TRIGGER dedup_track_archive_delete AFTER DELETE ON \"dedup_removed\" WHEN old.dedup_phase IN (4, 5) BEGIN INSERT OR REPLACE INTO dedup_index_state (key, value) VALUES ('archive', 'edited'); END"
        );
        assert!(is_tracker(name, "dedup_removed", &sql));
        assert!(!is_tracker(name, "pages", &sql));
        assert!(!is_tracker(
            "dedup_track_archive_insert",
            "dedup_removed",
            &sql
        ));
        assert!(!is_tracker(
            name,
            "dedup_removed",
            &sql.replace("'edited'", "'fine'")
        ));
    }
}
