//! The per-request `_meta` every request must carry, checked once.

use serde::Deserialize;
use serde_json::Value;
use toolwire_protocol::{
    ClientCapabilities, ErrorObject, Implementation, JsonObject, LoggingLevel, ProgressToken, code,
    keys,
};

use crate::context::CheckedMeta;
use crate::server::Server;

impl Server {
    /// Checks the per-request `_meta` fields every request must carry.
    pub(super) fn check_meta(
        &self,
        params: Option<&JsonObject>,
    ) -> Result<CheckedMeta, ErrorObject> {
        // Read in place: the request keeps its `_meta`, nothing is copied.
        let meta = match params.and_then(|p| p.get("_meta")) {
            Some(Value::Object(meta)) => meta,
            Some(_) => {
                return Err(ErrorObject::invalid_params(format!(
                    "{INVALID_META}: must be an object"
                )));
            }
            None => {
                return Err(ErrorObject::invalid_params(missing_meta_message(
                    "params._meta",
                )));
            }
        };
        let version = match meta.get(keys::PROTOCOL_VERSION) {
            Some(Value::String(v)) => v.clone(),
            Some(_) => return Err(bad_meta(keys::PROTOCOL_VERSION, "must be a string")),
            None => {
                return Err(ErrorObject::invalid_params(missing_meta_message(
                    keys::PROTOCOL_VERSION,
                )));
            }
        };
        let supported = &self.inner.config.supported_versions;
        if !supported.contains(&version) {
            let supported: Vec<&str> = supported.iter().map(String::as_str).collect();
            return Err(ErrorObject::unsupported_protocol_version(
                &supported, &version,
            ));
        }
        let field = |key: &str| meta.get(key);
        let client_capabilities: ClientCapabilities =
            match field(keys::CLIENT_CAPABILITIES).map(ClientCapabilities::deserialize) {
                Some(Ok(caps)) => caps,
                Some(Err(e)) => return Err(bad_meta(keys::CLIENT_CAPABILITIES, &e.to_string())),
                None => {
                    return Err(ErrorObject::invalid_params(missing_meta_message(
                        keys::CLIENT_CAPABILITIES,
                    )));
                }
            };
        Ok(CheckedMeta {
            protocol_version: version,
            client_capabilities,
            client_info: field(keys::CLIENT_INFO)
                .map(Implementation::deserialize)
                .transpose()
                .map_err(|e| bad_meta(keys::CLIENT_INFO, &e.to_string()))?,
            progress_token: field(keys::PROGRESS_TOKEN)
                .map(ProgressToken::deserialize)
                .transpose()
                .map_err(|e| bad_meta(keys::PROGRESS_TOKEN, &e.to_string()))?,
            log_level: field(keys::LOG_LEVEL)
                .map(LoggingLevel::deserialize)
                .transpose()
                .map_err(|e| bad_meta(keys::LOG_LEVEL, &e.to_string()))?,
        })
    }
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
