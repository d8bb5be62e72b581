//! `roots/list`: the filesystem roots a client exposes.
//!
//! Sent by a server inside an `InputRequiredResult`; the client answers with a
//! [`ListRootsResult`] in `inputResponses`.

use serde::{Deserialize, Serialize};

use crate::meta::Meta;

/// Method name of `roots/list`.
pub const METHOD_LIST_ROOTS: &str = "roots/list";

/// A directory or file the client lets the server work in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// The root's URI (`file://` for now).
    pub uri: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Root {
    /// A root with a URI and no name.
    pub fn new(uri: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            ..Default::default()
        }
    }
}

/// The client's answer to `roots/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
}
