//! The latest calls, newest first, filterable by principal, upstream, tool
//! and outcome; new calls arrive over Server-Sent Events while the page is
//! open (the embedded script adds their rows).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use maud::{Markup, html};
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;
use toolwire_gateway::AuditRecord;

use crate::Console;
use crate::auth::Admin;
use crate::pages::{Nav, layout};
use crate::time::utc;

/// How many rows the page shows.
const ROWS: usize = 200;

/// The outcomes a call can have, as audit records name them.
const OUTCOMES: [&str; 5] = ["ok", "tool_error", "upstream_error", "timeout", "cancelled"];

/// The filter of the page and of its stream; empty fields match anything.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct Filter {
    #[serde(default)]
    principal: String,
    #[serde(default)]
    upstream: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    outcome: String,
}

impl Filter {
    fn matches(&self, record: &AuditRecord) -> bool {
        let field = |want: &str, have: &str| want.is_empty() || want == have;
        field(&self.principal, &record.principal)
            && field(&self.upstream, &record.upstream)
            && field(&self.tool, &record.tool)
            && field(&self.outcome, record.outcome)
    }
}

/// `GET /ui/audit`.
pub(crate) async fn page(
    State(console): State<Arc<Console>>,
    Admin(session): Admin,
    Query(filter): Query<Filter>,
) -> Markup {
    let Some(log) = console.gateway.audit() else {
        let body = html! { p.empty { "The gateway keeps no audit records." } };
        return layout("Audit", Some(&session), Nav::Audit, body);
    };
    let records = log.recent();
    let choices = Choices::of(&records, &console.gateway);
    let shown: Vec<&AuditRecord> = records
        .iter()
        .rev()
        .filter(|r| filter.matches(r))
        .take(ROWS)
        .collect();
    let body = html! {
        (filter_form(&filter, &choices))
        p.hint { "The latest " (ROWS) " matching calls of this instance, newest first; new ones appear as they end." }
        table #audit data-live="/ui/audit/stream" {
            thead { tr {
                th { "Ended (UTC)" } th { "Principal" } th { "Tool" } th { "Upstream" }
                th { "Outcome" } th { "ms" } th { "Arguments SHA-256" }
            } }
            tbody { @for record in shown { (row(record)) } }
        }
    };
    layout("Audit", Some(&session), Nav::Audit, body)
}

/// `GET /ui/audit/stream`: each new call matching the filter, as an
/// event `call` whose data is the audit record.
pub(crate) async fn stream(
    State(console): State<Arc<Console>>,
    _admin: Admin,
    Query(filter): Query<Filter>,
) -> Response {
    let Some(log) = console.gateway.audit() else {
        return axum::http::StatusCode::NOT_FOUND.into_response();
    };
    let receiver = log.subscribe();
    // Ends when the gateway stops, so that its graceful stop does not wait
    // for an open console tab.
    let stopped = console.gateway.server().stopped();
    Sse::new(calls(receiver, filter).take_until(stopped))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// The events of the records `receiver` gets that `filter` matches (a
/// reader that falls behind skips what it missed).
fn calls(
    receiver: tokio::sync::broadcast::Receiver<AuditRecord>,
    filter: Filter,
) -> impl Stream<Item = Result<Event, Infallible>> {
    futures::stream::unfold((receiver, filter), |(mut receiver, filter)| async move {
        loop {
            match receiver.recv().await {
                Ok(record) if filter.matches(&record) => {
                    let event = Event::default()
                        .event("call")
                        .json_data(&record)
                        .unwrap_or_else(|_| Event::default().comment("unserializable"));
                    return Some((Ok(event), (receiver, filter)));
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return None,
            }
        }
    })
}

/// The values the filter's lists offer: those seen in the records, and
/// the upstreams and tools the gateway has now (so a tool not called yet,
/// whose first rows arrive live, can be chosen too).
struct Choices {
    principals: Vec<String>,
    upstreams: Vec<String>,
    tools: Vec<String>,
}

impl Choices {
    fn of(records: &[AuditRecord], gateway: &toolwire_gateway::Gateway) -> Choices {
        let upstreams = gateway.upstreams().into_iter().map(|u| u.name);
        let tools = gateway.tool_views().into_iter().map(|t| t.name);
        Choices {
            principals: distinct(records.iter().map(|r| r.principal.clone())),
            upstreams: distinct(records.iter().map(|r| r.upstream.clone()).chain(upstreams)),
            tools: distinct(records.iter().map(|r| r.tool.clone()).chain(tools)),
        }
    }
}

/// `values` sorted, each once.
fn distinct(values: impl Iterator<Item = String>) -> Vec<String> {
    let mut values: Vec<String> = values.collect();
    values.sort();
    values.dedup();
    values
}

fn filter_form(filter: &Filter, choices: &Choices) -> Markup {
    let outcomes: Vec<String> = OUTCOMES.iter().map(|o| (*o).to_owned()).collect();
    html! {
        form #filter method="get" action="/ui/audit" {
            (select("principal", "Principal", &choices.principals, &filter.principal))
            (select("upstream", "Upstream", &choices.upstreams, &filter.upstream))
            (select("tool", "Tool", &choices.tools, &filter.tool))
            (select("outcome", "Outcome", &outcomes, &filter.outcome))
            button #filter-submit type="submit" { "Filter" }
            a href="/ui/audit" { "Clear" }
        }
    }
}

/// A list of `values` (and "any"), with `chosen` selected; a chosen value
/// not among them is offered too, so the form shows the filter in force.
fn select(name: &str, label: &str, values: &[String], chosen: &str) -> Markup {
    let extra = (!chosen.is_empty() && !values.iter().any(|v| v == chosen)).then_some(chosen);
    html! {
        label {
            (label) " "
            select name=(name) {
                option value="" selected[chosen.is_empty()] { "any" }
                @for value in values.iter().map(String::as_str).chain(extra) {
                    option value=(value) selected[value == chosen] { (value) }
                }
            }
        }
    }
}

fn row(record: &AuditRecord) -> Markup {
    html! {
        tr.call data-principal=(record.principal) data-upstream=(record.upstream)
            data-tool=(record.tool) data-outcome=(record.outcome) {
            td { (utc(record.time_ms)) }
            td { (record.principal) }
            td { (record.tool) }
            td { (record.upstream) " / " code { (record.upstream_tool) } }
            td class=(outcome_class(record.outcome)) { (record.outcome) }
            td.num { (record.duration_ms) }
            td { code title=(record.arguments_sha256) { (record.arguments_sha256.get(..12).unwrap_or("")) } }
        }
    }
}

fn outcome_class(outcome: &str) -> &'static str {
    match outcome {
        "ok" => "ok",
        "tool_error" | "cancelled" => "warn",
        _ => "bad",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(principal: &str, tool: &str, outcome: &'static str) -> AuditRecord {
        AuditRecord {
            event: "call",
            time_ms: 0,
            principal: principal.into(),
            upstream: "notes".into(),
            tool: tool.into(),
            upstream_tool: "search".into(),
            arguments_sha256: "ab".repeat(32),
            outcome,
            duration_ms: 3,
        }
    }

    #[test]
    fn empty_fields_match_anything() {
        let all = Filter::default();
        assert!(all.matches(&record("token-1", "notes__search", "ok")));
        let some = Filter {
            principal: "token-1".into(),
            outcome: "ok".into(),
            ..Filter::default()
        };
        assert!(some.matches(&record("token-1", "notes__search", "ok")));
        assert!(!some.matches(&record("token-2", "notes__search", "ok")));
        assert!(!some.matches(&record("token-1", "notes__search", "timeout")));
    }
}
