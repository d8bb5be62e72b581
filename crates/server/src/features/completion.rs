//! `completion/complete`: suggestions for prompt arguments and template variables.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;

use toolwire_protocol::Completion;

use crate::features::tool::BoxFuture;

/// The most values one completion result may carry.
pub const MAX_COMPLETION_VALUES: usize = 100;

type ErasedCompletion =
    dyn Fn(String, BTreeMap<String, String>) -> BoxFuture<Vec<String>> + Send + Sync;

/// One completion function: `(value typed so far, other arguments) -> suggestions`.
#[derive(Clone)]
pub(crate) struct CompletionFn(Arc<ErasedCompletion>);

impl CompletionFn {
    pub fn new<F, Fut>(complete: F) -> Self
    where
        F: Fn(String, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<String>> + Send + 'static,
    {
        let complete = Arc::new(complete);
        CompletionFn(Arc::new(move |value, context| {
            let complete = Arc::clone(&complete);
            Box::pin(async move { complete(value, context).await }) as BoxFuture<_>
        }))
    }
}

/// Completion functions by argument (or variable) name.
#[derive(Clone, Default)]
pub(crate) struct Completer {
    by_argument: HashMap<String, CompletionFn>,
}

impl Completer {
    pub fn insert(&mut self, argument: String, complete: CompletionFn) {
        self.by_argument.insert(argument, complete);
    }

    pub fn is_empty(&self) -> bool {
        self.by_argument.is_empty()
    }

    /// Suggestions for `argument`; none when it has no completion function.
    pub async fn complete(
        &self,
        argument: &str,
        value: String,
        context: BTreeMap<String, String>,
    ) -> Completion {
        let Some(complete) = self.by_argument.get(argument) else {
            return Completion::default();
        };
        let mut values = (complete.0)(value, context).await;
        let total = values.len();
        values.truncate(MAX_COMPLETION_VALUES);
        Completion {
            has_more: Some(total > values.len()),
            total: Some(total as u64),
            values,
        }
    }
}

mod serve {
    use toolwire_protocol::{
        CompleteRequestParams, CompleteResult, CompletionReference, ErrorObject,
    };

    use crate::context::RequestContext;
    use crate::features::listing::Listed;
    use crate::server::Server;

    impl Server {
        pub(crate) async fn complete(
            &self,
            params: CompleteRequestParams,
            cx: &RequestContext,
        ) -> Result<CompleteResult, ErrorObject> {
            let completer = match &params.r#ref {
                CompletionReference::Prompt(reference) => self
                    .inner
                    .prompts
                    .get(&reference.name)
                    .filter(|p| p.permits(cx.principal()))
                    .map(|p| p.completer.clone())
                    .ok_or_else(|| {
                        ErrorObject::invalid_params(format!("Unknown prompt: {}", reference.name))
                    })?,
                CompletionReference::ResourceTemplate(reference) => self
                    .inner
                    .templates
                    .get(&reference.uri)
                    .filter(|t| t.permits(cx.principal()))
                    .map(|t| t.completer.clone())
                    .ok_or_else(|| {
                        ErrorObject::invalid_params(format!(
                            "Unknown resource template: {}",
                            reference.uri
                        ))
                    })?,
            };
            let context = params.context.and_then(|c| c.arguments).unwrap_or_default();
            let completion = completer
                .complete(&params.argument.name, params.argument.value, context)
                .await;
            Ok(CompleteResult {
                completion,
                ..Default::default()
            })
        }
    }
}
