//! `dedup_version()`, `dedup_debug()`, `dedup_phases()` and
//! `dedup_error_codes()`.

use rusqlite::{Connection, Result};

use crate::sqlite::ground::arguments::PURE;

/// The oldest SQLite the extension loads into (the API level of its
/// bindings); older hosts refuse the load with an error message.
pub const MIN_SQLITE_VERSION: &str = "3.34.1";

/// The crate version, e.g. `v0.2.0`.
pub fn version() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

/// Build details: version, target, profile, and the SQLite library the
/// extension runs in.
pub fn debug_info(sqlite_version: &str) -> String {
    format!(
        "Version: {}\nTarget: {}-{}\nProfile: {}\nSQLite: {} (minimum {})",
        version(),
        std::env::consts::ARCH,
        std::env::consts::OS,
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        sqlite_version,
        MIN_SQLITE_VERSION,
    )
}

/// The phases as JSON, in the run's order: `[{"phase": 1, "name": ...,
/// "reason": ...}, ...]` (`reason` null where each removal says its own).
pub fn phases_json() -> String {
    use crate::core::phase::Phase;
    use crate::sqlite::ground::json::json_string;
    let phases: Vec<String> = Phase::ALL
        .iter()
        .map(|p| {
            format!(
                "{{\"phase\": {}, \"name\": {}, \"reason\": {}}}",
                p.number(),
                json_string(p.name()),
                p.reason().map_or("null".to_string(), json_string)
            )
        })
        .collect();
    format!("[{}]", phases.join(", "))
}

/// Every error code with its meaning, as a JSON array of
/// `{"code", "meaning"}`: the codes a caller maps (`<function>[<code>]: …`).
pub fn error_codes_json() -> String {
    use crate::sqlite::ground::error::Code;
    let rows: Vec<String> = Code::ALL
        .iter()
        .map(|c| {
            format!(
                "{{\"code\": \"{}\", \"meaning\": \"{}\"}}",
                c.as_str(),
                c.meaning()
            )
        })
        .collect();
    format!("[{}]", rows.join(", "))
}

/// Registers `dedup_version()`, `dedup_debug()`, `dedup_phases()` and
/// `dedup_error_codes()`.
pub fn register(db: &Connection) -> Result<()> {
    db.create_scalar_function("dedup_version", 0, PURE, |_| Ok(version()))?;
    db.create_scalar_function("dedup_debug", 0, PURE, |_| {
        Ok(debug_info(rusqlite::version()))
    })?;
    db.create_scalar_function("dedup_phases", 0, PURE, |_| Ok(phases_json()))?;
    db.create_scalar_function("dedup_error_codes", 0, PURE, |_| Ok(error_codes_json()))?;
    Ok(())
}
