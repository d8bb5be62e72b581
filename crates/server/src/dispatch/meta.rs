//! The per-request `_meta` every request must carry, checked once.

use std::borrow::Cow;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use toolwire_protocol::{
    ClientCapabilities, ErrorObject, Implementation, LoggingLevel, Params, ProgressToken,
    RawObject, RequestMeta, code, keys, revision_text,
};

use super::view;
use crate::context::CheckedMeta;
use crate::server::Server;

impl Server {
    /// Checks the per-request `_meta` fields every request must carry, read
    /// from the params' text (no map of the params is built).
    pub(super) fn check_meta(
        &self,
        params: Option<&mut Params>,
    ) -> Result<CheckedMeta, ErrorObject> {
        let Some(params) = params.filter(|p| p.member("_meta").is_some()) else {
            return Err(missing("params._meta"));
        };
        match params.take_request_meta() {
            Some(meta) => self.check_decoded(meta),
            None => self.check_meta_members(params.meta()),
        }
    }

    /// [`Server::check_meta`] of a `_meta` whose members decoded.
    fn check_decoded(&self, meta: RequestMeta) -> Result<CheckedMeta, ErrorObject> {
        let version = match meta.protocol_version {
            Some(version) => version,
            None => return Err(missing(keys::PROTOCOL_VERSION)),
        };
        self.check_supported(&version)?;
        let Some(client_capabilities) = meta.client_capabilities else {
            return Err(missing(keys::CLIENT_CAPABILITIES));
        };
        Ok(CheckedMeta {
            protocol_version: version,
            client_capabilities,
            client_info: meta.client_info,
            progress_token: meta.progress_token,
            log_level: meta.log_level,
        })
    }

    /// [`Server::check_meta`] member by member, in the order the errors
    /// are reported: `_meta` (`None`: not an object), then the version,
    /// then each member.
    fn check_meta_members(
        &self,
        meta: Option<Option<&RawObject>>,
    ) -> Result<CheckedMeta, ErrorObject> {
        let Some(Some(meta)) = meta else {
            return Err(ErrorObject::invalid_params(format!(
                "{INVALID_META}: must be an object"
            )));
        };
        let version = self.supported_version(meta.get(keys::PROTOCOL_VERSION))?;
        let client_capabilities = match meta.get(keys::CLIENT_CAPABILITIES) {
            Some(raw) => Arc::new(decode::<ClientCapabilities>(
                raw,
                keys::CLIENT_CAPABILITIES,
            )?),
            None => return Err(missing(keys::CLIENT_CAPABILITIES)),
        };
        Ok(CheckedMeta {
            protocol_version: revision_text(&version),
            client_capabilities,
            client_info: optional::<Implementation>(meta, keys::CLIENT_INFO)?.map(Arc::new),
            progress_token: optional::<ProgressToken>(meta, keys::PROGRESS_TOKEN)?,
            log_level: optional::<LoggingLevel>(meta, keys::LOG_LEVEL)?,
        })
    }

    /// The protocol version `_meta` gives, when it is a string this server
    /// speaks.
    fn supported_version<'t>(
        &self,
        raw: Option<&'t RawValue>,
    ) -> Result<Cow<'t, str>, ErrorObject> {
        let version = match raw {
            None => return Err(missing(keys::PROTOCOL_VERSION)),
            Some(raw) => view::string(Some(raw))
                .ok_or_else(|| bad_meta(keys::PROTOCOL_VERSION, "must be a string"))?,
        };
        self.check_supported(&version)?;
        Ok(version)
    }

    /// Refuses a protocol version this server does not speak.
    fn check_supported(&self, version: &str) -> Result<(), ErrorObject> {
        let supported = &self.inner.config.supported_versions;
        if supported.iter().any(|v| v == version) {
            return Ok(());
        }
        let supported: Vec<&str> = supported.iter().map(String::as_str).collect();
        Err(ErrorObject::unsupported_protocol_version(
            &supported, version,
        ))
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
