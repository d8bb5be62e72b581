//! [`RedisHandles`]: state handles in Redis, so that any instance serves
//! any handle.

use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use futures::future::BoxFuture;
use redis::Script;
use serde::Serialize;
use serde::de::DeserializeOwned;
use toolwire_server::{HandleStore, HandleStoreError};

use crate::connection::{Failure, RedisConnection};
use crate::keys::{HandleKeys, handle_keys};
use crate::lock::{self, Acquired};

static INSERT: LazyLock<Script> = handle_script!("lua/insert.lua");
static REMOVE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/remove.lua")));

/// State handles in Redis: values stored as JSON, bound to their owner,
/// expiring after their idle time (every use restarts it), at most
/// `max_per_owner` live handles per owner — the guarantees of the
/// in-memory store, shared by every instance using the same Redis, key
/// prefix and store name.
///
/// * `insert` is one script call: it drops the owner's expired handles,
///   checks the count and stores the handle, atomically.
/// * `modify` is two script calls: one locks the handle and reads it, the
///   closure runs here, the other writes the result and unlocks (only if
///   the lock is still this call's). Concurrent modifies of one handle, on
///   any instances, wait for each other (at most 3 s, then an error); none
///   is lost. The lock's lease is 2 s, so a crashed instance holds nobody
///   up for long.
/// * `remove` is one script call, checking the owner.
///
/// An unknown, expired and another owner's handle are the same answer
/// (`Ok(false)`), as in memory. While Redis is unreachable every method
/// fails closed with [`HandleStoreError::Unavailable`], naming Redis and
/// its address; a value that does not encode or decode as JSON fails the
/// same way.
pub struct RedisHandles<T> {
    redis: RedisConnection,
    name: Arc<str>,
    kind: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for RedisHandles<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisHandles")
            .field("name", &self.name)
            .field("redis", &self.redis)
            .finish()
    }
}

impl<T> RedisHandles<T> {
    /// Handles in `redis` under the store name `name` (one name per kind of
    /// handle, e.g. `baskets`, the same on every instance: the per-owner
    /// limit counts the handles of one name).
    pub fn new(redis: RedisConnection, name: impl Into<String>) -> Self {
        RedisHandles {
            redis,
            name: Arc::from(name.into()),
            kind: PhantomData,
        }
    }

    /// The store name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn keys(&self, owner: &str, id: &str) -> HandleKeys {
        handle_keys(self.redis.key_prefix(), &self.name, owner, id)
    }
}

impl<T: Serialize + DeserializeOwned + Send + Sync + 'static> RedisHandles<T> {
    async fn insert_value(
        &self,
        id: &str,
        owner: &str,
        json: Vec<u8>,
        idle: Duration,
        max_per_owner: usize,
    ) -> Result<(), HandleStoreError> {
        let keys = self.keys(owner, id);
        let mut invocation = INSERT.key(&keys.handle);
        invocation.key(&keys.owned).arg(owner).arg(id).arg(json);
        invocation.arg(idle_millis(idle)).arg(max_per_owner);
        match self.redis.invoke::<i64>(&invocation).await {
            Ok(1) => Ok(()),
            Ok(_) => Err(HandleStoreError::Full {
                limit: max_per_owner,
            }),
            Err(failure) => Err(unavailable(failure)),
        }
    }

    async fn modify_value(
        &self,
        id: &str,
        owner: &str,
        change: Box<dyn FnOnce(&mut T) + Send + '_>,
    ) -> Result<bool, HandleStoreError> {
        let keys = self.keys(owner, id);
        let acquired = lock::acquire(&self.redis, &keys, owner, id).await;
        let Acquired { json, guard } = match acquired.map_err(unavailable)? {
            Some(acquired) => acquired,
            None => return Ok(false),
        };
        let mut value: T = decode(&self.redis, id, &json)?;
        change(&mut value);
        let json = encode(&self.redis, &value)?;
        guard.write(json).await.map_err(unavailable)
    }

    async fn remove_value(&self, id: &str, owner: &str) -> Result<bool, HandleStoreError> {
        let keys = self.keys(owner, id);
        let mut invocation = REMOVE.key(&keys.handle);
        invocation.key(&keys.owned).arg(owner).arg(id);
        let removed: i64 = self.redis.invoke(&invocation).await.map_err(unavailable)?;
        Ok(removed == 1)
    }
}

impl<T: Serialize + DeserializeOwned + Send + Sync + 'static> HandleStore<T> for RedisHandles<T> {
    fn insert<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        value: T,
        idle: Duration,
        max_per_owner: usize,
    ) -> BoxFuture<'a, Result<(), HandleStoreError>> {
        let json = encode(&self.redis, &value);
        Box::pin(async move {
            self.insert_value(id, owner, json?, idle, max_per_owner)
                .await
        })
    }

    fn modify<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
        change: Box<dyn FnOnce(&mut T) + Send + 'a>,
    ) -> BoxFuture<'a, Result<bool, HandleStoreError>> {
        Box::pin(self.modify_value(id, owner, change))
    }

    fn remove<'a>(
        &'a self,
        id: &'a str,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<bool, HandleStoreError>> {
        Box::pin(self.remove_value(id, owner))
    }
}

/// The longest idle time passed to Redis, in ms (about 139 years): Redis
/// refuses expiry times that overflow, Lua numbers are exact up to 2^53.
const MAX_IDLE_MILLIS: u128 = 1 << 42;

/// The idle time in whole milliseconds, rounded up (Redis expiry is in ms).
fn idle_millis(idle: Duration) -> u64 {
    let millis = idle.as_nanos().div_ceil(1_000_000).min(MAX_IDLE_MILLIS);
    u64::try_from(millis).unwrap_or(u64::MAX)
}

fn encode<T: Serialize>(redis: &RedisConnection, value: &T) -> Result<Vec<u8>, HandleStoreError> {
    serde_json::to_vec(value).map_err(|e| {
        let detail = format!("a handle value does not encode as JSON: {e}");
        unavailable(redis.failure(&detail))
    })
}

fn decode<T: DeserializeOwned>(
    redis: &RedisConnection,
    id: &str,
    json: &[u8],
) -> Result<T, HandleStoreError> {
    serde_json::from_slice(json).map_err(|e| {
        let detail = format!("the value of handle {id} does not decode: {e}");
        unavailable(redis.failure(&detail))
    })
}

fn unavailable(failure: Failure) -> HandleStoreError {
    HandleStoreError::Unavailable(failure.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_times_round_up_to_milliseconds() {
        assert_eq!(idle_millis(Duration::ZERO), 0);
        assert_eq!(idle_millis(Duration::from_micros(1)), 1);
        assert_eq!(idle_millis(Duration::from_millis(300)), 300);
        assert_eq!(idle_millis(Duration::MAX), 1 << 42);
    }
}
