//! Defining tools: typed async handlers, generated schemas, metadata.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use schemars::JsonSchema;
use toolwire_protocol::{JsonObject, Meta, Tool, ToolAnnotations};

use crate::context::RequestContext;
use crate::context::output::{BoxFuture, IntoToolOutput, schema_object_for};
use crate::features::extract::{Bind, BindError, ErasedToolHandler, States, ToolHandler};
use crate::features::tasks::TaskSupport;
use crate::security::limits::InputLimits;
use crate::setters::setters;
use crate::store::rate_limit::RateLimit;

/// A handler before registration gives it its states.
pub(crate) type UnboundToolHandler =
    Arc<dyn Fn(&States) -> Result<ErasedToolHandler, BindError> + Send + Sync>;

/// The arguments of a tool that takes none: its schema is
/// `{"type":"object","additionalProperties":false}` and a call may omit `arguments`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

impl JsonSchema for NoArgs {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NoArgs".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object", "additionalProperties": false})
    }
}

/// A tool definition being built: metadata plus one handler.
///
/// ```
/// use toolwire_server::ToolBuilder;
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Echo { text: String }
/// let tool = ToolBuilder::new("echo")
///     .description("Echoes the text back")
///     .handler(|args: Echo| async move { args.text });
/// assert_eq!(tool.definition().input_schema["required"][0], "text");
/// ```
#[derive(Clone)]
pub struct ToolBuilder {
    pub(crate) definition: Tool,
    pub(crate) handler: Option<UnboundToolHandler>,
    /// This tool's own states, over the server's.
    pub(crate) states: States,
    /// `(parameter, header)` pairs given with [`ToolBuilder::header`].
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) required_scopes: Vec<String>,
    pub(crate) rate_limit: Option<RateLimit>,
    pub(crate) input_limits: Option<InputLimits>,
    pub(crate) task_support: TaskSupport,
    /// Input keys asked by multi round-trip before a task is created.
    pub(crate) before_task: Vec<String>,
}

impl std::fmt::Debug for ToolBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolBuilder")
            .field("definition", &self.definition)
            .field("has_handler", &self.handler.is_some())
            .finish()
    }
}

