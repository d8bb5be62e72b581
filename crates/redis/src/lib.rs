//! Redis-backed stores for the toolwire server SDK, so that several
//! `toolwire serve` instances behind one load balancer share their state:
//!
//! * [`RedisRateLimits`] ([`RateLimitStore`](toolwire_server::RateLimitStore)):
//!   a limit of N per minute holds across every instance; one round trip
//!   per check.
//! * [`RedisHandles`] ([`HandleStore`](toolwire_server::HandleStore)): a
//!   handle created on one instance is used and removed on any other, with
//!   the in-memory store's guarantees (owner binding, idle expiry, a cap
//!   per owner, atomic read-modify-write).
//! * [`RedisChangeFeed`] ([`ChangeFeed`](toolwire_server::ChangeFeed)):
//!   `list_changed` and `resources/updated` raised on one instance reach
//!   the listeners of every instance (Redis pub/sub).
//! * [`RedisSessionStore`] ([`SessionStore`](toolwire_server::SessionStore)):
//!   a legacy (2025-11-25) HTTP session opened on one instance is served by
//!   any, answers to its server→client requests find the waiting instance,
//!   `DELETE` and expiry hold everywhere.
//! * [`RedisTaskStore`] ([`TaskStore`](toolwire_server::TaskStore)): the
//!   Tasks extension's table, so that `tasks/get`, `tasks/update` and
//!   `tasks/cancel` work on any instance, a `subscriptions/listen` stream
//!   on any instance hears the `notifications/tasks` of a task running on
//!   another (changes travel over pub/sub), the per-principal cap holds
//!   across all, and a task whose worker's instance died ends `failed`
//!   once its lease runs out.
//! * [`RedisFlag`]: a named on/off switch that any instance toggles
//!   atomically (one round trip) and every instance watches, caught up
//!   after an outage.
//!
//! All take a [`RedisConnection`] from [`RedisConfig::connect`]
//! (`redis://` or `rediss://`; it reconnects by itself) and work on Valkey
//! too. [`RedisConfig::cluster`] connects to a Redis Cluster instead: every
//! multi-key script touches keys of one hash tag, so each runs on the node
//! holding that slot.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use toolwire_redis::{FailMode, RedisConfig, RedisHandles, RedisRateLimits};
//! use toolwire_server::{Handles, RateLimit, Server};
//!
//! // `connect().await?` waits for Redis; `connect_lazy` connects on first use.
//! let redis = RedisConfig::new("redis://127.0.0.1:6379")
//!     .key_prefix("shop:")
//!     .connect_lazy()?;
//! let baskets: Handles<Vec<String>> = Handles::new("bsk", "basket")
//!     .store(Arc::new(RedisHandles::new(redis.clone(), "baskets")));
//! let limits = RedisRateLimits::new(redis.clone()).fail_mode(FailMode::Open);
//! let server = Server::builder("shop", "1.0.0")
//!     .rate_limit_store(Arc::new(limits))
//!     .tool_call_limit(RateLimit::per_minute(600))
//!     .build()?;
//! # drop((baskets, server));
//! # Ok(())
//! # }
//! ```
//!
//! # Keys
//!
//! Every key starts with the prefix (default `toolwire:`, no braces).
//! OWNER is the principal's key and STORE the [`RedisHandles`] name, both
//! escaped (`%`, `{`, `}` and `:` as `%25`, `%7B`, `%7D`, `%3A`).
//!
//! | key | type | holds | expires |
//! | --- | --- | --- | --- |
//! | `{prefix}rl:KEY` | string | a GCRA bucket's theoretical arrival time (µs, Redis clock) | when the bucket is full again |
//! | `{prefix}h:{o:OWNER}:STORE:id:ID` | hash | `owner`, `value` (JSON), `idle` (ms); `lock`, `lock_until` during a modify | after `idle` without use |
//! | `{prefix}h:{o:OWNER}:STORE:owned` | sorted set | the owner's handle ids, scored by expiry (ms) | after its last member |
//! | `{prefix}task:{o:OWNER}:id:ID` | hash | `record` (the task as JSON); `lock`, `lock_until` during an update | `ttlMs` + 10 min after creation |
//! | `{prefix}task:{o:OWNER}:live` | sorted set | the owner's unfinished task ids, scored by the last ms each counts | after its last member |
//!
//! `{o:OWNER}` is the hash tag: a handle and its owner's set are in one
//! cluster slot, and the owners spread over the slots.
//!
//! # Round trips
//!
//! | call | Redis round trips |
//! | --- | --- |
//! | rate-limit check | 1 (`EVALSHA`) |
//! | handle insert, remove | 1 |
//! | handle modify | 2 (lock and read; write and unlock), more only while another modify holds the handle |
//! | task create, get | 1 |
//! | task update (and a get that settles a lapsed lease) | 2, as a handle modify |
//!
//! A script unknown to the server (first use, or after a restart) costs one
//! `SCRIPT LOAD` more, once.
//!
//! # When Redis is unreachable
//!
//! Each command is bounded by [`RedisConfig::command_timeout`] (default
//! 1 s). Rate limits then follow their [`FailMode`] (default
//! [`FailMode::Closed`]: refused with a retry of 1 s; [`FailMode::Open`]:
//! allowed), logged once per outage. Handle stores always fail closed:
//! [`HandleStoreError::Unavailable`](toolwire_server::HandleStoreError::Unavailable),
//! which a tool reports as "The server could not reach its state store".
//! Once Redis answers again, everything goes back to it by itself.
//!
//! # Change feed
//!
//! [`RedisChangeFeed`] publishes on the pub/sub channel `{prefix}changes`
//! small JSON messages: `{"from":"<instance id>","change":"tools"}`
//! (`"prompts"`, `"resources"`, or `"lists"` for all three) and
//! `{"from":"<instance id>","change":"resource","uri":"<uri>"}`; an
//! instance skips its own, and ignores anything else. Publishing never
//! waits for Redis: local listeners hear a change at once, other instances
//! a round trip later. While Redis is unreachable, changes reach the local
//! listeners only (one warning per outage); once subscribed again (retries
//! from 100 ms doubling to 5 s), an instance tells its listeners, and asks
//! the others to tell theirs, that every list changed, so that clients
//! re-list. Resource updates missed during an outage are lost.
#![warn(missing_docs)]

macro_rules! handle_script {
    ($file:literal) => {
        std::sync::LazyLock::new(|| {
            redis::Script::new(concat!(include_str!("lua/common.lua"), include_str!($file)))
        })
    };
}

mod backend;
mod change_feed;
mod connection;
mod flag;
mod handles;
mod keys;
mod lock;
mod rate_limit;
mod sessions;
mod subscriber;
mod tasks;

pub use change_feed::RedisChangeFeed;
pub use connection::{
    ConnectError, DEFAULT_COMMAND_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_KEY_PREFIX,
    RedisConfig, RedisConnection,
};
pub use flag::{FlagError, RedisFlag};
pub use handles::RedisHandles;
pub use rate_limit::{CLOSED_RETRY, FailMode, RedisRateLimits};
pub use sessions::RedisSessionStore;
pub use tasks::{EXPIRED_KEPT, RedisTaskStore};
