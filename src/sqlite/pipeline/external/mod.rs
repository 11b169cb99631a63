//! A run made elsewhere (Spark's shards; the other database of `against`),
//! mirroring `sql/external/`: phase 1's rows handed out as Arrow buffers
//! ([`rows_arrow`], `dedup_rows_arrow`; `01_rows.sql`), phase 1 of a batch
//! of Arrow columns ([`phase1_arrow`]), and the plan read back in
//! ([`plan_in`]: a plan table of `dedup_apply_plan`, or the rows a plan made
//! on another database gave; `06_from_plan.sql`).

pub mod phase1_arrow;
pub mod plan_in;
pub mod rows_arrow;
