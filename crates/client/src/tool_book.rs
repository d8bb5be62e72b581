//! What the client knows about a server's tools from the last complete
//! listing: each usable definition, with its `x-mcp-header` parameters and
//! its output schema (compiled on first use), and each rejected one.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;
use toolwire_protocol::CallToolResult;
use toolwire_schema::{CompiledSchema, HeaderParam};

use crate::error::Error;
use crate::safety::ToolInfo;

/// What the client knows about one tool.
#[derive(Debug)]
pub(crate) struct ToolEntry {
    pub info: ToolInfo,
    pub header_params: Vec<HeaderParam>,
    output_schema: OnceLock<Result<CompiledSchema, String>>,
}

impl ToolEntry {
    pub fn new(info: ToolInfo, header_params: Vec<HeaderParam>) -> Self {
        ToolEntry {
            info,
            header_params,
            output_schema: OnceLock::new(),
        }
    }

    /// A result whose `structuredContent` breaks the tool's `outputSchema` is
    /// an error, never passed on. `isError` results are not checked.
    pub fn check_output(&self, result: &CallToolResult) -> Result<(), Error> {
        let Some(schema) = &self.info.tool.output_schema else {
            return Ok(());
        };
        let tool = self.info.name().to_owned();
        let compiled = self.output_schema.get_or_init(|| {
            CompiledSchema::compile(&Value::Object(schema.clone())).map_err(|e| e.to_string())
        });
        let compiled = compiled.as_ref().map_err(|e| Error::OutputSchema {
            tool: tool.clone(),
            reason: format!("the outputSchema cannot be used: {e}"),
        })?;
        let Some(structured) = &result.structured_content else {
            return Err(Error::OutputSchema {
                tool,
                reason: "the tool has an outputSchema but the result has no structuredContent"
                    .into(),
            });
        };
        compiled
            .validate(structured)
            .map_err(|errors| Error::OutputSchema {
                tool,
                reason: errors.to_string(),
            })
    }
}

/// The tools from the last complete listing.
#[derive(Debug, Default)]
pub(crate) struct ToolBook {
    entries: HashMap<String, Arc<ToolEntry>>,
    rejected: HashMap<String, String>,
    loaded: bool,
}

impl ToolBook {
    /// An empty book for a listing in progress; it counts as loaded.
    pub fn listing() -> Self {
        ToolBook {
            loaded: true,
            ..Default::default()
        }
    }

    /// True once a complete listing is in (and not invalidated since).
    pub fn is_loaded(&self) -> bool {
        self.loaded
    }

    /// True when `name` is already admitted or rejected.
    pub fn has(&self, name: &str) -> bool {
        self.entries.contains_key(name) || self.rejected.contains_key(name)
    }

    pub fn admit(&mut self, name: String, entry: ToolEntry) {
        self.entries.insert(name, Arc::new(entry));
    }

    pub fn reject(&mut self, name: String, reason: String) {
        self.rejected.insert(name, reason);
    }

    /// Why `name` was rejected, if it was.
    pub fn rejection(&self, name: &str) -> Option<&String> {
        self.rejected.get(name)
    }

    pub fn entry(&self, name: &str) -> Option<Arc<ToolEntry>> {
        self.entries.get(name).cloned()
    }

    /// Forgets the listing (after `notifications/tools/list_changed`).
    pub fn invalidate(&mut self) {
        self.loaded = false;
    }
}
