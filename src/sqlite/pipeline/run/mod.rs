//! One run, in the order it runs: [`plan`] (phases 1–6 into temp tables),
//! [`apply`] (archive, delete, rewrite, record) inside the one transaction
//! (`crate::sqlite::ground::atomic`), the
//! [`report`], or instead of the apply, [`label`] (every row's cluster,
//! nothing deleted); [`restore`] undoes the latest run; [`similar`] plans the next
//! run for one page (its table-valued form: [`similar_table`]). [`locate`] names the row a
//! write was refused on; [`progress`] tells a display how far a run is;
//! [`kept_apart`] is phase 6's aggregate; [`paragraphs`] the step after
//! it that cuts shared paragraphs (`paragraphs = 'dedup'`). The run's inputs beside its table
//! are the room below (`crate::sqlite::pipeline::inputs`), a run made
//! elsewhere the one below that (`crate::sqlite::pipeline::external`).

pub mod apply;
pub mod kept_apart;
pub mod label;
pub mod locate;
pub mod paragraphs;
pub mod plan;
pub mod progress;
pub mod report;
pub mod restore;
pub mod similar;
pub mod similar_table;
