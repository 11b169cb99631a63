//! The URL learner (MaybeDont's rules, crawler side): [`functions`] (the
//! SQL functions `dedup_learn_url_rules`, `dupe_probability`,
//! `url_rule_params`) over [`learn`] (a batch of fetched pages learned
//! from), [`model`] (the learned model a connection holds), [`memory`]
//! (what the learner keeps between calls), [`state`] (the model's tables),
//! [`chrome`] (the segments a site repeats) and [`drop_rules`] (the rules a
//! run's `url_rules` setting applies).

pub mod chrome;
pub mod drop_rules;
pub mod functions;
pub mod learn;
pub mod memory;
pub mod model;
pub mod state;
