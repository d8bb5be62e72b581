//! Who is logged in: the tokens that may log in (kept as SHA-256 digests),
//! the sessions opened by a login (random ids in an `HttpOnly`,
//! `SameSite=Strict` cookie), each with its CSRF token, and the
//! [`Admin`] extractor every page but the login form requires.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use rand::RngCore;
use sha2::{Digest, Sha256};
use tokio::time::Instant;
use toolwire_server::{InMemoryRateLimits, RateLimit};

use crate::{ADMIN_SCOPE, Console, ConsoleConfig};

/// The session cookie's name.
pub(crate) const SESSION_COOKIE: &str = "toolwire_console";
/// The cookie that binds the login form to the browser that fetched it.
pub(crate) const LOGIN_COOKIE: &str = "toolwire_login";
/// At most this many sessions are open; the oldest goes first.
const MAX_SESSIONS: usize = 1_000;

/// A token that may be presented at the login form.
struct KnownToken {
    digest: [u8; 32],
    principal: String,
    admin: bool,
}

/// One logged-in browser.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// The principal of the token it logged in with.
    pub(crate) principal: String,
    /// What every state-changing form must carry.
    pub(crate) csrf: String,
    expires: Instant,
}

/// What a presented token is.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Identified {
    /// An admin token, naming this principal.
    Admin(String),
    /// A token the gateway accepts, without the admin scope.
    NotAdmin,
    /// No token the gateway knows.
    Unknown,
}

pub(crate) struct Auth {
    tokens: Vec<KnownToken>,
    sessions: Mutex<HashMap<String, Session>>,
    ttl: Duration,
    secure: bool,
    /// Login attempts per peer address.
    failures: InMemoryRateLimits,
}

impl Auth {
    pub(crate) fn new(config: &ConsoleConfig) -> Auth {
        let tokens = config
            .tokens
            .iter()
            .map(|(token, principal, scopes)| KnownToken {
                digest: digest(token),
                principal: principal.clone(),
                admin: scopes.iter().any(|s| s == ADMIN_SCOPE),
            })
            .collect();
        Auth {
            tokens,
            sessions: Mutex::default(),
            ttl: config.session_ttl,
            secure: config.secure_cookies,
            failures: InMemoryRateLimits::new(),
        }
    }

    /// Which known token `token` is, compared digest by digest in
    /// constant time.
    pub(crate) fn identify(&self, token: &str) -> Identified {
        let presented = digest(token);
        let mut found = Identified::Unknown;
        for known in &self.tokens {
            if constant_time_eq(&known.digest, &presented) {
                found = if known.admin {
                    Identified::Admin(known.principal.clone())
                } else {
                    Identified::NotAdmin
                };
            }
        }
        found
    }

    /// Counts a login attempt from `peer`: `Err` (with how long to wait)
    /// beyond ten a minute, whatever the token, so guessing is slow.
    pub(crate) fn note_attempt(&self, peer: &str) -> Result<(), Duration> {
        self.failures
            .check_now(&format!("login\u{0}{peer}"), &RateLimit::per_minute(10))
    }

    /// Opens a session for `principal`; returns the `Set-Cookie` value.
    pub(crate) fn open(&self, principal: String) -> String {
        let id = random_hex();
        let session = Session {
            principal,
            csrf: random_hex(),
            expires: Instant::now() + self.ttl,
        };
        let mut sessions = self.lock();
        sessions.retain(|_, s| s.expires > Instant::now());
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(id, _)| id.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(id.clone(), session);
        self.cookie(SESSION_COOKIE, &id, self.ttl)
    }

    /// The live session named by the request's cookie.
    pub(crate) fn session(&self, headers: &HeaderMap) -> Option<Session> {
        let id = cookie(headers, SESSION_COOKIE)?;
        let mut sessions = self.lock();
        match sessions.get(id) {
            Some(session) if session.expires > Instant::now() => Some(session.clone()),
            Some(_) => {
                sessions.remove(id);
                None
            }
            None => None,
        }
    }

