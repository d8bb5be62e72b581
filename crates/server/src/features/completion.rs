//! `completion/complete`: suggestions for prompt arguments and template variables.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;

use toolwire_protocol::Completion;

use crate::context::output::BoxFuture;

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
