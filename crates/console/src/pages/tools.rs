//! The merged tool table, each tool's definition and pin, the diff of a
//! drifted one, and its approval.

use std::sync::Arc;

use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use toolwire_gateway::pin::canonical_definition;
use toolwire_gateway::{ToolPin, ToolView};
use toolwire_server::protocol::ToolAnnotations;

use crate::Console;
use crate::auth::{self, Admin};
use crate::diff::{self, Line};
use crate::pages::{Nav, layout, pretty, segment};

/// `GET /ui/tools`.
pub(crate) async fn list(State(console): State<Arc<Console>>, Admin(session): Admin) -> Markup {
    let views = console.gateway.tool_views();
    let body = html! {
        p.hint { "Annotations are the upstream's own hints: untrusted, shown as given." }
        table #tools {
            thead { tr {
                th { "Name" } th { "From" } th { "Pin" } th { "Served" } th { "Scope" }
                th { "Annotations (untrusted)" } th { "Scan findings" }
            } }
            tbody { @for view in &views { (row(view)) } }
        }
        @if views.is_empty() { p.empty { "No tools: no upstream lists any, or none is up." } }
    };
    layout("Tools", Some(&session), Nav::Tools, body)
}

fn row(view: &ToolView) -> Markup {
    html! {
        tr data-tool=(view.name) {
            td.name { a.detail href=(detail_path(view)) { (view.name) } }
            td.origin { (view.upstream) " / " code { (view.upstream_tool) } }
            td class=(pin_class(&view.pin)) { (view.pin.label()) }
            td.served.bad[!view.served] { @if view.served { "served" } @else { "withheld" } }
            td.scope { @if let Some(scope) = &view.scope { code { (scope) } } }
            td.annotations { (annotations(view.definition.annotations.as_ref())) }
            td.findings { (findings(&view.findings)) }
        }
    }
}

/// Which query a redirect after an approval carries.
#[derive(Debug, Deserialize)]
pub(crate) struct Flash {
    #[serde(default)]
    approved: bool,
}

/// `GET /ui/tools/{upstream}/{tool}`: the definition, its pin, the diff
/// against the pinned one and, while it is withheld, the approval form.
pub(crate) async fn detail(
    State(console): State<Arc<Console>>,
    Admin(session): Admin,
    Path((upstream, tool)): Path<(String, String)>,
    Query(flash): Query<Flash>,
) -> Response {
    let Some(view) = find(&console, &upstream, &tool) else {
        let body = html! { p.error { "No tool " code { (tool) } " of upstream " code { (upstream) } " is known now." } };
        let page = layout("Unknown tool", Some(&session), Nav::Tools, body);
        return (StatusCode::NOT_FOUND, page).into_response();
    };
    let body = html! {
        @if flash.approved {
            p #flash role="status" { "Definition approved: it is pinned and served." }
        }
        dl.facts {
            dt { "From" } dd { (view.upstream) " / " code { (view.upstream_tool) } }
            dt { "Pin" } dd class=(pin_class(&view.pin)) { (view.pin.label()) }
            dt { "Served" } dd { @if view.served { "served" } @else { "withheld until approved" } }
            dt { "Annotations (untrusted)" } dd { (annotations(view.definition.annotations.as_ref())) }
            dt { "Scan findings" } dd { (findings(&view.findings)) }
        }
        @if !view.changes.is_empty() {
            h2 { "What changed since it was pinned" }
            (diff_view(&view))
        }
        @if !view.served && view.pin != ToolPin::NoLock {
            form #approve method="post" action={ (detail_path(&view)) "/approve" } {
                input type="hidden" name="csrf" value=(session.csrf);
                button #approve-submit type="submit" { "Approve this definition" }
                span.hint { " Pins it in the lock file (audited) and serves it." }
            }
        }
        h2 { "Definition as the upstream serves it" }
        pre.json #definition { (pretty(&view.definition)) }
    };
    layout(&view.name, Some(&session), Nav::Tools, body).into_response()
}

/// What the approval form sends.
#[derive(Debug, Deserialize)]
pub(crate) struct ApproveForm {
    csrf: String,
}

/// `POST /ui/tools/{upstream}/{tool}/approve`: pins the tool's current
/// definition, as `toolwire gateway approve` does, and serves it.
pub(crate) async fn approve(
    State(console): State<Arc<Console>>,
    admin: Admin,
    Path((upstream, tool)): Path<(String, String)>,
    Form(form): Form<ApproveForm>,
) -> Response {
    if !admin.csrf_matches(&form.csrf) {
        return auth::forged();
    }
    let principal = &admin.0.principal;
    match console.gateway.approve(&upstream, &tool, principal).await {
        Ok(approval) => {
            tracing::info!(principal, upstream, tool, sha256 = %approval.sha256, "approved in the console");
            let to = format!(
                "/ui/tools/{}/{}?approved=true",
                segment(&upstream),
                segment(&tool)
            );
            Redirect::to(&to).into_response()
        }
        Err(error) => {
            let body = html! { p.error role="alert" { "Not approved: " (error.to_string()) } };
            let page = layout("Not approved", Some(&admin.0), Nav::Tools, body);
            (StatusCode::CONFLICT, page).into_response()
        }
    }
}

fn find(console: &Console, upstream: &str, tool: &str) -> Option<ToolView> {
    console
        .gateway
        .tool_views()
        .into_iter()
        .find(|view| view.upstream == upstream && view.upstream_tool == tool)
}

fn detail_path(view: &ToolView) -> String {
    format!(
        "/ui/tools/{}/{}",
        segment(&view.upstream),
        segment(&view.upstream_tool)
    )
}

/// The pinned definition against the current one, line by line.
fn diff_view(view: &ToolView) -> Markup {
    let old = view
        .pinned_definition
        .as_ref()
        .map(pretty)
        .unwrap_or_default();
    let new = pretty(&canonical_definition(&view.definition));
    html! {
        ul.changes { @for change in &view.changes { li { code { (change) } } } }
        pre.diff #diff {
            @for line in diff::lines(&old, &new) {
                @match line {
                    Line::Same(text) => span.same { "  " (text) "\n" },
                    Line::Removed(text) => span.del { "- " (text) "\n" },
                    Line::Added(text) => span.add { "+ " (text) "\n" },
                }
            }
        }
    }
}

fn pin_class(pin: &ToolPin) -> &'static str {
    match pin {
        ToolPin::Pinned => "pin ok",
        ToolPin::NoLock => "pin",
        ToolPin::New => "pin warn",
        ToolPin::Drifted => "pin bad",
    }
}

/// The hints an upstream gives, each marked as given.
fn annotations(annotations: Option<&ToolAnnotations>) -> Markup {
    let Some(a) = annotations else {
        return html! { span.muted { "none" } };
    };
    let hints = [
        ("read-only", a.read_only_hint),
        ("destructive", a.destructive_hint),
        ("idempotent", a.idempotent_hint),
        ("open world", a.open_world_hint),
    ];
    html! {
        @for (name, value) in hints {
            @if let Some(value) = value {
                span.hint-chip title="untrusted: as the upstream says" { (name) ": " (value) }
            }
        }
    }
}

fn findings(found: &[String]) -> Markup {
    html! {
        @if found.is_empty() { span.muted { "none" } }
        @else { ul.findings { @for finding in found { li { (finding) } } } }
    }
}
