//! Rate-limit use per principal: for each limited tool (and the
//! gateway-wide call limit), the calls allowed within the last period and
//! those refused.

use std::sync::Arc;

use axum::extract::State;
use maud::{Markup, html};
use toolwire_gateway::RateUse;

use crate::Console;
use crate::auth::Admin;
use crate::pages::{Nav, layout};
use crate::time::utc;

/// `GET /ui/limits`.
pub(crate) async fn page(State(console): State<Arc<Console>>, Admin(session): Admin) -> Markup {
    let uses = console.gateway.rate_use();
    let body = html! {
        p.hint { "Counted by this gateway instance since it started." }
        table #limits {
            thead { tr {
                th { "Principal" } th { "Tool" } th { "Used in the last period" }
                th { "Limit" } th { "Refused" } th { "Last refused (UTC)" }
            } }
            tbody { @for rate in &uses { (row(rate)) } }
        }
        @if uses.is_empty() { p.empty { "No rate-limited call yet." } }
    };
    layout("Limits", Some(&session), Nav::Limits, body)
}

fn row(rate: &RateUse) -> Markup {
    let tool = rate.tool.as_deref().unwrap_or("*");
    let count = rate.limit.count();
    let full = rate.used >= count;
    html! {
        tr data-principal=(rate.principal) data-tool=(tool) {
            td { (rate.principal) }
            td { @if rate.tool.is_some() { (tool) } @else { span.muted { "all tools" } } }
            td.used.bad[full] { (rate.used) " of " (count) }
            td { (count) " per " (rate.limit.period().as_secs()) " s" }
            td.refused { (rate.refused) }
            td { @if let Some(ms) = rate.last_refused_ms { (utc(ms)) } }
        }
    }
}
