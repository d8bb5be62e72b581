//! What a request must pass and what a result must go through: bearer
//! authentication, rate limits, input limits, result sanitising and the
//! audit log.

pub mod audit;
pub mod auth;
pub(crate) mod limits;
pub(crate) mod rate_limit;
pub(crate) mod sanitize;
