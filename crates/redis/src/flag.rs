//! [`RedisFlag`]: a named on/off switch in Redis that every instance reads,
//! flips atomically, and watches.

use std::sync::{Arc, Mutex, PoisonError};

use redis::Script;
use serde::Deserialize;
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::connection::{Failure, RedisConnection};
use crate::keys::escape;
use crate::subscriber::{Listener, listen_for_ever};

/// Reads, sets or toggles the flag hash `KEYS[1]` and, on a change,
/// PUBLISHes its new state on `ARGV[1]`. `ARGV[2]` is `get`, `toggle`,
/// `on` or `off`; `ARGV[3]` the epoch a flag created now gets. Answers
/// `{on (0 or 1), version, epoch}`, or `{-1, 0, TYPE}` when the key holds
/// something else than a hash.
static SCRIPT: std::sync::LazyLock<Script> = std::sync::LazyLock::new(|| {
    Script::new(
        r#"
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'hash' then return {-1, 0, kind} end
local fields = redis.call('HMGET', KEYS[1], 'on', 'version', 'epoch')
local on, version, epoch = fields[1] == '1', tonumber(fields[2]) or 0, fields[3] or ''
local mode = ARGV[2]
local wanted = on
if mode == 'toggle' then wanted = not on elseif mode == 'on' then wanted = true
elseif mode == 'off' then wanted = false end
if mode == 'get' or (wanted == on and epoch ~= '') then
  return {on and 1 or 0, version, epoch}
end
if epoch == '' then epoch = ARGV[3] end
version = version + 1
local bit = wanted and '1' or '0'
redis.call('HSET', KEYS[1], 'on', bit, 'version', version, 'epoch', epoch)
redis.call('PUBLISH', ARGV[1], '{"on":' .. tostring(wanted) .. ',"version":' ..
  version .. ',"epoch":"' .. epoch .. '"}')
return {wanted and 1 or 0, version, epoch}
"#,
    )
});

/// Why a [`RedisFlag`] call failed.
///
/// ```no_run
/// # async fn demo(flag: toolwire_redis::RedisFlag) {
/// use toolwire_redis::FlagError;
/// match flag.toggle().await {
///     Ok(on) => println!("now {on}"),
///     // "Redis at HOST:PORT is unreachable"; the detail is for the log.
///     Err(error @ FlagError::Unavailable { .. }) => eprintln!("{error}; retry in 1 s"),
///     Err(other) => eprintln!("{other}"),
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    /// Redis did not answer within the command timeout, or refused the
    /// command (down, too slow, or refusing the script).
    #[error("Redis at {address} is unreachable")]
    Unavailable {
        /// Host and port (never the password).
        address: String,
        /// What went wrong, for the log.
        detail: String,
    },
    /// The flag's key holds another type than a hash (someone else wrote it).
    #[error("the Redis key {key} holds a {kind}, not a flag")]
    NotAFlag {
        /// The key.
        key: String,
        /// The Redis type found there.
        kind: String,
    },
}

/// Which write a state comes from: versions count the writes of one epoch,
/// and a flag created anew (say, in a Redis restarted empty) gets a new
/// epoch, so that a lower version there still counts as newer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
struct State {
    on: bool,
    version: u64,
    epoch: String,
}

impl State {
    /// True when `self` was written after `older`, or in another epoch.
    fn supersedes(&self, older: &State) -> bool {
        self.epoch != older.epoch || self.version > older.version
    }
}

/// A named boolean in Redis, shared by every instance using the same Redis
/// and key prefix: one instance [toggles](RedisFlag::toggle) it, every
/// instance [watches](RedisFlag::watch) it change.
///
/// The flag is the hash `{prefix}flag:NAME` (`on`, `version`, `epoch`;
/// never expires; absent means off). [`RedisFlag::toggle`] and
/// [`RedisFlag::set`] are one `EVALSHA` each: a Lua script changes the hash
/// and PUBLISHes the new state on the channel `{prefix}flag:NAME`, so
/// concurrent toggles from several instances are applied one after the
/// other and none is lost.
///
/// Each `RedisFlag` keeps the newest state it knows, which
/// [`RedisFlag::current`] answers without a round trip and
/// [`RedisFlag::watch`] reports. A background task subscribes to the
/// channel (retries from 100 ms doubling to 5 s when Redis is unreachable,
/// one warning per outage) and, each time it is subscribed, reads the flag
/// again: a change made while it was not listening is caught up as soon
/// as Redis is back. States are ordered by the version the script writes,
/// so a late message never undoes a newer state.
///
/// While Redis is unreachable, [`RedisFlag::toggle`], [`RedisFlag::set`]
/// and [`RedisFlag::get`] fail with [`FlagError::Unavailable`] (each bounded
/// by the connection's command timeout) and [`RedisFlag::current`] keeps
/// the last state known.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use toolwire_redis::{RedisConfig, RedisFlag};
///
/// let redis = RedisConfig::new("redis://127.0.0.1:6379").connect().await?;
/// let flag = RedisFlag::new(&redis, "extras");
/// let mut changes = flag.watch();
/// let on = flag.toggle().await?;
/// assert_eq!(flag.current(), on);
/// // Another instance's toggle, or the catch-up after an outage:
/// changes.changed().await?;
/// println!("now {}", *changes.borrow_and_update());
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct RedisFlag {
    shared: Arc<Shared>,
    /// The subscriber task, stopped when the flag is dropped.
    subscriber: AbortHandle,
}

