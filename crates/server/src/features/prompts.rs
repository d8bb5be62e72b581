//! Prompts: templates of messages with named arguments.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use toolwire_protocol::{Prompt, PromptArgument, PromptMessage};

use crate::context::RequestContext;
use crate::context::output::BoxFuture;
use crate::context::output::ToolError;
use crate::features::completion::{Completer, CompletionFn};
use crate::features::registry::Named;
use crate::setters::setters;

/// What a prompt handler returns: the messages, or an error (`ToolError::Execution`
/// becomes -32602; `?` on `cx.elicit_form(..)` asks the client for input first).
pub type PromptResult = Result<Vec<PromptMessage>, ToolError>;

pub(crate) type ErasedPromptHandler =
    Arc<dyn Fn(BTreeMap<String, String>, RequestContext) -> BoxFuture<PromptResult> + Send + Sync>;

/// A prompt being defined.
///
/// ```
/// use toolwire_server::PromptBuilder;
/// use toolwire_protocol::{PromptMessage, Role};
/// let p = PromptBuilder::new("review")
///     .description("Review some code")
///     .argument("code", "The code to review", true)
///     .handler(|args, _cx| async move {
///         Ok(vec![PromptMessage::text(Role::User, format!("Review:\n{}", args["code"]))])
///     });
/// assert_eq!(p.definition().arguments.as_ref().unwrap()[0].name, "code");
/// ```
#[derive(Clone)]
pub struct PromptBuilder {
    pub(crate) definition: Prompt,
    pub(crate) handler: Option<ErasedPromptHandler>,
    pub(crate) completer: Completer,
    pub(crate) required_scopes: Vec<String>,
}

impl std::fmt::Debug for PromptBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptBuilder")
            .field("definition", &self.definition)
            .finish()
    }
}

impl PromptBuilder {
    /// A prompt named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        PromptBuilder {
            definition: Prompt {
                name: name.into(),
                ..Default::default()
            },
            handler: None,
            completer: Completer::default(),
            required_scopes: Vec::new(),
        }
    }

    setters! {
        /// Display name.
        text title;
        /// What the prompt is for.
        text description;
        /// Adds an icon.
        icon;
    }

    /// Declares an argument; a missing required argument is answered with -32602.
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        self.definition
            .arguments
            .get_or_insert_with(Vec::new)
            .push(PromptArgument {
                name: name.into(),
                description: Some(description.into()),
                required: Some(required),
                title: None,
            });
        self
    }

    /// Completions for the argument `argument` (`completion/complete`).
    pub fn complete<F, Fut>(mut self, argument: impl Into<String>, complete: F) -> Self
    where
        F: Fn(String, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<String>> + Send + 'static,
    {
        self.completer
            .insert(argument.into(), CompletionFn::new(complete));
        self
    }

    setters! {
        /// Scopes a caller must hold to see and get the prompt.
        require_scopes;
    }

    /// The handler: arguments by name in, messages out.
    pub fn handler<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(BTreeMap<String, String>, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = PromptResult> + Send + 'static,
    {
        let handler = Arc::new(handler);
        self.handler = Some(Arc::new(move |args, cx| {
            let handler = Arc::clone(&handler);
            Box::pin(async move { handler(args, cx).await }) as BoxFuture<_>
        }));
        self
    }

    /// The definition as listed.
    pub fn definition(&self) -> &Prompt {
        &self.definition
    }
}

/// A prompt ready to get.
pub(crate) struct RegisteredPrompt {
    pub definition: Prompt,
    pub handler: ErasedPromptHandler,
    pub completer: Completer,
    pub required_scopes: Vec<String>,
}

impl Named for RegisteredPrompt {
    const KIND: &'static str = "prompt";
    fn key(&self) -> &str {
        &self.definition.name
    }
}

impl RegisteredPrompt {
    /// The first required argument missing from `args`.
    pub fn missing_argument(&self, args: &BTreeMap<String, String>) -> Option<&str> {
        self.definition
            .arguments
            .iter()
            .flatten()
            .find(|a| a.required == Some(true) && !args.contains_key(&a.name))
            .map(|a| a.name.as_str())
    }
}
