//! The legacy era (2025-11-25, 2025-06-18, 2025-03-26): a client that opens
//! with `initialize` gets a session, on stdio for the process and over HTTP
//! under an `Mcp-Session-Id`. The transports decide the era; everything
//! here serves a session through the same dispatcher as the stateless era.

mod changes;
mod peer;
mod response;
mod session;

pub(crate) use changes::forward_changes;
pub(crate) use response::LegacyResponse;
pub(crate) use session::LegacySession;

use toolwire_protocol::Request;

/// True when `request` carries the per-request `_meta` of 2026-07-28 (its
/// protocol version): it is served statelessly whatever else is going on.
pub(crate) fn is_modern(request: &Request) -> bool {
    crate::dispatch::view::protocol_version_text(request.params.as_ref()).is_some()
}

/// True when `request` opens a legacy session: an `initialize` without
/// modern `_meta` (a modern one is answered as the removed method it is).
pub(crate) fn opens_session(request: &Request) -> bool {
    request.method == "initialize" && !is_modern(request)
}
