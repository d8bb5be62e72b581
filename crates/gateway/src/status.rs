//! How each upstream is doing, as the web console shows it: how it is
//! reached (never with its secrets), the protocol it speaks, whether it is
//! up, starting, waiting for its first use, backing off after a failure or
//! dead, its last error, and how many tools are served from it.

use std::time::Duration;

use tokio::time::Instant;
use toolwire_client::transport::Era;

use crate::config::UpstreamTransport;

/// One upstream as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamStatus {
    /// Its name in the configuration.
    pub name: String,
    /// How it is reached.
    pub transport: UpstreamKind,
    /// The protocol era it speaks, once its client has talked to it.
    pub era: Option<Era>,
    /// The protocol version spoken, once its client has talked to it.
    pub protocol_version: Option<String>,
    /// Up, starting, waiting, backing off or dead.
    pub state: UpstreamState,
    /// Why it is left out now (why its client could not be made, or why
    /// its last listing failed), when it is.
    pub last_error: Option<String>,
    /// How many of its tools are served now.
    pub tools: usize,
}

/// How an upstream is reached, without secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamKind {
    /// A child process speaking MCP on stdio.
    Stdio {
        /// The program and its arguments.
        command: Vec<String>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint without user information, query and fragment (so
        /// that no secret in them is shown).
        url: String,
    },
}

/// Where an upstream stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamState {
    /// Its last listing succeeded: its tools are served.
    Up,
    /// Started, but no listing of it has finished yet.
    Starting,
    /// Lazy (`start = "lazy"`) and not started yet: its pinned tools are
    /// served until one is called.
    Waiting,
    /// Its last listing failed: its tools are not served, and the next
    /// attempt comes in `retry_in`.
    BackingOff {
        /// How long until the next attempt: zero when it is due or under
        /// way, or when nothing follows the upstream (the gateway was not
        /// asked to [`Gateway::watch_upstreams`](crate::Gateway::watch_upstreams)).
        retry_in: Duration,
    },
    /// Its client could not be made (e.g. its `bearer_env` is not set): it
    /// is never tried again (until a reload changes it).
    Dead,
}

impl UpstreamState {
    /// `up`, `starting`, `waiting`, `backing off` or `dead`.
    pub fn label(&self) -> &'static str {
        match self {
            UpstreamState::Up => "up",
            UpstreamState::Starting => "starting",
            UpstreamState::Waiting => "waiting",
            UpstreamState::BackingOff { .. } => "backing off",
            UpstreamState::Dead => "dead",
        }
    }
}

/// How an upstream's listings went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Health {
    /// Whether its last listing succeeded; `None` until one finished.
    last_listing_ok: Option<bool>,
    /// When the watcher lists it again after a failed listing.
    retry_at: Option<Instant>,
}

impl Health {
    /// Records a listing that finished.
    pub(crate) fn listed(&mut self, ok: bool) {
        self.last_listing_ok = Some(ok);
        self.retry_at = None;
    }

    /// Records that the next attempt comes at `at`.
    pub(crate) fn retry_at(&mut self, at: Instant) {
        self.retry_at = Some(at);
    }

    /// The state of an upstream with this health, with a client or not,
    /// started or not, at `now`.
    pub(crate) fn state(&self, has_client: bool, started: bool, now: Instant) -> UpstreamState {
        if !has_client {
            return UpstreamState::Dead;
        }
        if !started {
            return UpstreamState::Waiting;
        }
        match self.last_listing_ok {
            None => UpstreamState::Starting,
            Some(true) => UpstreamState::Up,
            Some(false) => UpstreamState::BackingOff {
                retry_in: self
                    .retry_at
                    .map_or(Duration::ZERO, |at| at.saturating_duration_since(now)),
            },
        }
    }
}

/// How `transport` reaches its upstream, without secrets.
pub(crate) fn kind_of(transport: &UpstreamTransport) -> UpstreamKind {
    match transport {
        UpstreamTransport::Command(command) => UpstreamKind::Stdio {
            command: command.clone(),
        },
        UpstreamTransport::Url { url, .. } => UpstreamKind::Http {
            url: without_secrets(url),
        },
    }
}

