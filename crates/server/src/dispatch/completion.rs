//! `completion/complete`: the completer of a prompt or resource template the
//! caller may use.

use toolwire_protocol::{CompleteRequestParams, CompleteResult, CompletionReference, ErrorObject};

use crate::context::RequestContext;
use crate::features::listing::Listed;
use crate::security::sanitize::SanitizeReport;
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
        let mut completion = completer
            .complete(&params.argument.name, params.argument.value, context)
            .await;
        // Completions are offered to the user and may be sent to a model.
        let policy = &self.inner.config.sanitize;
        let mut report = SanitizeReport::default();
        for value in &mut completion.values {
            policy.clean_invisible(value, &mut report);
        }
        Ok(CompleteResult {
            completion,
            ..Default::default()
        })
    }
}
