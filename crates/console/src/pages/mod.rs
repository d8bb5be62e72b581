//! The console's pages, rendered on the server with `maud` (which escapes
//! every value it interpolates), in one layout with a navigation bar.

pub(crate) mod audit;
pub(crate) mod limits;
pub(crate) mod login;
pub(crate) mod tools;
pub(crate) mod upstreams;

use axum::response::Redirect;
use maud::{DOCTYPE, Markup, html};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

use crate::auth::Session;

/// `GET /ui`: the upstreams page.
pub(crate) async fn home() -> Redirect {
    Redirect::to("/ui/upstreams")
}

/// The page the navigation bar marks as current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nav {
    Upstreams,
    Tools,
    Audit,
    Limits,
    None,
}

const NAV: [(Nav, &str, &str, &str); 4] = [
    (
        Nav::Upstreams,
        "/ui/upstreams",
        "nav-upstreams",
        "Upstreams",
    ),
    (Nav::Tools, "/ui/tools", "nav-tools", "Tools"),
    (Nav::Audit, "/ui/audit", "nav-audit", "Audit"),
    (Nav::Limits, "/ui/limits", "nav-limits", "Limits"),
];

/// A whole page: `title`, the navigation bar (with the logout form) when
/// someone is logged in, and `body`.
pub(crate) fn layout(title: &str, session: Option<&Session>, current: Nav, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · toolwire gateway" }
                link rel="icon" href="/ui/assets/favicon.svg" type="image/svg+xml";
                link rel="stylesheet" href="/ui/assets/console.css";
                script src="/ui/assets/console.js" defer {}
            }
            body {
                header {
                    span.brand { "toolwire gateway" }
                    @if let Some(session) = session {
                        nav {
                            @for (nav, href, id, label) in NAV {
                                a id=(id) href=(href) class=[(nav == current).then_some("current")] { (label) }
                            }
                        }
                        form #logout method="post" action="/ui/logout" {
                            span.who { (session.principal) }
                            input type="hidden" name="csrf" value=(session.csrf);
                            button #logout-submit type="submit" { "Log out" }
                        }
                    }
                }
                main {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// `text` as one path segment (every character but letters and digits
/// percent-encoded).
pub(crate) fn segment(text: &str) -> String {
    utf8_percent_encode(text, NON_ALPHANUMERIC).to_string()
}

/// `value` as pretty-printed JSON.
pub(crate) fn pretty(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("(cannot show: {e})"))
}
