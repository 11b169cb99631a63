//! What a run reads beside its table, each written into temp tables before
//! the phases run: another database's pages ([`against`]: opened once,
//! compared through its index or copied), the `prefer` setting's ranks
//! ([`prefer`]) and the hosts' answers of a `fix_urls` probe
//! ([`url_fixes`]).

pub mod against;
pub mod prefer;
pub mod url_fixes;
