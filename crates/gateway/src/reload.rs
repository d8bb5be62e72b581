//! Taking a new configuration while serving: upstreams added are reached
//! and served, removed ones withdrawn, changed ones reached again with their
//! new settings; downstream connections are untouched. `[gateway]` settings
//! are fixed for the life of the process and reported when they changed.

use std::sync::Arc;

use crate::config::{GatewayConfig, Listen, UpstreamConfig};
use crate::gateway::{Gateway, Slot};

/// What [`Gateway::reload`] did, by upstream name, in the new file's order
/// (removed ones in the old order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// Upstreams new in the file: reached and served.
    pub added: Vec<String>,
    /// Upstreams gone from the file: their tools, prompts and resources
    /// withdrawn.
    pub removed: Vec<String>,
    /// Upstreams whose connection settings changed (`command`, `url`,
    /// `bearer_env`, `timeout_s`): reached again (a new process or
    /// connection) and served with the new settings.
    pub changed: Vec<String>,
    /// Upstreams whose policy alone changed (`prefix`, `allow`, `deny`,
    /// `scopes`, `rate_limit`, `start`): listed again and served under the
    /// new policy on the same process or connection.
    pub policy_changed: Vec<String>,
    /// `[gateway]` keys whose value changed but which only a restart
    /// applies (e.g. `gateway.http`); the running values are kept.
    pub needs_restart: Vec<String>,
    /// Why the lock file could not be read again (the pins held stay).
    pub lock_error: Option<String>,
}

impl Reloaded {
    /// True when no upstream was added, removed or changed.
    pub fn is_unchanged(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.policy_changed.is_empty()
    }
}

impl Gateway {
    /// Serves the upstreams of `config` in place of the running ones. The
    /// lock file is read again, and an upstream whose settings are
    /// unchanged keeps its process or connection but is listed again (a
    /// tool approved since is served now); the new and changed ones are listed first and then swapped
    /// in together with the removals, so that downstream listeners get one
    /// `list_changed`. Calls already running finish on the upstream they
    /// started on. The `[gateway]` table is not applied (see
    /// [`Reloaded::needs_restart`]).
    pub async fn reload(&self, config: &GatewayConfig) -> Reloaded {
        let mut report = Reloaded {
            needs_restart: fixed_keys_changed(&self.inner.config, config),
            ..Reloaded::default()
        };
        if let Some(pins) = &self.inner.pins {
            report.lock_error = pins.reread().err().map(|e| e.to_string());
        }
        let running: Vec<(usize, Arc<Slot>)> = self
            .inner
            .slots()
            .into_iter()
            .enumerate()
            .filter(|(_, slot)| !slot.is_retired())
            .collect();
        let mut retire = Vec::new();
        for (index, slot) in &running {
            if !config
                .upstreams
                .iter()
                .any(|u| u.name == slot.upstream.name)
            {
                report.removed.push(slot.upstream.name.clone());
                retire.push(*index);
            }
        }
        let mut fresh = Vec::new();
        let mut again = Vec::new();
        for upstream in &config.upstreams {
            match running
                .iter()
                .find(|(_, s)| s.upstream.name == upstream.name)
            {
                Some((index, slot)) if slot.upstream == *upstream => {
                    again.push(*index);
                    continue;
                }
                Some((index, slot)) if same_connection(&slot.upstream, upstream) => {
                    report.policy_changed.push(upstream.name.clone());
                    retire.push(*index);
                    fresh.push(self.add_slot_reusing(upstream, slot));
                    continue;
                }
                Some((index, _)) => {
                    report.changed.push(upstream.name.clone());
                    retire.push(*index);
                }
                None => report.added.push(upstream.name.clone()),
            }
            fresh.push(self.add_slot(upstream));
        }
        let listed: Vec<usize> = fresh.iter().chain(&again).copied().collect();
        let listings = futures::future::join_all(listed.iter().map(|i| self.first_listing(*i)));
        let listings = listings.await;
        for index in retire {
            self.retire(index);
        }
        for (index, listing) in listed.iter().zip(listings) {
            for collision in self.apply(*index, listing) {
                let error = self.inner.lock().collision_error(collision);
                tracing::warn!("{error}; the later tool is withheld");
            }
        }
        if self.is_watching() {
            for index in fresh {
                self.watch(index);
            }
        }
        report
    }

    /// A new slot for `upstream`, not served yet; its number.
    fn add_slot(&self, upstream: &UpstreamConfig) -> usize {
        let (slot, error) = Slot::open(upstream, self.inner.pins.as_deref());
        self.push_slot(upstream, slot, error)
    }

    /// A new slot for `upstream` on the client (process or connection) of
    /// `old`, not served yet; its number.
    fn add_slot_reusing(&self, upstream: &UpstreamConfig, old: &Slot) -> usize {
        self.push_slot(upstream, Slot::reusing(upstream, old), None)
    }

    fn push_slot(
        &self,
        upstream: &UpstreamConfig,
        slot: Slot,
        error: Option<crate::UpstreamError>,
    ) -> usize {
        let mut registry = self.inner.lock();
        let mut slots = self.inner.slots_mut();
        let index = slots.len();
        registry.add_slot(upstream);
        registry.set_failure(index, error);
        slots.push(Arc::new(slot));
        index
    }

    /// Withdraws everything of slot `index` and stops following it; its
    /// client goes when the calls still running on it end (and no other
    /// slot took it over).
    fn retire(&self, index: usize) {
        let mut registry = self.inner.lock();
        let mut slots = self.inner.slots_mut();
        let old = Arc::clone(&slots[index]);
        slots[index] = Arc::new(Slot::tombstone(&old.upstream));
        drop(slots);
        old.retired.send_replace(true);
        registry.retire(&self.inner.server, index);
    }
}

/// Whether an upstream reached with `old` settings can be kept for `new`:
/// what makes its client (the transport, the call timeout) is the same.
fn same_connection(old: &UpstreamConfig, new: &UpstreamConfig) -> bool {
    old.transport == new.transport && old.timeout == new.timeout
}

/// The `[gateway]` keys that differ between `old` and `new`.
fn fixed_keys_changed(old: &GatewayConfig, new: &GatewayConfig) -> Vec<String> {
    let mut keys = Vec::new();
    let mut check = |key: &str, changed: bool| {
        if changed {
            keys.push(format!("gateway.{key}"));
        }
    };
    let listen = |config: &GatewayConfig| match config.listen {
        Listen::Http(addr) => Some(addr),
        Listen::Stdio => None,
    };
    check("http", listen(old) != listen(new));
    check(
        "stdio",
        (old.listen == Listen::Stdio) != (new.listen == Listen::Stdio),
    );
    check("name_separator", old.name_separator != new.name_separator);
    check("max_name_len", old.max_name_len != new.max_name_len);
    check("audit", old.audit != new.audit);
    check("lock", old.lock != new.lock);
    check("pin", old.pin != new.pin);
    check("call_limit", old.call_limit != new.call_limit);
    check("redis", old.redis != new.redis);
    check("tokens", old.tokens != new.tokens);
    check("ui", old.ui != new.ui);
    check("health", old.health != new.health);
    check("drain_timeout_s", old.drain_timeout != new.drain_timeout);
    // The files' contents are read again on SIGHUP; other files need a restart.
    check("tls_cert", old.tls != new.tls);
    keys
}
