//! Multi round-trip requests: answer a server's `inputRequests` with the
//! application's handlers and build the retry's parameters.
//!
//! Every round is a new request with a new id. `requestState` is echoed
//! exactly as received, and left out when none was given. Each call keeps its
//! own rounds: nothing here is shared between concurrent calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;
use toolwire_protocol::{
    ElicitRequestParams, ErrorObject, ErrorResponse, InputRequest, InputRequiredResult,
    InputResponses, JsonObject, Message, Request, RequestId, ResultBody, ResultResponse,
};

use crate::error::Error;
use crate::future::BoxFuture;
use crate::handlers::{Handlers, InputContext, InputHandler};
use crate::telemetry;
use crate::transport::{InboundHandler, Related};

/// What a call is about, to tell handlers where a request comes from.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    pub server: String,
    pub method: String,
    pub target: String,
}

/// The parameters of the next round: the original ones, plus this round's
/// answers and the server's state, byte for byte.
pub(crate) fn retry_params(
    original: &JsonObject,
    responses: InputResponses,
    request_state: Option<String>,
) -> JsonObject {
    let mut params = original.clone();
    params.remove("inputResponses");
    params.remove("requestState");
    if !responses.is_empty() {
        params.insert("inputResponses".into(), Value::Object(responses));
    }
    if let Some(state) = request_state {
        params.insert("requestState".into(), Value::String(state));
    }
    params
}

/// Parses an `input_required` result.
pub(crate) fn parse_input_required(result: ResultBody) -> Result<InputRequiredResult, Error> {
    result
        .into_parsed()
        .map_err(|e| Error::InvalidReply(format!("malformed input_required result: {e}")))
}

/// The per-request input handlers of the requests in flight, by id, for the
/// server→client requests a legacy server sends during them.
#[derive(Clone, Default)]
pub(crate) struct RequestInputs(Arc<Mutex<HashMap<RequestId, Arc<dyn InputHandler>>>>);

impl std::fmt::Debug for RequestInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RequestInputs")
            .field(&self.lock().len())
            .finish()
    }
}

impl RequestInputs {
    /// Routes requests related to `id` to `handler` until the guard drops.
    pub(crate) fn register(&self, id: RequestId, handler: Arc<dyn InputHandler>) -> InputsGuard {
        self.lock().insert(id.clone(), handler);
        InputsGuard {
            inputs: self.clone(),
            id,
        }
    }

