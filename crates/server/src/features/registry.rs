//! The tool registry: compiled, ordered, and changeable while the server runs.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use serde_json::Value;
use toolwire_protocol::Tool;
use toolwire_schema::{CompiledSchema, HeaderParam};

use crate::features::cache::CacheHint;
use crate::features::extract::{ErasedToolHandler, States};
use crate::features::tool::ToolBuilder;
use crate::store::change_feed::{Change, ChangeFeed};

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
    /// Another entry already has this name.
    #[error(
        "{kind} {tool:?}: a {kind} with this name is already registered (names must be unique)"
    )]
    Duplicate {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The name (or URI).
        tool: String,
    },
    /// No handler was set.
    #[error("{kind} {tool:?}: no handler set (call .handler)")]
    NoHandler {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The name (or URI).
        tool: String,
    },
    /// The handler cannot serve the tool (a state it takes was not given,
    /// or it takes two arguments types).
    #[error("tool {tool:?}: {reason}")]
    Handler {
        /// The tool.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// A URI template is not RFC 6570 level 1.
    #[error("resource template {template:?}: {reason}")]
    Template {
        /// The template.
        template: String,
        /// What is wrong.
        reason: String,
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
    /// [`ToolBuilder::header`] names a parameter the input schema lacks.
    #[error("tool {tool:?}: header({param:?}, ..) names no property of the input schema")]
    UnknownHeaderParam {
        /// The tool.
        tool: String,
        /// The parameter.
        param: String,
    },
    /// Nothing by that name (for replace, remove, enable, disable).
    #[error("{kind} {tool:?}: no such {kind}")]
    NotFound {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The name (or URI).
        tool: String,
    },
}

/// A tool ready to be called: its definition, compiled schemas and handler.
pub(crate) struct RegisteredTool {
    pub definition: Tool,
    /// `definition` as JSON, made once here: `tools/list` copies it instead
    /// of converting the definition on every call.
    pub listed: Value,
    /// `listed` encoded, for transports that write a page's JSON directly.
    pub encoded: Box<str>,
    /// Whether `encoded` is ASCII: then the invisible-text rule has nothing
    /// to find in it, and a page need not scan it again.
    pub encoded_is_ascii: bool,
    pub handler: ErasedToolHandler,
    pub input_schema: CompiledSchema,
    pub output_schema: Option<CompiledSchema>,
    pub header_params: Vec<HeaderParam>,
    pub required_scopes: Vec<String>,
    pub rate_limit: Option<crate::store::rate_limit::RateLimit>,
    pub input_limits: Option<crate::security::limits::InputLimits>,
    pub task_support: crate::features::tasks::TaskSupport,
    pub before_task: Vec<String>,
}

impl RegisteredTool {
    /// Compiles a builder's schemas and checks its name and headers.
    /// `states` are the server's; the builder's own go over them.
    pub fn compile(builder: ToolBuilder, states: &States) -> Result<Self, RegistrationError> {
        let tool = builder.definition.name.clone();
        toolwire_schema::check_tool_name(&tool).map_err(|source| {
            RegistrationError::InvalidName {
                tool: tool.clone(),
                source,
            }
        })?;
        if let Some(param) = builder.unknown_header_param() {
            return Err(RegistrationError::UnknownHeaderParam {
                tool,
                param: param.to_owned(),
            });
        }
        let unbound = builder
            .handler
            .ok_or_else(|| RegistrationError::NoHandler {
                kind: "tool",
                tool: tool.clone(),
            })?;
        let handler =
            unbound(&states.with(&builder.states)).map_err(|e| RegistrationError::Handler {
                tool: tool.clone(),
                reason: e.to_string(),
            })?;
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
        let listed = serde_json::to_value(&builder.definition).unwrap_or_default();
        let encoded = listed.to_string().into_boxed_str();
        Ok(RegisteredTool {
            encoded_is_ascii: encoded.is_ascii(),
            encoded,
            listed,
            definition: builder.definition,
            handler,
            input_schema,
            output_schema,
            header_params,
            required_scopes: builder.required_scopes,
            rate_limit: builder.rate_limit,
            input_limits: builder.input_limits,
            task_support: builder.task_support,
            before_task: builder.before_task,
        })
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

/// Something a registry holds, found by name.
pub(crate) trait Named {
    /// What kind of entry this is, for error messages.
    const KIND: &'static str;
    /// The unique lookup key: a name, or a URI for resources.
    fn key(&self) -> &str;
}

impl Named for RegisteredTool {
    const KIND: &'static str = "tool";
    fn key(&self) -> &str {
        &self.definition.name
    }
}

/// One entry, whether it is currently offered, and its number: entries are
/// numbered in registration order (list cursors name the last one sent).
pub(crate) struct Slot<T> {
    pub item: Arc<T>,
    pub enabled: bool,
    pub seq: u64,
}

impl<T> Clone for Slot<T> {
    fn clone(&self) -> Self {
        Slot {
            item: Arc::clone(&self.item),
            enabled: self.enabled,
            seq: self.seq,
        }
    }
}

/// The entries of a registry at one moment: in registration order, with an
/// index by name, so that a lookup or a list page costs the same with ten
/// entries or ten thousand.
pub(crate) struct Snapshot<T> {
    slots: Vec<Slot<T>>,
    /// Each entry's position in `slots`, by name. The names are the
    /// server's own, so a fast hasher serves (no client chooses the keys).
    by_name: HashMap<String, usize, foldhash::fast::RandomState>,
    /// Whether any entry answers true to the question asked the first time
    /// (the list asks whether any requires scopes), kept for the snapshot.
    any: OnceLock<bool>,
}

impl<T: Named> Snapshot<T> {
    fn new(slots: Vec<Slot<T>>) -> Self {
        let by_name = slots
            .iter()
            .enumerate()
            .map(|(at, slot)| (slot.item.key().to_owned(), at))
            .collect();
        Snapshot {
            slots,
            by_name,
            any: OnceLock::new(),
        }
    }

    /// The slot of the entry named `name`.
    pub fn slot(&self, name: &str) -> Option<&Slot<T>> {
        self.by_name.get(name).map(|at| &self.slots[*at])
    }

    /// The slots after the entry numbered `after` (all when `None`).
    pub fn after(&self, after: Option<u64>) -> &[Slot<T>] {
        let start = match after {
            Some(after) => self.slots.partition_point(|slot| slot.seq <= after),
            None => 0,
        };
        &self.slots[start..]
    }

    /// Whether any entry, enabled or not, satisfies `test`; `test` must be
    /// the same at every call (the answer is kept).
    pub fn any_entry(&self, test: impl Fn(&T) -> bool) -> bool {
        *self
            .any
            .get_or_init(|| self.slots.iter().any(|slot| test(&slot.item)))
    }
}

impl<T> std::ops::Deref for Snapshot<T> {
    type Target = [Slot<T>];

    fn deref(&self) -> &[Slot<T>] {
        &self.slots
    }
}

/// An ordered set of named entries (tools, prompts, resources), swapped
/// atomically on every change; each change is published to the feed.
pub(crate) struct Registry<T> {
    slots: RwLock<Arc<Snapshot<T>>>,
    /// The number the next registered entry gets.
    next_seq: std::sync::atomic::AtomicU64,
    feed: Arc<dyn ChangeFeed>,
    /// What an edit publishes (`None`: nobody listens for this list).
    change: Option<Change>,
    /// The caching hints of this list's results in place of the server's
    /// (`None`: the server's).
    list_cache: RwLock<Option<CacheHint>>,
}

impl<T: Named> Registry<T> {
    pub fn new(feed: Arc<dyn ChangeFeed>, change: Option<Change>) -> Self {
        Registry {
            slots: RwLock::new(Arc::new(Snapshot::new(Vec::new()))),
            next_seq: std::sync::atomic::AtomicU64::new(0),
            feed,
            change,
            list_cache: RwLock::new(None),
        }
    }

    /// The caching hints set for this list, if any.
    pub fn list_cache(&self) -> Option<CacheHint> {
        *self.list_cache.read().expect("registry lock")
    }

    /// Sets (or, with `None`, unsets) the caching hints of this list.
    pub fn set_list_cache(&self, hint: Option<CacheHint>) {
        *self.list_cache.write().expect("registry lock") = hint;
    }

    /// A consistent snapshot of every entry, in registration order.
    pub fn snapshot(&self) -> Arc<Snapshot<T>> {
        Arc::clone(&self.slots.read().expect("registry lock"))
    }

    /// The enabled entries, in order.
    pub fn enabled(&self) -> Vec<Arc<T>> {
        self.snapshot()
            .iter()
            .filter(|s| s.enabled)
            .map(|s| Arc::clone(&s.item))
            .collect()
    }

    /// The enabled entry named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<T>> {
        // Under the read lock: no count taken on the snapshot itself.
        self.slots
            .read()
            .expect("registry lock")
            .slot(name)
            .filter(|s| s.enabled)
            .map(|s| Arc::clone(&s.item))
    }

    /// Tells listeners the list changed without changing it.
    pub fn touch(&self) {
        if let Some(change) = &self.change {
            self.feed.publish(change.clone());
        }
    }

    /// True when nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.snapshot().is_empty()
    }

    /// Adds an entry at the end; fails on a duplicate name.
    pub fn add(&self, item: T) -> Result<(), RegistrationError> {
        self.edit(|slots| self.append(slots, vec![item]))
    }

    /// A registry holding `items` from the start, in order (one snapshot,
    /// and no change published: nobody has seen it yet); fails on the first
    /// duplicate name.
    pub fn with_entries(
        feed: Arc<dyn ChangeFeed>,
        change: Option<Change>,
        items: Vec<T>,
    ) -> Result<Self, RegistrationError> {
        let registry = Registry::new(feed, change);
        {
            let mut guard = registry.slots.write().expect("registry lock");
            let mut slots = Vec::with_capacity(items.len());
            registry.append(&mut slots, items)?;
            *guard = Arc::new(Snapshot::new(slots));
        }
        Ok(registry)
    }

    /// Appends `items` to `slots`, numbered; fails on the first name that
    /// is already there.
    fn append(&self, slots: &mut Vec<Slot<T>>, items: Vec<T>) -> Result<(), RegistrationError> {
        let mut names: std::collections::HashSet<String> =
            slots.iter().map(|s| s.item.key().to_owned()).collect();
        for item in items {
            if !names.insert(item.key().to_owned()) {
                return Err(RegistrationError::Duplicate {
                    kind: T::KIND,
                    tool: item.key().to_owned(),
                });
            }
            let seq = self
                .next_seq
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            slots.push(Slot {
                item: Arc::new(item),
                enabled: true,
                seq,
            });
        }
        Ok(())
    }

    /// Replaces the entry of the same name in place, keeping its position.
    pub fn replace(&self, item: T) -> Result<(), RegistrationError> {
        self.edit(|slots| {
            let slot = position(slots, item.key())?;
            slots[slot].item = Arc::new(item);
            Ok(())
        })
    }

    /// Removes an entry.
    pub fn remove(&self, name: &str) -> Result<(), RegistrationError> {
        self.edit(|slots| {
            let slot = position(slots, name)?;
            slots.remove(slot);
            Ok(())
        })
    }

    /// Enables or disables an entry; a disabled one is neither listed nor usable.
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), RegistrationError> {
        self.edit(|slots| {
            let slot = position(slots, name)?;
            slots[slot].enabled = enabled;
            Ok(())
        })
    }

    fn edit<F>(&self, change: F) -> Result<(), RegistrationError>
    where
        F: FnOnce(&mut Vec<Slot<T>>) -> Result<(), RegistrationError>,
    {
        {
            let mut guard = self.slots.write().expect("registry lock");
            let mut slots = guard.slots.clone();
            change(&mut slots)?;
            *guard = Arc::new(Snapshot::new(slots));
        }
        self.touch();
        Ok(())
    }
}

fn position<T: Named>(slots: &[Slot<T>], name: &str) -> Result<usize, RegistrationError> {
    slots
        .iter()
        .position(|s| s.item.key() == name)
        .ok_or_else(|| RegistrationError::NotFound {
            kind: T::KIND,
            tool: name.to_owned(),
        })
}
