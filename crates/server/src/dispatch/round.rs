//! One round of a request that may ask for input (tools/call, prompts/get,
//! resources/read): its `requestState` opened, the handler run with a panic
//! guard, and a new state sealed when it asks again.

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use toolwire_protocol::{ClientCapabilities, ErrorObject, JsonObject};

use crate::context::RequestContext;
use crate::context::mrtr::{InputRequired, Round, RoundKey};
use crate::context::output::{BoxFuture, ToolError};
use crate::security::sanitize::SanitizeReport;
use crate::server::Server;

impl Server {
    /// Runs one round of a request that may ask for input (tools/call,
    /// prompts/get, resources/read): opens its `requestState`, runs the
    /// handler with a panic guard, and seals a new state when it asks again.
    pub(crate) async fn run_round<T, F>(
        &self,
        key: &RoundKey<'_>,
        request_state: Option<&str>,
        responses: Option<&JsonObject>,
        cx: RequestContext,
        what: &What<'_>,
        run: F,
    ) -> Result<Finished<T>, ErrorObject>
    where
        F: FnOnce(RequestContext) -> BoxFuture<Result<T, ToolError>>,
    {
        let round = self.inner.state_codec.open(key, request_state, responses)?;
        let cx = cx.with_round(round.clone());
        // A second handle on the context (not a copy of the capabilities):
        // only a handler that asks for input needs them read again.
        let asked = cx.clone();
        // A panic while the handler's future is made (its parameters are
        // read then) or while it runs is the same internal error.
        let ran = match std::panic::catch_unwind(AssertUnwindSafe(|| run(cx))) {
            Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
            Err(panic) => Err(panic),
        };
        let outcome = match ran {
            Ok(outcome) => outcome,
            Err(panic) => {
                tracing::error!(handler = %what, panic = panic_message(&panic), "handler panicked");
                return Err(ErrorObject::internal(format!(
                    "{what} failed with an internal error"
                )));
            }
        };
        match outcome {
            Ok(value) => Ok(Finished::Value(value)),
            Err(ToolError::Execution(message)) => Ok(Finished::ExecutionError(message)),
            Err(ToolError::Protocol(error)) => Err(error),
            Err(ToolError::InputRequired(ask)) => self
                .ask_for_input(key, &round, *ask, asked.client_capabilities())
                .map(Finished::InputRequired),
        }
    }

    /// Ends a round with `input_required`, unless it asks for something the client cannot do.
    fn ask_for_input(
        &self,
        key: &RoundKey<'_>,
        round: &Round,
        ask: InputRequired,
        declared: &ClientCapabilities,
    ) -> Result<JsonObject, ErrorObject> {
        if let Some(missing) = ask.missing_capabilities(declared) {
            return Err(ErrorObject::missing_client_capability(&missing));
        }
        let mut result = self.finish(self.inner.state_codec.seal(key, round, ask));
        // Elicitation messages reach the user, sampling messages a model.
        if let Some(requests) = result.get_mut("inputRequests") {
            let mut report = SanitizeReport::default();
            self.inner.config.sanitize.clean_json(requests, &mut report);
        }
        Ok(result)
    }
}

/// How a round ended.
/// What a round runs, for messages: a kind and a name (`Tool echo`),
/// written out only when something goes wrong.
pub(crate) struct What<'a>(pub &'static str, pub &'a str);

impl std::fmt::Display for What<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.0, self.1)
    }
}

pub(crate) enum Finished<T> {
    /// The handler produced its value.
    Value(T),
    /// The handler failed in a way the caller may correct.
    ExecutionError(String),
    /// The handler asked for input: the finished `input_required` result.
    InputRequired(JsonObject),
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
