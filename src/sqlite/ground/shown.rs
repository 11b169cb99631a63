//! How values appear in the runner's messages: quoted as SQL quotes them,
//! cut short, control characters escaped. (Shared by the settings, the
//! table's checks and the runner: a module of its own.)

use rusqlite::types::Value;

/// A value for an error message, as SQL's `quote()` shows it (short).
pub fn describe_value(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Integer(i) => i.to_string(),
        Value::Real(r) => format!("{r:?}"),
        Value::Text(t) => excerpt(t),
        Value::Blob(b) => format!("a blob of {} bytes", b.len()),
    }
}

/// `'text'` quoted as SQL does, cut to 60 characters, control characters
/// escaped.
pub fn excerpt(t: &str) -> String {
    format!("'{}'", truncate(&t.replace('\'', "''"), 60))
}

/// At most `max` characters, control characters escaped (see
/// [`crate::core::text::excerpt`]).
pub fn truncate(t: &str, max: usize) -> String {
    crate::core::text::excerpt(t, max)
}
