//! The upstreams: how each is reached, the protocol it speaks, whether it
//! is up, and its last error.

use std::sync::Arc;

use axum::extract::State;
use maud::{Markup, html};
use toolwire_gateway::{UpstreamKind, UpstreamState, UpstreamStatus};

use crate::Console;
use crate::auth::Admin;
use crate::pages::{Nav, layout};

/// `GET /ui/upstreams`.
pub(crate) async fn page(State(console): State<Arc<Console>>, Admin(session): Admin) -> Markup {
    let upstreams = console.gateway.upstreams();
    let body = html! {
        table #upstreams {
            thead { tr { th { "Name" } th { "Transport" } th { "Protocol" } th { "State" } th { "Tools" } th { "Last error" } } }
            tbody {
                @for upstream in &upstreams { (row(upstream)) }
            }
        }
        @if upstreams.is_empty() { p.empty { "No upstreams are configured." } }
    };
    layout("Upstreams", Some(&session), Nav::Upstreams, body)
}

fn row(upstream: &UpstreamStatus) -> Markup {
    let (transport, target) = match &upstream.transport {
        UpstreamKind::Stdio { command } => ("stdio", command.join(" ")),
        UpstreamKind::Http { url } => ("http", url.clone()),
    };
    html! {
        tr data-upstream=(upstream.name) {
            td.name { (upstream.name) }
            td.transport { span.badge { (transport) } " " code { (target) } }
            td.protocol {
                @match (&upstream.era, &upstream.protocol_version) {
                    (Some(era), Some(version)) => { (version) " " span.muted { "(" (era.as_str()) ")" } },
                    _ => span.muted { "not negotiated yet" },
                }
            }
            td class=(state_class(&upstream.state)) {
                (upstream.state.label())
                @if let UpstreamState::BackingOff { retry_in } = upstream.state {
                    span.muted { " (next try in " (retry_in.as_secs().max(1)) " s)" }
                }
            }
            td.tools { (upstream.tools) }
            td.error { @if let Some(error) = &upstream.last_error { (error) } }
        }
    }
}

/// The cell's class besides `state`: how alarming the state is.
fn state_class(state: &UpstreamState) -> &'static str {
    match state {
        UpstreamState::Up => "state ok",
        UpstreamState::Starting | UpstreamState::Waiting => "state pending",
        UpstreamState::BackingOff { .. } => "state warn",
        UpstreamState::Dead => "state bad",
    }
}
