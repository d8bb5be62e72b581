//! Where state that several instances may share lives, each kind behind one
//! small async trait with its in-memory implementation beside it (handles,
//! rate-limit buckets, the list_changed fan-out, legacy session records, tasks): a shared
//! backend (Redis, a database) is one new file implementing the trait.

pub(crate) mod change_feed;
pub(crate) mod handles;
pub(crate) mod rate_limit;
pub(crate) mod sessions;
pub(crate) mod task_record;
pub(crate) mod tasks;