/// What the flag and its subscriber task share.
#[derive(Debug)]
struct Shared {
    redis: RedisConnection,
    key: String,
    channel: String,
    /// The newest state known, behind one lock so that states are applied in order.
    newest: Mutex<State>,
    /// `newest.on`, for watchers.
    on: watch::Sender<bool>,
}

impl RedisFlag {
    /// The flag `name` of `redis` (off until read). It subscribes and reads
    /// the flag in the background.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime: it spawns its subscriber task.
    pub fn new(redis: &RedisConnection, name: &str) -> Self {
        let key = format!("{}flag:{}", redis.key_prefix(), escape(name));
        let shared = Arc::new(Shared {
            redis: redis.clone(),
            channel: key.clone(),
            key,
            newest: Mutex::new(State::default()),
            on: watch::Sender::new(false),
        });
        let (redis, channel) = (redis.clone(), shared.channel.clone());
        let subscriber = tokio::spawn(listen_for_ever(redis, channel, shared.clone()));
        let subscriber = subscriber.abort_handle();
        RedisFlag { shared, subscriber }
    }

    /// The key (`{prefix}flag:NAME`, NAME escaped), which is also the
    /// pub/sub channel.
    pub fn key(&self) -> &str {
        &self.shared.key
    }

    /// The newest value known, without a round trip (off until the first
    /// read; the last known while Redis is unreachable).
    pub fn current(&self) -> bool {
        *self.shared.on.borrow()
    }

    /// A receiver of the value: `changed()` wakes each time it changes,
    /// here or on another instance. Like every `watch` channel it keeps
    /// only the newest value: two changes in quick succession may be seen
    /// as one, or as none when the second undoes the first.
    pub fn watch(&self) -> watch::Receiver<bool> {
        self.shared.on.subscribe()
    }

    /// Reads the value from Redis (one round trip).
    pub async fn get(&self) -> Result<bool, FlagError> {
        self.shared.run("get", false).await
    }

    /// Flips the value and returns the new one (one round trip); every
    /// instance's watchers hear of it.
    pub async fn toggle(&self) -> Result<bool, FlagError> {
        self.shared.run("toggle", false).await
    }

    /// Sets the value (one round trip); watchers hear of it when it changed.
    pub async fn set(&self, on: bool) -> Result<bool, FlagError> {
        self.shared.run(if on { "on" } else { "off" }, false).await
    }
}

impl Drop for RedisFlag {
    fn drop(&mut self) {
        self.subscriber.abort();
    }
}

impl Shared {
    /// Runs the script in `mode` and takes in the state it answers
    /// (`resync`: even when not newer, as after subscribing again).
    async fn run(&self, mode: &str, resync: bool) -> Result<bool, FlagError> {
        let epoch = format!("{:016x}", rand::random::<u64>());
        let mut invocation = SCRIPT.key(&self.key);
        invocation.arg(&self.channel).arg(mode).arg(epoch);
        let (on, version, epoch): (i64, u64, String) = self
            .redis
            .invoke(&invocation)
            .await
            .map_err(|f| self.unavailable(f))?;
        if on < 0 {
            return Err(FlagError::NotAFlag {
                key: self.key.clone(),
                kind: epoch,
            });
        }
        let state = State {
            on: on == 1,
            version,
            epoch,
        };
        self.take(&state, resync);
        Ok(state.on)
    }

    /// Makes `state` the newest when it is (or when `resync`).
    fn take(&self, state: &State, resync: bool) {
        let mut newest = self.newest.lock().unwrap_or_else(PoisonError::into_inner);
        if resync || state.supersedes(&newest) {
            *newest = state.clone();
            self.on
                .send_if_modified(|on| std::mem::replace(on, state.on) != state.on);
        }
    }

    fn unavailable(&self, failure: Failure) -> FlagError {
        FlagError::Unavailable {
            address: self.redis.address().to_owned(),
            detail: failure.0,
        }
    }
}

impl Listener for Shared {
    fn name(&self) -> &str {
        "flag"
    }

    /// Reads the flag again each time it is subscribed (the first time
    /// too): a change made meanwhile is either in this read or in a
    /// message that follows it.
    async fn subscribed(&self, _missed: bool) -> Result<(), Failure> {
        match self.run("get", true).await {
            Ok(_) => Ok(()),
            Err(FlagError::Unavailable { detail, .. }) => Err(Failure(detail)),
            Err(other) => Err(Failure(other.to_string())),
        }
    }

    fn receive(&self, payload: &[u8]) {
        match serde_json::from_slice::<State>(payload) {
            Ok(state) => self.take(&state, false),
            Err(error) => {
                tracing::debug!(%error, key = %self.key, "ignored a message on a flag channel")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_supersedes_older_versions_and_other_epochs() {
        let state = |version, epoch: &str| State {
            on: true,
            version,
            epoch: epoch.into(),
        };
        assert!(state(2, "a").supersedes(&state(1, "a")));
        assert!(!state(1, "a").supersedes(&state(1, "a")));
        assert!(!state(1, "a").supersedes(&state(2, "a")));
        assert!(state(1, "b").supersedes(&state(9, "a")));
        assert!(state(1, "b").supersedes(&State::default()));
    }

    #[test]
    fn messages_are_what_the_script_publishes() {
        let message = br#"{"on":true,"version":3,"epoch":"00ff"}"#;
        let state: State = serde_json::from_slice(message).unwrap();
        assert_eq!(
            state,
            State {
                on: true,
                version: 3,
                epoch: "00ff".into()
            }
        );
    }
}
