//! `toggle_extras` adds the tool `extra_tool` when it is missing and removes
//! it when it is there, for every client at once, so
//! `notifications/tools/list_changed` can be watched from any client (a
//! `subscriptions/listen` stream, or a legacy session's GET stream). It
//! needs the running [`Server`], which exists only after `build`: use
//! [`Demo::build`](super::Demo::build), which hands it over.
//!
//! Under `--redis` whether `extra_tool` is on is the [`RedisFlag`]
//! [`EXTRAS_FLAG`], shared by every instance on that Redis: `toggle_extras`
//! flips it (one round trip), and every instance adds or removes
//! `extra_tool` in its own list whenever it sees the flag change (at
//! start, when any instance toggles, and when it reads the flag again
//! after an outage). While Redis is unreachable the call is refused, and
//! each instance keeps the list it has: by the rate limits, which also
//! live in Redis and are checked first ("Rate limits cannot be checked
//! (Redis at HOST:PORT is unreachable); retry in 1 s"), or, should Redis go
//! away between the two, by the toggle itself ("cannot toggle extra_tool:
//! Redis at HOST:PORT is unreachable; retry in 1 s").
//!
//! What a listener sees under `--redis`: each instance that changes its
//! list tells its change feed, which reaches the listeners of every
//! instance. So for one toggle a listener on any instance is told
//! `notifications/tools/list_changed` up to once per instance, the one from
//! its own instance after its own list changed: re-listing after each
//! notification ends with the new list. An instance that sees two quick
//! toggles as one value that did not change tells nobody.

use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::watch;
use toolwire::protocol::ToolAnnotations;
use toolwire::server::{RateLimit, Server, State, ToolBuilder, ToolError};
use toolwire::tool;
use toolwire_redis::{RedisConnection, RedisFlag};

/// The tool `toggle_extras` adds and removes.
pub const EXTRA_TOOL: &str = "extra_tool";

/// The [`RedisFlag`] that says, under `--redis`, whether `extra_tool` is on.
pub const EXTRAS_FLAG: &str = "demo-extras";

/// What `toggle_extras` needs: the running server (set once it is built),
/// a lock, so that concurrent changes each see the state the previous one
/// left (two toggles at once add then remove, never fail or add twice),
/// and under `--redis` the shared flag.
///
/// The server's tools hold this, and this holds the server: a cycle that
/// lives as long as the process, which is how long the demo runs.
#[derive(Default)]
pub(super) struct Extras {
    server: OnceLock<Server>,
    toggling: Mutex<()>,
    rate_limit: Option<RateLimit>,
    /// Under `--redis`: whether `extra_tool` is on, for every instance.
    flag: Option<RedisFlag>,
}

impl Extras {
    fn server(&self) -> Result<&Server, ToolError> {
        self.server
            .get()
            .ok_or_else(|| ToolError::new("the demo server is not running yet; try again"))
    }

    /// Adds `extra_tool` when it is off, removes it when it is on; says
    /// which it did.
    async fn toggle(&self) -> Result<&'static str, ToolError> {
        let on = match &self.flag {
            Some(flag) => {
                let on = flag.toggle().await.map_err(|error| {
                    tracing::warn!(?error, "toggle_extras failed");
                    ToolError::new(format!("cannot toggle {EXTRA_TOOL}: {error}; retry in 1 s"))
                })?;
                self.sync()?;
                on
            }
            None => self.toggle_here()?,
        };
        Ok(if on {
            "extra_tool added"
        } else {
            "extra_tool removed"
        })
    }

    /// Without Redis: flips `extra_tool` in this server; true when added.
    fn toggle_here(&self) -> Result<bool, ToolError> {
        let server = self.server()?;
        let _one_at_a_time = self.lock();
        let present = server.tool_names().iter().any(|n| n == EXTRA_TOOL);
        self.apply(server, !present)?;
        Ok(!present)
    }

    /// Under `--redis`: makes this server's list match the newest value of
    /// the flag known here (nothing when it already does).
    fn sync(&self) -> Result<(), ToolError> {
        let (Some(flag), Some(server)) = (&self.flag, self.server.get()) else {
            return Ok(());
        };
        let _one_at_a_time = self.lock();
        let wanted = flag.current();
        let present = server.tool_names().iter().any(|n| n == EXTRA_TOOL);
        match wanted == present {
            true => Ok(()),
            false => self.apply(server, wanted),
        }
    }

    /// Adds (`on`) or removes `extra_tool`; listeners are told.
    fn apply(&self, server: &Server, on: bool) -> Result<(), ToolError> {
        let changed = match on {
            true => server.add_tool(self.extra_tool()),
            false => server.remove_tool(EXTRA_TOOL),
        };
        changed.map_err(|e| ToolError::new(format!("cannot toggle {EXTRA_TOOL}: {e}")))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.toggling
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn extra_tool(&self) -> ToolBuilder {
        let tool = ToolBuilder::new(EXTRA_TOOL)
            .description("An extra tool that toggle_extras adds and removes; returns a fixed text")
            .annotations(ToolAnnotations {
                read_only_hint: Some(true),
                idempotent_hint: Some(true),
                open_world_hint: Some(false),
                ..Default::default()
            })
            .handler(|| async { "extra tool called" });
        match self.rate_limit {
            Some(limit) => tool.rate_limit(limit),
            None => tool,
        }
    }
}

/// Under `--redis`, for as long as the process runs: syncs the server's
/// list to the flag now (it may have been on before this instance
/// started) and each time it changes, here or on another instance.
async fn follow(extras: Arc<Extras>, mut changes: watch::Receiver<bool>) {
    loop {
        changes.borrow_and_update();
        if let Err(error) = extras.sync() {
            tracing::warn!(%error, "extra_tool does not follow the shared flag");
        }
        if changes.changed().await.is_err() {
            return;
        }
    }
}

/// Adds the tool extra_tool, or removes it when it is there, for every client
/// (listeners get notifications/tools/list_changed)
#[tool(
    read_only = false,
    destructive = false,
    idempotent = false,
    open_world = false
)]
pub(super) async fn toggle_extras(
    State(extras): State<Arc<Extras>>,
) -> Result<&'static str, ToolError> {
    extras.toggle().await
}

impl Extras {
    /// What a demo with these options needs (the flag under `--redis`).
    pub(super) fn new(
        rate_limit: Option<RateLimit>,
        redis: Option<&RedisConnection>,
    ) -> Arc<Extras> {
        Arc::new(Extras {
            rate_limit,
            flag: redis.map(|redis| RedisFlag::new(redis, EXTRAS_FLAG)),
            ..Extras::default()
        })
    }

    /// Hands over the built server; under `--redis` starts following the
    /// shared flag (within the Tokio runtime).
    pub(super) fn start(self: &Arc<Self>, server: &Server) {
        // Only this call sets it: a Demo is built once.
        let _ = self.server.set(server.clone());
        if let Some(flag) = &self.flag {
            tokio::spawn(follow(Arc::clone(self), flag.watch()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolwire_redis::RedisConfig;

    #[tokio::test]
    async fn a_toggle_without_redis_says_so() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let redis = RedisConfig::new(format!("redis://127.0.0.1:{port}"))
            .connect_lazy()
            .unwrap();
        let extras = Extras {
            flag: Some(RedisFlag::new(&redis, EXTRAS_FLAG)),
            ..Extras::default()
        };
        assert_eq!(
            extras.toggle().await,
            Err(ToolError::new(format!(
                "cannot toggle extra_tool: Redis at 127.0.0.1:{port} is unreachable; retry in 1 s"
            )))
        );
    }
}
