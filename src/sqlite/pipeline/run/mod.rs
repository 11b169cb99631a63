//! One run, in the order it runs: [`plan`] (phases 1–6 into temp tables),
//! [`apply`] (archive, delete, rewrite, record) inside the one transaction
//! (`crate::sqlite::ground::atomic`), the
//! [`report`]; [`restore`] undoes the latest run; [`similar`] plans the next
//! run for one page (its table-valued form: [`similar_table`]). [`locate`] names the row a
//! write was refused on; [`progress`] tells a display how far a run is;
//! [`kept_apart`] is phase 6's aggregate. A run's other inputs: another
//! database's pages ([`against`]; against its index, planned there:
//! [`against_index`]) and the hosts' probed answers
//! ([`url_fixes`]). A run made elsewhere: phase 1 of a batch of Arrow
//! columns ([`phase1_arrow`]).

pub mod against;
pub mod against_index;
pub mod apply;
pub mod kept_apart;
pub mod locate;
pub mod phase1_arrow;
pub mod plan;
pub mod prefer;
pub mod progress;
pub mod report;
pub mod restore;
pub mod similar;
pub mod similar_table;
pub mod url_fixes;
