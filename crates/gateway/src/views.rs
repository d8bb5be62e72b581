//! What the gateway shows of itself (to the web console): every tool it
//! knows of, served or withheld, with where it comes from, how it compares
//! with its pin (and what changed), the scan's findings, its scope, and its
//! definition now and as pinned; how each upstream is doing
//! ([`crate::status`]); and each principal's use of its rate limits
//! ([`crate::rate_use`]).

use serde_json::Value;
use tokio::time::Instant;
use toolwire_server::protocol::Tool;

use crate::gateway::{Gateway, Slot};
use crate::pin::{PinState, PinStore};
use crate::rate_use::RateUse;
use crate::registry::{ExposedTool, findings_among};
use crate::status::{UpstreamStatus, kind_of};

/// How a tool compares with the lock file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolPin {
    /// The configuration names no lock file: nothing is pinned.
    NoLock,
    /// Its definition matches its pin.
    Pinned,
    /// Not pinned yet (withheld until approved, with `pin = "strict"`).
    New,
    /// Its definition differs from its pin (withheld until approved).
    Drifted,
}

impl ToolPin {
    /// `no lock`, `pinned`, `new` or `drifted`.
    pub fn label(&self) -> &'static str {
        match self {
            ToolPin::NoLock => "no lock",
            ToolPin::Pinned => "pinned",
            ToolPin::New => "new",
            ToolPin::Drifted => "drifted",
        }
    }

    fn of(state: &PinState) -> ToolPin {
        match state {
            PinState::Pinned => ToolPin::Pinned,
            PinState::New => ToolPin::New,
            PinState::Changed { .. } => ToolPin::Drifted,
        }
    }
}

/// One tool, served or withheld, as the console shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolView {
    /// The name downstream clients call it by (for a withheld tool: the
    /// name it would be served under).
    pub name: String,
    /// The upstream's name.
    pub upstream: String,
    /// Its name on the upstream.
    pub upstream_tool: String,
    /// False when its pin withholds it.
    pub served: bool,
    /// How it compares with the lock file.
    pub pin: ToolPin,
    /// What differs from its pin, one line per field (empty unless
    /// [`ToolPin::Drifted`]).
    pub changes: Vec<String>,
    /// Signs of tool poisoning in its definition (see [`crate::scan`]).
    pub findings: Vec<String>,
    /// The scope a caller needs, when one is configured.
    pub scope: Option<String>,
    /// Its definition as the upstream serves it now.
    pub definition: Tool,
    /// The canonical definition recorded in the lock file, when there is
    /// one (for a drifted tool: the one approved last).
    pub pinned_definition: Option<Value>,
}

impl Gateway {
    /// Every tool: those served, in serving order (as [`Gateway::tools`]),
    /// then those withheld by their pins.
    pub fn tool_views(&self) -> Vec<ToolView> {
        let pins = self.inner.pins.as_deref();
        let registry = self.inner.lock();
        let names = registry.served_names();
        let served = registry.served_definitions().map(|(exposed, definition)| {
            let pin = match pins {
                Some(pins) => pins.state(&exposed.upstream, definition),
                None => PinState::Pinned,
            };
            view(exposed.clone(), true, pins, &pin, definition, &names)
        });
        let mut views: Vec<ToolView> = served.collect();
        for (withheld, exposed) in registry.withheld_as() {
            let (state, definition) = (&withheld.state, &withheld.definition);
            views.push(view(exposed, false, pins, state, definition, &names));
        }
        views
    }
}

/// The view of `definition`, served (or withheld) as `exposed`, in `state`
/// against `pins`, among tools of these `names`.
fn view(
    exposed: ExposedTool,
    served: bool,
    pins: Option<&PinStore>,
    state: &PinState,
    definition: &Tool,
    names: &[String],
) -> ToolView {
    let changes = match state {
        PinState::Changed { changes } => changes.clone(),
        _ => Vec::new(),
    };
    let pinned_definition =
        pins.and_then(|pins| pins.pin(&exposed.upstream, &exposed.upstream_tool));
    ToolView {
        findings: findings_among(definition, &exposed, names),
        pin: pins.map_or(ToolPin::NoLock, |_| ToolPin::of(state)),
        changes,
        pinned_definition: pinned_definition.map(|pin| pin.definition),
        served,
        definition: definition.clone(),
        scope: exposed.scope,
        upstream_tool: exposed.upstream_tool,
        upstream: exposed.upstream,
        name: exposed.name,
    }
}

impl Gateway {
    /// Every upstream as it is now, in the configuration's order (after a
    /// reload, the upstreams it added or changed last); those a reload
    /// removed are left out.
    pub fn upstreams(&self) -> Vec<UpstreamStatus> {
        let now = Instant::now();
        self.inner
            .slots()
            .iter()
            .enumerate()
            .filter(|(_, slot)| !slot.is_retired())
            .map(|(index, slot)| self.status(index, slot, now))
            .collect()
    }

    fn status(&self, index: usize, slot: &Slot, now: Instant) -> UpstreamStatus {
        let era = slot.client.as_ref().and_then(|client| client.era());
        let protocol_version = slot
            .client
            .as_ref()
            .filter(|_| era.is_some())
            .map(|client| client.protocol_version());
        let state = slot
            .health()
            .state(slot.client.is_some(), slot.is_started(), now);
        let registry = self.inner.lock();
        UpstreamStatus {
            name: slot.upstream.name.clone(),
            transport: kind_of(&slot.upstream.transport),
            era,
            protocol_version,
            state,
            last_error: registry.failure(index).map(|failure| failure.reason),
            tools: registry.served_count(index),
        }
    }
}

impl Gateway {
    /// Each principal's use of the tool-call limits (`call_limit` and the
    /// upstreams' `rate_limit`), sorted by principal, then tool. The counts
    /// are this instance's, since it started: with limits shared through
    /// Redis, calls served by other instances are not counted here.
    pub fn rate_use(&self) -> Vec<RateUse> {
        self.inner.rate_limits.uses()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        let pins = [
            ToolPin::NoLock,
            ToolPin::Pinned,
            ToolPin::New,
            ToolPin::Drifted,
        ];
        let labels: Vec<&str> = pins.iter().map(ToolPin::label).collect();
        assert_eq!(labels, ["no lock", "pinned", "new", "drifted"]);
    }

    #[test]
    fn pin_states_map_to_tool_pins() {
        assert_eq!(ToolPin::of(&PinState::Pinned), ToolPin::Pinned);
        assert_eq!(ToolPin::of(&PinState::New), ToolPin::New);
        let changed = PinState::Changed {
            changes: vec!["description: \"a\" -> \"b\"".into()],
        };
        assert_eq!(ToolPin::of(&changed), ToolPin::Drifted);
    }
}
