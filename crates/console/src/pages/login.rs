//! Logging in with an admin token (once: a session cookie follows), and
//! out.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Form, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;

use crate::Console;
use crate::auth::{self, Admin, Identified, LOGIN_COOKIE};
use crate::pages::{Nav, layout};

/// What the login form sends.
#[derive(Debug, Deserialize)]
pub(crate) struct LoginForm {
    token: String,
    csrf: String,
}

/// The address a request came from, as the listener recorded it
/// (`unknown` when it did not).
pub(crate) struct Peer(String);

impl<S: Send + Sync> FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Peer, Self::Rejection> {
        let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>();
        Ok(Peer(peer.map_or_else(
            || "unknown".to_owned(),
            |a| a.0.ip().to_string(),
        )))
    }
}

/// What the logout form sends.
#[derive(Debug, Deserialize)]
pub(crate) struct LogoutForm {
    csrf: String,
}

/// `GET /ui/login`: the form, bound to this browser by a cookie (a page
/// elsewhere cannot post it); a logged-in browser goes to the console.
pub(crate) async fn form(State(console): State<Arc<Console>>, headers: HeaderMap) -> Response {
    if console.auth.session(&headers).is_some() {
        return Redirect::to("/ui/upstreams").into_response();
    }
    let (binding, set_cookie) = console.auth.login_binding();
    (
        [(header::SET_COOKIE, set_cookie)],
        login_page(&binding, None),
    )
        .into_response()
}

/// `POST /ui/login`: an admin token opens a session; any other token is
/// refused with the reason, and an address gets ten tries a minute.
pub(crate) async fn submit(
    State(console): State<Arc<Console>>,
    Peer(peer): Peer,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    let bound = auth::cookie(&headers, LOGIN_COOKIE)
        .is_some_and(|value| auth::constant_time_eq(value.as_bytes(), form.csrf.as_bytes()));
    if !bound {
        return auth::forged();
    }
    if let Err(wait) = console.auth.note_attempt(&peer) {
        let secs = wait.as_secs().max(1).to_string();
        let message = format!("Too many login attempts; try again in {secs} s.");
        return refused(StatusCode::TOO_MANY_REQUESTS, &form.csrf, &message);
    }
    match console.auth.identify(form.token.trim()) {
        Identified::Admin(principal) => {
            tracing::info!(principal, "console login");
            let set_cookie = console.auth.open(principal);
            (
                [(header::SET_COOKIE, set_cookie)],
                Redirect::to("/ui/upstreams"),
            )
                .into_response()
        }
        Identified::NotAdmin => refused(
            StatusCode::FORBIDDEN,
            &form.csrf,
            "This token lacks the admin scope: the console admits admin tokens only.",
        ),
        Identified::Unknown => refused(
            StatusCode::UNAUTHORIZED,
            &form.csrf,
            "The gateway knows no such token.",
        ),
    }
}

/// `POST /ui/logout`: ends the session.
pub(crate) async fn logout(
    State(console): State<Arc<Console>>,
    admin: Admin,
    headers: HeaderMap,
    Form(form): Form<LogoutForm>,
) -> Response {
    if !admin.csrf_matches(&form.csrf) {
        return auth::forged();
    }
    let set_cookie = console.auth.close(&headers);
    (
        [(header::SET_COOKIE, set_cookie)],
        Redirect::to("/ui/login"),
    )
        .into_response()
}

fn refused(status: StatusCode, binding: &str, message: &str) -> Response {
    (status, login_page(binding, Some(message))).into_response()
}

fn login_page(binding: &str, error: Option<&str>) -> Markup {
    let body = html! {
        @if let Some(error) = error {
            p.error role="alert" { (error) }
        }
        form #login method="post" action="/ui/login" {
            label for="token" { "Admin token" }
            input #token type="password" name="token" autocomplete="off" required autofocus;
            input type="hidden" name="csrf" value=(binding);
            button #login-submit type="submit" { "Log in" }
        }
        p.hint { "One of the gateway's bearer tokens with the admin scope. It is not stored in the browser: a session cookie is." }
    };
    layout("Log in", None, Nav::None, body)
}
