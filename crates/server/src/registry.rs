//! The tool registry: compiled, ordered, and changeable while the server runs.

use std::sync::{Arc, RwLock};

use serde_json::Value;
use tokio::sync::watch;
use toolwire_protocol::Tool;
use toolwire_schema::{CompiledSchema, HeaderParam};

use crate::context::Principal;
use crate::tool::{ErasedToolHandler, ToolBuilder};

/// Why a tool could not be registered. Every variant names the tool.
#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    /// The name breaks the Tools page naming rules.
    #[error("tool {tool:?}: invalid name: {source}")]
    InvalidName {
        /// The tool.
        tool: String,
        /// The rule broken.
        source: toolwire_schema::NameError,
    },
    /// Another tool already has this name.
    #[error("tool {tool:?}: a tool with this name is already registered (names must be unique)")]
    Duplicate {
        /// The tool.
        tool: String,
    },
    /// No handler was set.
    #[error("tool {tool:?}: no handler set (call .handler or .raw_handler)")]
    NoHandler {
        /// The tool.
        tool: String,
    },
    /// The input or output schema does not compile.
    #[error("tool {tool:?}: {which} does not compile: {source}")]
    Schema {
        /// The tool.
        tool: String,
        /// `inputSchema` or `outputSchema`.
        which: &'static str,
        /// What is wrong.
        source: toolwire_schema::SchemaError,
    },
    /// An `x-mcp-header` annotation breaks a rule.
    #[error("tool {tool:?}: {source}")]
    Header {
        /// The tool.
        tool: String,
        /// The rule broken.
        source: toolwire_schema::HeaderRuleError,
    },
    /// No tool by that name (for replace, remove, enable, disable).
    #[error("tool {tool:?}: no such tool")]
    NotFound {
        /// The tool.
        tool: String,
    },
}

/// A tool ready to be called: its definition, compiled schemas and handler.
pub(crate) struct RegisteredTool {
    pub definition: Tool,
    pub handler: ErasedToolHandler,
    pub input_schema: CompiledSchema,
    pub output_schema: Option<CompiledSchema>,
    pub header_params: Vec<HeaderParam>,
    pub required_scopes: Vec<String>,
    pub enabled: bool,
}

impl RegisteredTool {
    /// Compiles a builder's schemas and checks its name and headers.
    pub fn compile(builder: ToolBuilder) -> Result<Self, RegistrationError> {
        let tool = builder.definition.name.clone();
        toolwire_schema::check_tool_name(&tool).map_err(|source| {
            RegistrationError::InvalidName {
                tool: tool.clone(),
                source,
            }
        })?;
        let handler = builder
            .handler
            .ok_or_else(|| RegistrationError::NoHandler { tool: tool.clone() })?;
        let input = Value::Object(builder.definition.input_schema.clone());
        let input_schema = compile(&tool, "inputSchema", &input)?;
        let output_schema = match &builder.definition.output_schema {
            Some(schema) => Some(compile(
                &tool,
                "outputSchema",
                &Value::Object(schema.clone()),
            )?),
            None => None,
        };
        let header_params =
            toolwire_schema::header_params(&input).map_err(|source| RegistrationError::Header {
                tool: tool.clone(),
                source,
            })?;
        warn_sensitive_headers(&tool, &input, &header_params);
        Ok(RegisteredTool {
            definition: builder.definition,
            handler,
            input_schema,
            output_schema,
            header_params,
            required_scopes: builder.required_scopes,
            enabled: true,
        })
    }

    /// True when `principal` may see and call this tool.
    pub fn permits(&self, principal: &Principal) -> bool {
        self.required_scopes.iter().all(|s| principal.has_scope(s))
    }
}

fn compile(
    tool: &str,
    which: &'static str,
    schema: &Value,
) -> Result<CompiledSchema, RegistrationError> {
    CompiledSchema::compile(schema).map_err(|source| RegistrationError::Schema {
        tool: tool.to_owned(),
        which,
        source,
    })
}

fn warn_sensitive_headers(tool: &str, input: &Value, params: &[HeaderParam]) {
    for param in params {
        if toolwire_schema::looks_sensitive(param, input) {
            tracing::warn!(
                tool,
                header = %param.header,
                "x-mcp-header exposes a parameter that looks sensitive; header values are visible to intermediaries"
            );
        }
    }
}

/// The ordered set of tools, swapped atomically on every change.
pub(crate) struct ToolRegistry {
    tools: RwLock<Arc<Vec<Arc<RegisteredTool>>>>,
    changes: watch::Sender<u64>,
}

impl ToolRegistry {
    pub fn new() -> Self {
        ToolRegistry {
            tools: RwLock::new(Arc::new(Vec::new())),
            changes: watch::channel(0).0,
        }
    }

    /// A consistent snapshot of every tool, in registration order.
    pub fn snapshot(&self) -> Arc<Vec<Arc<RegisteredTool>>> {
        Arc::clone(&self.tools.read().expect("registry lock"))
    }

    /// The enabled tool named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<RegisteredTool>> {
        self.snapshot()
            .iter()
            .find(|t| t.enabled && t.definition.name == name)
            .cloned()
    }

    /// Watch for changes: the value increases on every change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Adds a tool at the end; fails on a duplicate name.
    pub fn add(&self, tool: RegisteredTool) -> Result<(), RegistrationError> {
        self.edit(|tools| {
            if tools
                .iter()
                .any(|t| t.definition.name == tool.definition.name)
            {
                return Err(RegistrationError::Duplicate {
                    tool: tool.definition.name.clone(),
                });
            }
            tools.push(Arc::new(tool));
            Ok(())
        })
    }

    /// Replaces the tool of the same name in place, keeping its position.
    pub fn replace(&self, tool: RegisteredTool) -> Result<(), RegistrationError> {
        self.edit(|tools| {
            let slot = position(tools, &tool.definition.name)?;
            tools[slot] = Arc::new(tool);
            Ok(())
        })
    }

    /// Removes a tool.
    pub fn remove(&self, name: &str) -> Result<(), RegistrationError> {
        self.edit(|tools| {
            let slot = position(tools, name)?;
            tools.remove(slot);
            Ok(())
        })
    }

    /// Enables or disables a tool; a disabled tool is neither listed nor callable.
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), RegistrationError> {
        self.edit(|tools| {
            let slot = position(tools, name)?;
            if tools[slot].enabled != enabled {
                let old = &tools[slot];
                tools[slot] = Arc::new(RegisteredTool {
                    definition: old.definition.clone(),
                    handler: Arc::clone(&old.handler),
                    input_schema: old.input_schema.clone(),
                    output_schema: old.output_schema.clone(),
                    header_params: old.header_params.clone(),
                    required_scopes: old.required_scopes.clone(),
                    enabled,
                });
            }
            Ok(())
        })
    }

    fn edit<F>(&self, change: F) -> Result<(), RegistrationError>
    where
        F: FnOnce(&mut Vec<Arc<RegisteredTool>>) -> Result<(), RegistrationError>,
    {
        {
            let mut guard = self.tools.write().expect("registry lock");
            let mut tools = Vec::clone(&guard);
            change(&mut tools)?;
            *guard = Arc::new(tools);
        }
        self.changes.send_modify(|version| *version += 1);
        Ok(())
    }
}

fn position(tools: &[Arc<RegisteredTool>], name: &str) -> Result<usize, RegistrationError> {
    tools
        .iter()
        .position(|t| t.definition.name == name)
        .ok_or_else(|| RegistrationError::NotFound {
            tool: name.to_owned(),
        })
}