impl ToolBuilder {
    /// Starts a tool named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        ToolBuilder {
            definition: Tool {
                name: name.into(),
                input_schema: schema_object_for::<NoArgs>(),
                ..Default::default()
            },
            handler: None,
            states: States::default(),
            headers: Vec::new(),
            required_scopes: Vec::new(),
            rate_limit: None,
            input_limits: None,
            task_support: TaskSupport::Never,
            before_task: Vec::new(),
        }
    }

    setters! {
        /// The display name.
        text title;
        /// What the tool does, for the model.
        text description;
        /// Adds an icon.
        icon;
        /// Behaviour hints.
        value annotations: ToolAnnotations;
        /// Tool-level `_meta`.
        value meta: Meta;
    }

    /// Replaces the output schema (kept exactly as given).
    pub fn output_schema(mut self, schema: JsonObject) -> Self {
        self.definition.output_schema = Some(schema);
        self
    }

    /// Limits calls of this tool per principal (on top of the server-wide
    /// limit on all tool calls). A call over the limit gets a tool execution
    /// error saying when to retry.
    pub fn rate_limit(mut self, limit: RateLimit) -> Self {
        self.rate_limit = Some(limit);
        self
    }

    /// Input limits for this tool, instead of the server's
    /// ([`crate::ServerBuilder::input_limits`]).
    pub fn input_limits(mut self, limits: InputLimits) -> Self {
        self.input_limits = Some(limits);
        self
    }

    /// Whether calls run as tasks (the Tasks extension): the same handler
    /// runs either way. Default [`TaskSupport::Never`].
    ///
    /// ```
    /// use toolwire_server::{NoArgs, RequestContext, TaskSupport, ToolBuilder};
    /// let tool = ToolBuilder::new("crawl")
    ///     .task_support(TaskSupport::Always)
    ///     .handler(|_: NoArgs, cx: RequestContext| async move {
    ///         tokio::select! {
    ///             () = cx.cancellation().cancelled() => "stopped",
    ///             () = tokio::time::sleep(std::time::Duration::from_secs(60)) => "crawled",
    ///         }
    ///     });
    /// # drop(tool);
    /// ```
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.task_support = support;
        self
    }

    /// Input the handler asks for by multi round-trip on the `tools/call`
    /// itself, before a task is created (SEP-2663: MRTR exchanges are
    /// resolved before `CreateTaskResult`). Until the request brings answers
    /// to all of `keys` the handler runs inline, as for a tool without
    /// tasks; it must ask for them before any slow work. Then the task is
    /// created, and its handler sees those answers.
    ///
    /// ```
    /// use toolwire_server::{NoArgs, RequestContext, TaskSupport, ToolBuilder, ToolError};
    /// let tool = ToolBuilder::new("deploy")
    ///     .task_support(TaskSupport::Always)
    ///     .ask_before_task(["target"])
    ///     .handler(|_: NoArgs, cx: RequestContext| async move {
    ///         let schema = serde_json::json!({"type": "object", "properties": {"env": {"type": "string"}}});
    ///         let target = cx.elicit_form("target", "Deploy where?", schema)?;
    ///         Ok::<_, ToolError>(format!("deployed to {:?}", target.content))
    ///     });
    /// # drop(tool);
    /// ```
    pub fn ask_before_task<I, S>(mut self, keys: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.before_task.extend(keys.into_iter().map(Into::into));
        self
    }

    setters! {
        /// Scopes a caller must hold to see and call this tool. A caller
        /// without them is told the tool does not exist (the same answer as
        /// for an unknown tool), so scopes do not reveal what exists.
        require_scopes;
    }

    /// The definition as it will be listed.
    pub fn definition(&self) -> &Tool {
        &self.definition
    }

    /// Sets the handler: an `async` function or closure whose parameters,
    /// in any order, are the typed arguments (at most one type: its schema
    /// becomes `inputSchema`; without one the tool takes no arguments), the
    /// [`RequestContext`] and [`crate::State`]s. The return type's schema
    /// (for [`crate::Structured`]) becomes `outputSchema`.
    ///
    /// ```
    /// use toolwire_server::{RequestContext, State, ToolBuilder};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Greet { name: String }
    /// #[derive(Clone)]
    /// struct Greeting(&'static str);
    ///
    /// async fn greet(State(greeting): State<Greeting>, args: Greet, _cx: RequestContext) -> String {
    ///     format!("{}, {}!", greeting.0, args.name)
    /// }
    /// let tool = ToolBuilder::new("greet").state(Greeting("Hello")).handler(greet);
    /// assert_eq!(tool.definition().input_schema["required"][0], "name");
    /// ```
    pub fn handler<M, H: ToolHandler<M>>(mut self, handler: H) -> Self {
        let mut schemas = H::input_schemas();
        let too_many: Option<Vec<&'static str>> =
            (schemas.len() > 1).then(|| schemas.iter().map(|(name, _)| *name).collect());
        self.definition.input_schema = match schemas.pop() {
            Some((_, schema)) => schema,
            None => schema_object_for::<NoArgs>(),
        };
        if let Some(schema) = H::output_schema() {
            self.definition.output_schema = Some(schema);
        }
        self.mark_headers();
        let handler = Arc::new(handler);
        self.handler = Some(Arc::new(move |states: &States| match &too_many {
            Some(names) => Err(BindError::TooManyArguments(names.clone())),
            None => <H as Bind<M>>::bind(&handler, states),
        }));
        self
    }

    /// Mirrors the argument `param` into the HTTP header
    /// `Mcp-Param-{header}`: `"x-mcp-header": header` on its property in
    /// `inputSchema` (before or after the handler sets the schema). A
    /// parameter the schema does not have fails registration, as does one
    /// that breaks the `x-mcp-header` rules.
    ///
    /// ```
    /// use toolwire_server::ToolBuilder;
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Lookup { region: String, key: String }
    /// let tool = ToolBuilder::new("lookup")
    ///     .handler(|args: Lookup| async move { args.key })
    ///     .header("region", "Region");
    /// let region = &tool.definition().input_schema["properties"]["region"];
    /// assert_eq!(region["x-mcp-header"], "Region");
    /// ```
    pub fn header(mut self, param: impl Into<String>, header: impl Into<String>) -> Self {
        self.headers.push((param.into(), header.into()));
        self.mark_headers();
        self
    }

    /// Writes the `x-mcp-header` of every [`ToolBuilder::header`] into the
    /// input schema's properties that exist.
    fn mark_headers(&mut self) {
        let properties = self
            .definition
            .input_schema
            .get_mut("properties")
            .and_then(|p| p.as_object_mut());
        let Some(properties) = properties else { return };
        for (param, header) in &self.headers {
            if let Some(property) = properties.get_mut(param).and_then(|p| p.as_object_mut()) {
                property.insert("x-mcp-header".into(), header.clone().into());
            }
        }
    }

    /// The first [`ToolBuilder::header`] parameter the input schema lacks.
    pub(crate) fn unknown_header_param(&self) -> Option<&str> {
        let properties = self.definition.input_schema.get("properties");
        self.headers
            .iter()
            .map(|(param, _)| param.as_str())
            .find(|param| properties.and_then(|p| p.get(*param)).is_none())
    }

    /// Gives this tool's handler a [`crate::State`] of type `S` (over a
    /// server-wide one of the same type).
    pub fn state<S: Clone + Send + Sync + 'static>(mut self, state: S) -> Self {
        self.states.insert(state);
        self
    }

    /// Sets a handler that takes the raw arguments object, with an input
    /// schema given as data and kept exactly as given (every keyword).
    pub fn raw_handler<F, Fut, R>(mut self, input_schema: JsonObject, handler: F) -> Self
    where
        F: Fn(JsonObject, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolOutput + 'static,
    {
        self.definition.input_schema = input_schema;
        self.mark_headers();
        let handler = Arc::new(handler);
        let erased: ErasedToolHandler = Arc::new(move |args: &JsonObject, cx: RequestContext| {
            // `map`, not `async move { running.await... }`: an async block
            // holds a future it captures twice (as its capture and as what
            // it awaits), which doubled this box and the copy into it.
            let running = handler(args.clone(), cx);
            Box::pin(running.map(IntoToolOutput::into_tool_output)) as BoxFuture<_>
        });
        self.handler = Some(Arc::new(move |_: &States| Ok(Arc::clone(&erased))));
        self
    }
}
