//! Multi round-trip requests: `InputRequiredResult`, input requests and responses.

use crate::JsonObject;

/// Answers to input requests, by the keys of the `inputRequests` map.
///
/// Kept raw so that a server can check each answer on its own; see
/// [`InputResponse`] for the typed form.
pub type InputResponses = JsonObject;