    fn get(&self, id: &RequestId) -> Option<Arc<dyn InputHandler>> {
        self.lock().get(id).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Arc<dyn InputHandler>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Removes a request's input handler when the request ends.
pub(crate) struct InputsGuard {
    inputs: RequestInputs,
    id: RequestId,
}

impl Drop for InputsGuard {
    fn drop(&mut self) {
        self.inputs.lock().remove(&self.id);
    }
}

/// Asks the request's own input handler, or else the application's
/// handlers, for every input request, one at a time (each may prompt the
/// user).
pub(crate) async fn answer_all(
    handlers: &Handlers,
    per_request: Option<&Arc<dyn InputHandler>>,
    origin: &Origin,
    round: usize,
    asked: &InputRequiredResult,
) -> Result<InputResponses, Error> {
    let mut responses = InputResponses::new();
    let Some(requests) = &asked.input_requests else {
        return Ok(responses);
    };
    for (key, request) in requests {
        let cx = InputContext {
            server: origin.server.clone(),
            method: origin.method.clone(),
            target: origin.target.clone(),
            key: key.clone(),
            round,
        };
        let answer = match per_request {
            Some(handler) => answer_with(handler.as_ref(), request, cx).await?,
            None => answer_one(handlers, request, cx).await?,
        };
        responses.insert(key.clone(), answer);
    }
    Ok(responses)
}

/// The answer of a request's own input handler.
async fn answer_with(
    handler: &dyn InputHandler,
    request: &InputRequest,
    cx: InputContext,
) -> Result<Value, Error> {
    let (key, method) = (cx.key.clone(), request.method().to_owned());
    handler
        .answer(request.clone(), cx)
        .await
        .map_err(|e| Error::Input {
            key,
            method,
            reason: e.to_string(),
        })
}

async fn answer_one(
    handlers: &Handlers,
    request: &InputRequest,
    cx: InputContext,
) -> Result<Value, Error> {
    let key = cx.key.clone();
    let method = request.method();
    let failed = |reason: String| Error::Input {
        key: key.clone(),
        method: method.to_owned(),
        reason,
    };
    let missing =
        || failed("no handler is installed for it (the capability was not declared)".into());
    match request {
        InputRequest::Elicit(params) => {
            let handler = handlers.elicitation.as_ref().ok_or_else(missing)?;
            if matches!(params, ElicitRequestParams::Url(_)) && !handlers.elicitation_url {
                return Err(failed("URL mode elicitation was not declared".into()));
            }
            let answer = handler.elicit(params.clone(), cx).await;
            to_json(answer.map_err(|e| failed(e.to_string()))?, &failed)
        }
        InputRequest::CreateMessage(params) => {
            let handler = handlers.sampling.as_ref().ok_or_else(missing)?;
            let answer = handler.create_message(params.clone(), cx).await;
            to_json(answer.map_err(|e| failed(e.to_string()))?, &failed)
        }
        InputRequest::ListRoots(_) => {
            let provider = handlers.roots.as_ref().ok_or_else(missing)?;
            let roots = provider
                .roots(cx)
                .await
                .map_err(|e| failed(e.to_string()))?;
            to_json(toolwire_protocol::ListRootsResult { roots }, &failed)
        }
    }
}

/// The same handlers answering real server→client requests, as a legacy
/// (2025-11-25 era) server sends them; the transport delivers the answer.
#[derive(Debug, Clone)]
pub(crate) struct InboundAnswers {
    pub handlers: Handlers,
    pub server: String,
    pub per_request: RequestInputs,
}

impl InboundHandler for InboundAnswers {
    fn handle(&self, request: Request, related: Option<Related>) -> BoxFuture<'static, Message> {
        let this = self.clone();
        Box::pin(async move {
            let id = request.id.clone();
            let started = toolwire_telemetry::enabled().then(|| telemetry::start_inbound(&request));
            let answered = this.answer(request, related.unwrap_or_default());
            let answer = match started {
                Some(started) => telemetry::traced_inbound(started, answered).await,
                None => answered.await,
            };
            match answer {
                Ok(result) => Message::Result(ResultResponse::new(id, result)),
                Err(error) => Message::Error(ErrorResponse::new(Some(id), error)),
            }
        })
    }
}

impl InboundAnswers {
    async fn answer(&self, request: Request, related: Related) -> Result<JsonObject, ErrorObject> {
        let known = matches!(
            request.method.as_str(),
            "elicitation/create" | "sampling/createMessage" | "roots/list"
        );
        if !known {
            return Err(ErrorObject::method_not_found(&request.method));
        }
        let mut shape = JsonObject::new();
        shape.insert("method".into(), Value::String(request.method.clone()));
        if let Some(params) = request.params {
            shape.insert("params".into(), Value::Object(params.into_object()));
        }
        let input: InputRequest = serde_json::from_value(Value::Object(shape))
            .map_err(|e| ErrorObject::invalid_params(format!("invalid {}: {e}", request.method)))?;
        let per_request = related.id.as_ref().and_then(|id| self.per_request.get(id));
        let cx = InputContext {
            server: self.server.clone(),
            method: related.method,
            target: related.target,
            key: request.id.to_string(),
            round: 1,
        };
        let answer = match &per_request {
            Some(handler) => answer_with(handler.as_ref(), &input, cx).await,
            None => answer_one(&self.handlers, &input, cx).await,
        };
        match answer {
            Ok(Value::Object(result)) => Ok(result),
            Ok(other) => Err(ErrorObject::internal(format!("handler answered {other}"))),
            Err(Error::Input { reason, .. }) if reason.starts_with("no handler") => {
                Err(ErrorObject::method_not_found(&request.method))
            }
            // The server knows which request it sent: the reason is enough.
            Err(Error::Input { reason, .. }) => Err(ErrorObject::internal(reason)),
            Err(error) => Err(ErrorObject::internal(error.to_string())),
        }
    }
}

fn to_json(value: impl Serialize, failed: &dyn Fn(String) -> Error) -> Result<Value, Error> {
    serde_json::to_value(value).map_err(|e| failed(format!("cannot serialize the answer: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn retry_echoes_state_exactly_and_replaces_old_answers() {
        let original = object(json!({"name": "t", "arguments": {"a": 1}}));
        let state = "  weird \u{1F600} \\ state ==".to_owned();
        let params = retry_params(
            &original,
            object(json!({"k": {"action": "decline"}})),
            Some(state.clone()),
        );
        assert_eq!(params["requestState"], Value::String(state));
        assert_eq!(params["inputResponses"]["k"]["action"], "decline");
        assert_eq!(params["arguments"], json!({"a": 1}));
    }

    #[test]
    fn no_state_given_means_none_sent() {
        let original = object(json!({"name": "t", "requestState": "old", "inputResponses": {}}));
        let params = retry_params(&original, JsonObject::new(), None);
        assert_eq!(Value::Object(params), json!({"name": "t"}));
    }

    #[tokio::test]
    async fn a_request_without_a_handler_is_an_input_error() {
        let asked = parse_input_required(
            object(json!({
                "resultType": "input_required",
                "inputRequests": {"r": {"method": "roots/list"}}
            }))
            .into(),
        )
        .unwrap();
        let origin = Origin {
            server: "s".into(),
            method: "tools/call".into(),
            target: "t".into(),
        };
        let err = answer_all(&Handlers::default(), None, &origin, 1, &asked)
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::Input { ref key, ref method, .. } if key == "r" && method == "roots/list"),
            "{err}"
        );
    }
}