/// `url` without user information, query and fragment.
fn without_secrets(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        // Not a URL the client could use either; cut what may hold secrets.
        let end = url.find(['?', '#']).unwrap_or(url.len());
        let text = &url[..end];
        return match text.split_once("://") {
            Some((scheme, rest)) => {
                format!(
                    "{scheme}://{}",
                    rest.rsplit_once('@').map_or(rest, |(_, r)| r)
                )
            }
            None => text.to_owned(),
        };
    };
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    parsed.set_query(None);
    parsed.set_fragment(None);
    parsed.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn health(last_listing_ok: Option<bool>, retry_at: Option<Instant>) -> Health {
        Health {
            last_listing_ok,
            retry_at,
        }
    }

    #[test]
    fn without_a_client_it_is_dead_whatever_else_holds() {
        let now = Instant::now();
        for started in [false, true] {
            for ok in [None, Some(true), Some(false)] {
                assert_eq!(
                    health(ok, None).state(false, started, now),
                    UpstreamState::Dead
                );
            }
        }
    }

    #[test]
    fn a_lazy_upstream_not_started_is_waiting() {
        let now = Instant::now();
        assert_eq!(
            health(None, None).state(true, false, now),
            UpstreamState::Waiting
        );
    }

    #[test]
    fn started_it_is_starting_until_a_listing_finishes_then_up_or_backing_off() {
        let now = Instant::now();
        let mut health = Health::default();
        assert_eq!(health.state(true, true, now), UpstreamState::Starting);
        health.listed(true);
        assert_eq!(health.state(true, true, now), UpstreamState::Up);
        health.listed(false);
        assert_eq!(
            health.state(true, true, now),
            UpstreamState::BackingOff {
                retry_in: Duration::ZERO
            }
        );
        health.retry_at(now + Duration::from_secs(4));
        assert_eq!(
            health.state(true, true, now + Duration::from_millis(1_500)),
            UpstreamState::BackingOff {
                retry_in: Duration::from_millis(2_500)
            }
        );
        assert_eq!(
            health.state(true, true, now + Duration::from_secs(5)),
            UpstreamState::BackingOff {
                retry_in: Duration::ZERO
            },
            "past the retry instant: due"
        );
        health.listed(true);
        assert_eq!(health, self::health(Some(true), None));
        assert_eq!(health.state(true, true, now), UpstreamState::Up);
    }

    #[test]
    fn labels() {
        let states = [
            UpstreamState::Up,
            UpstreamState::Starting,
            UpstreamState::Waiting,
            UpstreamState::BackingOff {
                retry_in: Duration::from_secs(1),
            },
            UpstreamState::Dead,
        ];
        let labels: Vec<&str> = states.iter().map(UpstreamState::label).collect();
        assert_eq!(labels, ["up", "starting", "waiting", "backing off", "dead"]);
    }

    #[test]
    fn urls_are_shown_without_user_query_and_fragment() {
        assert_eq!(
            without_secrets("https://me:s3cret@crm.example.com:8443/mcp?key=s3cret#frag"),
            "https://crm.example.com:8443/mcp"
        );
        assert_eq!(
            without_secrets("http://127.0.0.1:9000/mcp"),
            "http://127.0.0.1:9000/mcp"
        );
        assert_eq!(
            without_secrets("http://[::1/mcp?key=s3cret"),
            "http://[::1/mcp"
        );
        assert_eq!(
            kind_of(&UpstreamTransport::Url {
                url: "https://crm.example.com/mcp?token=s3cret".into(),
                bearer_env: Some("CRM_TOKEN".into()),
            }),
            UpstreamKind::Http {
                url: "https://crm.example.com/mcp".into()
            }
        );
        assert_eq!(
            kind_of(&UpstreamTransport::Command(vec![
                "server".into(),
                "--stdio".into()
            ])),
            UpstreamKind::Stdio {
                command: vec!["server".into(), "--stdio".into()]
            }
        );
    }
}
