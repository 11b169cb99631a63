//! The run's settings as the run keeps them: written to `temp._dedup_run`,
//! the one row every phase script reads (the run, its rows before, each
//! setting [`SETTINGS`] gives a column, and the strict URL options derived
//! from them), and as the JSON `dedup_runs.settings` records.

use crate::sqlite::settings::declared::{Recorded, SETTINGS};
use crate::sqlite::settings::values::Settings;
use rusqlite::types::Value;
use rusqlite::{Connection, Result};

/// Writes `temp._dedup_run`, the one row every phase script reads.
pub fn write_run_row(db: &Connection, s: &Settings, run: i64, rows_before: i64) -> Result<()> {
    let mut columns = vec!["run INTEGER".to_string(), "rows_before INTEGER".to_string()];
    let mut values = vec![Value::Integer(run), Value::Integer(rows_before)];
    for setting in &SETTINGS {
        if let Some(ty) = setting.run_row {
            columns.push(format!("{} {ty}", setting.name));
            values.push((setting.value)(s));
        }
    }
    columns.push("strict_options TEXT".into());
    values.push(s.strict_options().map_or(Value::Null, Value::Text));
    // (The measure as the scans take it: `resemblance 5 the a`.)
    columns.push("measure_spec TEXT".into());
    values.push(Value::Text(s.measure().spec()));
    let marks: Vec<String> = (1..=values.len()).map(|i| format!("?{i}")).collect();
    db.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp._dedup_run;
         CREATE TEMP TABLE _dedup_run ({});",
        columns.join(", ")
    ))?;
    db.execute(
        &format!("INSERT INTO temp._dedup_run VALUES ({})", marks.join(", ")),
        rusqlite::params_from_iter(values),
    )?;
    Ok(())
}

impl Settings {
    /// The settings as a JSON object (recorded in `dedup_runs.settings`):
    /// each setting [`SETTINGS`] records, in its order (built by SQLite's
    /// `json_object`, so that a run's record reads as the runs before it).
    pub fn to_json(&self, db: &Connection) -> Result<String> {
        self.json_of(db, false)
    }

    /// Every setting as the run uses it, as a JSON object in the order of
    /// [`SETTINGS`] (defaults and rules across settings applied), then
    /// `measure_spec`, the measure as the scans take it: what
    /// `dedup_settings_checked()` returns.
    pub fn to_checked_json(&self, db: &Connection) -> Result<String> {
        let all = self.json_of(db, true)?;
        db.query_row(
            "SELECT json_set(?1, '$.measure_spec', ?2)",
            [all, self.measure().spec()],
            |r| r.get(0),
        )
    }

    /// The settings as a JSON object: those recorded, or `all` of them.
    fn json_of(&self, db: &Connection, all: bool) -> Result<String> {
        let defaults = Settings::default();
        let mut terms = Vec::new();
        let mut values: Vec<Value> = Vec::new();
        for setting in &SETTINGS {
            let value = (setting.value)(self);
            let shown = all
                || match setting.recorded {
                    Recorded::Always | Recorded::AsJson => true,
                    Recorded::WhenSet => value != (setting.value)(&defaults),
                    Recorded::Never => false,
                };
            if !shown {
                continue;
            }
            let at = values.len() + 1;
            terms.push(match setting.recorded {
                Recorded::AsJson => format!("?{at}, json(?{})", at + 1),
                _ => format!("?{at}, ?{}", at + 1),
            });
            values.push(Value::Text(setting.name.into()));
            values.push(value);
        }
        db.query_row(
            &format!("SELECT json_object({})", terms.join(", ")),
            rusqlite::params_from_iter(values),
            |r| r.get(0),
        )
    }
}
