//! Redis-backed stores for the toolwire server SDK, so that several
//! `toolwire serve` instances behind one load balancer share their state:
//!
//! * [`RedisRateLimits`] ([`RateLimitStore`](toolwire_server::RateLimitStore)):
//!   a limit of N per minute holds across every instance; one round trip
//!   per check.
//!
//! It takes a [`RedisConnection`] from [`RedisConfig::connect`]
//! (`redis://` or `rediss://`; it reconnects by itself) and works on Valkey
//! too. This crate connects to one server (or a proxy): cluster
//! connections are not implemented yet.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use toolwire_redis::{FailMode, RedisConfig, RedisRateLimits};
//! use toolwire_server::{RateLimit, Server};
//!
//! let redis = RedisConfig::new("redis://127.0.0.1:6379")
//!     .key_prefix("shop:")
//!     .connect()
//!     .await?;
//! let limits = RedisRateLimits::new(redis.clone()).fail_mode(FailMode::Open);
//! let server = Server::builder("shop", "1.0.0")
//!     .rate_limit_store(Arc::new(limits))
//!     .tool_call_limit(RateLimit::per_minute(600))
//!     .build()?;
//! # drop(server);
//! # Ok(())
//! # }
//! ```
//!
//! # Keys
//!
//! Every key starts with the prefix (default `toolwire:`, no braces).
//!
//! | key | type | holds | expires |
//! | --- | --- | --- | --- |
//! | `{prefix}rl:KEY` | string | a GCRA bucket's theoretical arrival time (µs, Redis clock) | when the bucket is full again |
//!
//! # Round trips
//!
//! | call | Redis round trips |
//! | --- | --- |
//! | rate-limit check | 1 (`EVALSHA`) |
//!
//! A script unknown to the server (first use, or after a restart) costs one
//! `SCRIPT LOAD` more, once.
//!
//! # When Redis is unreachable
//!
//! Each command is bounded by [`RedisConfig::command_timeout`] (default
//! 1 s). Rate limits then follow their [`FailMode`] (default
//! [`FailMode::Closed`]: refused with a retry of 1 s; [`FailMode::Open`]:
//! allowed), logged once per outage.
//! Once Redis answers again, everything goes back to it by itself.

mod connection;
mod keys;
mod rate_limit;

pub use connection::{
    ConnectError, DEFAULT_COMMAND_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_KEY_PREFIX,
    RedisConfig, RedisConnection,
};
pub use rate_limit::{CLOSED_RETRY, FailMode, RedisRateLimits};