    /// Ends the request's session; returns the `Set-Cookie` value that
    /// clears the cookie.
    pub(crate) fn close(&self, headers: &HeaderMap) -> String {
        if let Some(id) = cookie(headers, SESSION_COOKIE) {
            self.lock().remove(id);
        }
        self.cookie(SESSION_COOKIE, "", Duration::ZERO)
    }

    /// A new login-form binding: its value and the `Set-Cookie` value.
    pub(crate) fn login_binding(&self) -> (String, String) {
        let value = random_hex();
        let set = self.cookie(LOGIN_COOKIE, &value, Duration::from_secs(600));
        (value, set)
    }

    /// A `Set-Cookie` value for the console's path.
    fn cookie(&self, name: &str, value: &str, max_age: Duration) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        format!(
            "{name}={value}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
            max_age.as_secs()
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The logged-in admin behind a request. A request without a live session
/// is refused: a page is redirected to the login form (303), anything
/// else gets 403.
#[derive(Debug)]
pub(crate) struct Admin(pub(crate) Session);

impl FromRequestParts<Arc<Console>> for Admin {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        console: &Arc<Console>,
    ) -> Result<Admin, Response> {
        match console.auth.session(&parts.headers) {
            Some(session) => Ok(Admin(session)),
            None if parts.method == Method::GET => Err(Redirect::to("/ui/login").into_response()),
            None => Err((StatusCode::FORBIDDEN, "Not logged in to the console.").into_response()),
        }
    }
}

impl Admin {
    /// True when a form's CSRF token is this session's.
    pub(crate) fn csrf_matches(&self, presented: &str) -> bool {
        constant_time_eq(self.0.csrf.as_bytes(), presented.as_bytes())
    }
}

/// The refusal of a form whose CSRF token does not match.
pub(crate) fn forged() -> Response {
    (
        StatusCode::FORBIDDEN,
        "This form is stale or forged (its CSRF token does not match); reload the page.",
    )
        .into_response()
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|line| line.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// True when `a` and `b` are equal, in time that depends only on their
/// lengths.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// 128 random bits, as hex.
fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    toolwire_server::protocol::hex::lower_hex(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> Auth {
        Auth::new(
            &ConsoleConfig::new()
                .token("admin-token", "token-1", ["admin"])
                .token("reader-token", "token-2", ["read"]),
        )
    }

    fn with_cookie(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, value.parse().unwrap());
        headers
    }

    #[test]
    fn tokens_are_told_apart() {
        let auth = auth();
        assert_eq!(
            auth.identify("admin-token"),
            Identified::Admin("token-1".into())
        );
        assert_eq!(auth.identify("reader-token"), Identified::NotAdmin);
        assert_eq!(auth.identify("admin-token "), Identified::Unknown);
        assert_eq!(auth.identify(""), Identified::Unknown);
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_lives_until_its_expiry_or_logout() {
        let auth = auth();
        let set = auth.open("token-1".into());
        assert!(set.ends_with("; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=900"));
        let id = set.split(';').next().unwrap().to_owned();
        let headers = with_cookie(&format!("other=1; {id}"));
        assert_eq!(auth.session(&headers).unwrap().principal, "token-1");
        tokio::time::advance(Duration::from_secs(901)).await;
        assert!(auth.session(&headers).is_none(), "expired");

        let id = auth.open("token-1".into());
        let headers = with_cookie(id.split(';').next().unwrap());
        assert!(auth.session(&headers).is_some());
        assert_eq!(
            auth.close(&headers),
            "toolwire_console=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0"
        );
        assert!(auth.session(&headers).is_none(), "logged out");
    }

    #[test]
    fn secure_cookies_say_so() {
        let auth = Auth::new(&ConsoleConfig::new().secure_cookies(true));
        assert!(auth.login_binding().1.ends_with("; Max-Age=600; Secure"));
    }

    #[test]
    fn ten_login_attempts_a_minute_at_most() {
        let auth = auth();
        for _ in 0..10 {
            assert!(auth.note_attempt("127.0.0.1").is_ok());
        }
        assert!(auth.note_attempt("127.0.0.1").is_err());
        assert!(auth.note_attempt("127.0.0.2").is_ok(), "per address");
    }

    #[test]
    fn constant_time_eq_compares_whole_values() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
