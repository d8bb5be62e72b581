//! `prompts/get`: the prompt the caller may use, its arguments checked, run
//! as a round that may ask for input.

use std::sync::Arc;

use serde_json::json;
use toolwire_protocol::{ErrorObject, GetPromptRequestParams, GetPromptResult, JsonObject};

use super::round::{Finished, What};
use crate::context::RequestContext;
use crate::context::mrtr::RoundKey;
use crate::features::listing::Listed;
use crate::security::audit::{self, Denial};
use crate::security::sanitize::SanitizeReport;
use crate::server::Server;

impl Server {
    pub(crate) async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext,
    ) -> Result<JsonObject, ErrorObject> {
        // A prompt the caller may not use is answered exactly like an unknown one.
        let unknown = || ErrorObject::invalid_params(format!("Unknown prompt: {}", params.name));
        let prompt = match self.inner.prompts.get(&params.name) {
            Some(p) if p.permits(cx.principal()) => p,
            Some(_) => {
                let detail = format!("prompt {}", params.name);
                audit::denial(Some(cx.principal()), Denial::Forbidden, &detail);
                return Err(unknown());
            }
            None => return Err(unknown()),
        };
        let arguments = params.arguments.unwrap_or_default();
        if let Some(missing) = prompt.missing_argument(&arguments) {
            return Err(ErrorObject::invalid_params(format!(
                "Missing required argument {missing:?} for prompt {}",
                params.name
            )));
        }
        let principal = cx.principal().key().to_owned();
        let (name, sent) = (json!(params.name), json!(arguments));
        let key = RoundKey {
            method: "prompts/get",
            principal: &principal,
            salient: &[("name", &name), ("arguments", &sent)],
        };
        let handler = Arc::clone(&prompt.handler);
        let run = move |cx| handler(arguments, cx);
        let state = params.request_state.as_deref();
        let what = What("Prompt", &params.name);
        let who = audit::listening().then(|| cx.principal().clone());
        match self
            .run_round(&key, state, params.input_responses.as_ref(), cx, &what, run)
            .await?
        {
            Finished::Value(mut messages) => {
                // What reaches the model: the description and every message's text.
                let policy = &self.inner.config.sanitize;
                let mut report = SanitizeReport::default();
                let mut description = prompt.definition.description.clone();
                if let Some(description) = &mut description {
                    policy.clean_invisible(description, &mut report);
                }
                for message in &mut messages {
                    policy.clean_content(std::slice::from_mut(&mut message.content), &mut report);
                }
                audit::sanitized(who.as_ref(), "prompts/get", &params.name, &report);
                let mut result = self.finish(GetPromptResult {
                    description,
                    messages,
                    ..Default::default()
                });
                policy.flag_object(&mut result, &report);
                Ok(result)
            }
            Finished::ExecutionError(message) => Err(ErrorObject::invalid_params(message)),
            Finished::InputRequired(result) => Ok(result),
        }
    }
}
