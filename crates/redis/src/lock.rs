//! The lock a `modify` holds on one handle: taken together with the read
//! (one script call) and given back together with the write (another), so
//! a modify costs two round trips when nobody else is modifying the handle.
//!
//! The closure a modify runs is `FnOnce`, so a modify cannot run it again
//! after losing a race: it waits for the handle instead (a lock with a
//! lease, fenced by a random token), rather than retrying optimistically.

use std::mem;
use std::sync::LazyLock;
use std::time::Duration;

use redis::{Script, Value};
use tokio::time::Instant;

use crate::connection::{Failure, RedisConnection};
use crate::keys::HandleKeys;

static ACQUIRE: LazyLock<Script> = handle_script!("lua/acquire.lua");
static WRITE: LazyLock<Script> = handle_script!("lua/write.lua");
static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/release.lua")));

/// How long a lock lasts when its holder never gives it back (an instance
/// that crashed mid-modify).
pub(crate) const LOCK_LEASE: Duration = Duration::from_secs(2);

/// How long a modify waits for another modify's lock before failing
/// (longer than the lease, so a crashed holder's lock is outlived).
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(3);

/// Attempts to take a busy lock, at most (the wait bounds them first).
const MAX_ATTEMPTS: u32 = 2000;

/// A handle read under its lock.
pub(crate) struct Acquired {
    /// The value, as JSON.
    pub json: Vec<u8>,
    /// Writes the new value, or on drop gives the lock back.
    pub guard: LockGuard,
}

/// The lock of one handle; dropped without [`LockGuard::write`] (an error,
/// a cancelled request), it gives the lock back from a spawned task.
pub(crate) struct LockGuard {
    redis: RedisConnection,
    keys: HandleKeys,
    id: String,
    token: String,
    held: bool,
}

/// Locks handle `id` of `owner` and reads it: `None` when it is missing,
/// expired or another owner's; waits while another modify holds it.
pub(crate) async fn acquire(
    redis: &RedisConnection,
    keys: &HandleKeys,
    owner: &str,
    id: &str,
) -> Result<Option<Acquired>, Failure> {
    let token = format!("{:032x}", rand::random::<u128>());
    let deadline = Instant::now() + LOCK_WAIT;
    for attempt in 0..MAX_ATTEMPTS {
        let mut invocation = ACQUIRE.key(&keys.handle);
        invocation.key(&keys.owned).arg(owner).arg(id).arg(&token);
        invocation.arg(LOCK_LEASE.as_millis().to_string());
        match redis.invoke::<Value>(&invocation).await? {
            Value::BulkString(json) => {
                let guard = LockGuard {
                    redis: redis.clone(),
                    keys: keys.clone(),
                    id: id.to_owned(),
                    token,
                    held: true,
                };
                return Ok(Some(Acquired { json, guard }));
            }
            Value::Nil | Value::Boolean(false) => return Ok(None),
            Value::Int(_) if Instant::now() >= deadline => break,
            Value::Int(wait_ms) => tokio::time::sleep(pause(attempt, wait_ms)).await,
            other => return Err(redis.failure(&format!("unexpected script reply {other:?}"))),
        }
    }
    let detail = format!("handle {id} stayed locked by another modify for {LOCK_WAIT:?}");
    Err(redis.failure(&detail))
}

/// The pause before trying a busy lock again: about 1, 2, 4 … 32 ms (never
/// past the holder's lease), with jitter so that waiters spread out.
pub(crate) fn pause(attempt: u32, lease_left_ms: i64) -> Duration {
    let step = 1u64 << attempt.min(5);
    let millis = step.min(u64::try_from(lease_left_ms).unwrap_or(1).max(1));
    let micros = millis * 1000;
    Duration::from_micros(rand::random_range(micros / 2..=micros))
}

impl LockGuard {
    /// Writes `json` as the handle's value and gives the lock back, if the
    /// lock is still this one's: `Ok(false)` when the handle was removed
    /// (or expired, or its lease ran out and another modify took it).
    pub(crate) async fn write(mut self, json: Vec<u8>) -> Result<bool, Failure> {
        let mut invocation = WRITE.key(&self.keys.handle);
        invocation
            .key(&self.keys.owned)
            .arg(&self.id)
            .arg(&self.token);
        invocation.arg(json);
        let written: i64 = self.redis.invoke(&invocation).await?;
        self.held = false;
        Ok(written == 1)
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.held {
            return;
        }
        let handle = mem::take(&mut self.keys.handle);
        let token = mem::take(&mut self.token);
        release_in_background(&self.redis, handle, token, "handle");
    }
}

/// Gives back the lock on `key` held under `token`, from a task of its own
/// (a guard dropped without writing calls it): when there is no runtime
/// or Redis does not answer, the lock's lease ends it. `what` names the
/// locked thing in the log.
pub(crate) fn release_in_background(
    redis: &RedisConnection,
    key: String,
    token: String,
    what: &'static str,
) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let redis = redis.clone();
    runtime.spawn(async move {
        let mut invocation = RELEASE.key(key);
        invocation.arg(token);
        if let Err(failure) = redis.invoke::<i64>(&invocation).await {
            tracing::debug!(%failure, what, "lock not given back; its lease will end it");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_and_stay_within_the_lease() {
        for attempt in 0..40 {
            let pause = pause(attempt, 10_000);
            assert!(pause <= Duration::from_millis(32), "{pause:?}");
            assert!(pause >= Duration::from_micros(500), "{pause:?}");
        }
        assert!(pause(10, 3) <= Duration::from_millis(3));
        assert!(pause(10, -5) <= Duration::from_millis(1));
    }
}
