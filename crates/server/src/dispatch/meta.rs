//! The per-request `_meta` every request must carry, checked once.

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use toolwire_protocol::{
    ClientCapabilities, ErrorObject, Implementation, LoggingLevel, Params, ProgressToken,
    RawObject, code, keys,
};

use super::view;
use crate::context::CheckedMeta;
use crate::server::Server;

impl Server {
    /// Checks the per-request `_meta` fields every request must carry, read
    /// from the params' text (no map of the params is built).
    pub(super) fn check_meta(&self, params: Option<&Params>) -> Result<CheckedMeta, ErrorObject> {
        let meta = match params.and_then(Params::meta) {
            None => return Err(missing("params._meta")),
            Some(Some(meta)) => meta,
            Some(None) => {
                return Err(ErrorObject::invalid_params(format!(
                    "{INVALID_META}: must be an object"
                )));
            }
        };
        let version = match meta.get(keys::PROTOCOL_VERSION) {
            None => return Err(missing(keys::PROTOCOL_VERSION)),
            Some(raw) => view::string(Some(raw))
                .ok_or_else(|| bad_meta(keys::PROTOCOL_VERSION, "must be a string"))?,
        };
        let supported = &self.inner.config.supported_versions;
        if !supported.iter().any(|v| *v == version) {
            let supported: Vec<&str> = supported.iter().map(String::as_str).collect();
            return Err(ErrorObject::unsupported_protocol_version(
                &supported, &version,
            ));
        }
        let client_capabilities = match meta.get(keys::CLIENT_CAPABILITIES) {
            Some(raw) => decode::<ClientCapabilities>(raw, keys::CLIENT_CAPABILITIES)?,
            None => return Err(missing(keys::CLIENT_CAPABILITIES)),
        };
        Ok(CheckedMeta {
            protocol_version: version.into_owned(),
            client_capabilities,
            client_info: optional::<Implementation>(meta, keys::CLIENT_INFO)?,
            progress_token: optional::<ProgressToken>(meta, keys::PROGRESS_TOKEN)?,
            log_level: optional::<LoggingLevel>(meta, keys::LOG_LEVEL)?,
        })
    }
}

/// A `_meta` member read as `T`, or the error that names it. Text that
/// does not read as `T` is read again as a JSON value, so the outcome is a
/// value's (the last of duplicate members counts, no position in errors).
fn decode<T: DeserializeOwned>(raw: &RawValue, key: &str) -> Result<T, ErrorObject> {
    if let Ok(value) = serde_json::from_str(raw.get()) {
        return Ok(value);
    }
    serde_json::from_str::<Value>(raw.get())
        .and_then(T::deserialize)
        .map_err(|e| bad_meta(key, &e.to_string()))
}

/// [`decode`] of a member that may be absent.
fn optional<T: DeserializeOwned>(meta: &RawObject, key: &str) -> Result<Option<T>, ErrorObject> {
    meta.get(key).map(|raw| decode(raw, key)).transpose()
}

fn missing(what: &str) -> ErrorObject {
    ErrorObject::invalid_params(missing_meta_message(what))
}

const MISSING_META: &str = "Missing required request metadata: ";
const INVALID_META: &str = "Invalid _meta";

fn missing_meta_message(what: &str) -> String {
    format!("{MISSING_META}{what}")
}

fn bad_meta(key: &str, problem: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("{INVALID_META}[{key:?}]: {problem}"))
}

/// True when `error` is the dispatcher's rejection of the request metadata
/// (HTTP answers these with 400, other -32602 errors with 200).
pub(crate) fn is_meta_error(error: &ErrorObject) -> bool {
    error.code == code::INVALID_PARAMS
        && (error.message.starts_with(MISSING_META) || error.message.starts_with(INVALID_META))
}
