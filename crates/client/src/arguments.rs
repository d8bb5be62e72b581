//! A tool call's arguments as the JSON object the protocol sends.

use serde::Serialize;
use serde_json::Value;
use toolwire_protocol::JsonObject;

use crate::error::Error;

/// Arguments as a JSON object; `null` means none.
pub(crate) fn to_arguments(arguments: impl Serialize) -> Result<JsonObject, Error> {
    match serde_json::to_value(arguments) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(Value::Null) => Ok(JsonObject::new()),
        Ok(other) => Err(Error::InvalidArguments(format!(
            "tool arguments must be a JSON object, not {other}"
        ))),
        Err(e) => Err(Error::InvalidArguments(e.to_string())),
    }
}
