//! `tools/call`: lookup, authorisation, rate limits, input limits, schema,
//! handler, output schema and sanitising, with its audit record.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use toolwire_protocol::{
    CallToolRequestParams, CallToolResult, ErrorObject, InputResponses, JsonObject, Params, keys,
};

use super::reply::Answer;
use super::round::{Finished, What};
use super::{parse, view};
use crate::context::RequestContext;
use crate::context::mrtr::RoundKey;
use crate::context::output::{BoxFuture, ToolError, ToolOutput};
use crate::features::listing::Listed;
use crate::security::audit::{self, Denial, Outcome};
use crate::security::rate_limit::check_tool_rate;
use crate::security::sanitize::SanitizeReport;
use crate::server::Server;

impl Server {
    pub(super) async fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> Result<Answer, ErrorObject> {
        let record = audit::ToolCallRecord::start(&cx, &params);
        let mut report = SanitizeReport::default();
        let (outcome, reply) = self.run_tool(params, cx, &mut report).await;
        if let Some(record) = record {
            let task = match (&outcome, &reply) {
                (Outcome::TaskCreated, Ok(Answer::Object(created))) => {
                    created.get("taskId").and_then(Value::as_str)
                }
                _ => None,
            };
            record.finish(outcome, &report, task);
        }
        reply
    }

    /// `tools/call`: lookup → authorise (scopes) → rate limits → input
    /// limits → schema → handler → output schema → sanitising.
    async fn run_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
        report: &mut SanitizeReport,
    ) -> (Outcome, Result<Answer, ErrorObject>) {
        // Every result below leaves through `finish_tool_into`, which
        // sanitises it and keeps what was removed for the audit record.
        // A tool the caller may not use is answered exactly like an unknown one.
        let unknown = || ErrorObject::invalid_params(format!("Unknown tool: {}", params.name));
        let tool = match self.inner.tools.get(&params.name) {
            Some(tool) if tool.permits(cx.principal()) => tool,
            Some(_) => {
                let detail = format!("tool {}", params.name);
                audit::denial(Some(cx.principal()), Denial::Forbidden, &detail);
                return (Outcome::Denied, Err(unknown()));
            }
            None => return (Outcome::ProtocolError, Err(unknown())),
        };
        let name = params.name.as_str();
        let inner = &self.inner;
        let rate = check_tool_rate(
            &*inner.rate_limits,
            inner.config.tool_call_limit.as_ref(),
            tool.rate_limit.as_ref(),
            name,
            cx.principal(),
        );
        if let Err(message) = rate.await {
            let result = CallToolResult::error(message);
            return (
                Outcome::RateLimited,
                Ok(self.finish_tool_into(name, result, report)),
            );
        }
        let arguments = Value::Object(params.arguments.unwrap_or_default());
        let Value::Object(object) = &arguments else {
            unreachable!("made an object just above")
        };
        let limits = tool.input_limits.unwrap_or(self.inner.config.input_limits);
        if let Err(message) = limits.check(name, object) {
            let result = CallToolResult::error(message);
            return (
                Outcome::ToolError,
                Ok(self.finish_tool_into(name, result, report)),
            );
        }
        if let Err(errors) = tool.input_schema.validate(&arguments) {
            let text = format!("Invalid arguments for tool {name}:\n{errors}");
            let result = CallToolResult::error(text);
            return (
                Outcome::ToolError,
                Ok(self.finish_tool_into(name, result, report)),
            );
        }
        let principal = cx.principal().key().to_owned();
        // The round's key borrows the arguments as sent (a handler that asks
        // for input is matched against them); the handler reads its own
        // parameters from them before it runs.
        let tool_name = Value::String(name.to_owned());
        let salient = [("name", &tool_name), ("arguments", &arguments)];
        let key = RoundKey {
            method: "tools/call",
            principal: &principal,
            salient: &salient,
        };
        // A tool that runs as a task for this request: its multi round-trip
        // input asked before the task is gathered inline first.
        match self.task_mode(&tool, &cx) {
            Err(error) => return (Outcome::ProtocolError, Err(error)),
            Ok(true) => {
                let state = params.request_state.as_deref();
                let responses = params.input_responses.as_ref();
                match self.inner.state_codec.open(&key, state, responses) {
                    Err(error) => return (Outcome::ProtocolError, Err(error)),
                    Ok(round)
                        if tool
                            .before_task
                            .iter()
                            .all(|k| round.answers.contains_key(k)) =>
                    {
                        // Boxed: the usual call does not carry its size.
                        return Box::pin(self.start_task(&tool, object, round, &cx)).await;
                    }
                    Ok(_) => {}
                }
            }
            Ok(false) => {}
        }
        let handler = &tool.handler;
        let run = |cx| -> BoxFuture<Result<CallToolResult, ToolError>> {
            let running = handler(object, cx);
            Box::pin(async move {
                match running.await? {
                    ToolOutput::Complete(result) => Ok(result),
                    ToolOutput::InputRequired(ask) => Err(ToolError::InputRequired(Box::new(ask))),
                }
            })
        };
        let state = params.request_state.as_deref();
        let what = What("Tool", name);
        let responses = params.input_responses.as_ref();
        match self.run_round(&key, state, responses, cx, &what, run).await {
            Err(error) => (Outcome::ProtocolError, Err(error)),
            Ok(Finished::Value(result)) => match self.check_output(&tool, &result) {
                Err(error) => (Outcome::ProtocolError, Err(error)),
                Ok(()) => {
                    let outcome = if result.is_error() {
                        Outcome::ToolError
                    } else {
                        Outcome::Ok
                    };
                    (outcome, Ok(self.finish_tool_into(name, result, report)))
                }
            },
            Ok(Finished::ExecutionError(message)) => {
                let result = CallToolResult::error(message);
                (
                    Outcome::ToolError,
                    Ok(self.finish_tool_into(name, result, report)),
                )
            }
            Ok(Finished::InputRequired(result)) => {
                (Outcome::InputRequired, Ok(Answer::Object(result)))
            }
        }
    }

    /// Sanitises a tool result (the server's [`crate::SanitizePolicy`]) and
    /// finishes it: every `tools/call` result leaves through here.
    pub(crate) fn finish_tool(&self, tool: &str, result: CallToolResult) -> Answer {
        self.finish_tool_into(tool, result, &mut SanitizeReport::default())
    }

    /// [`Server::finish_tool`], keeping in `report` what the sanitiser removed.
    fn finish_tool_into(
        &self,
        tool: &str,
        mut result: CallToolResult,
        report: &mut SanitizeReport,
    ) -> Answer {
        let policy = &self.inner.config.sanitize;
        *report = policy.apply(tool, &mut result, &|scheme| self.owns_scheme(scheme));
        // The server's info is written into `_meta` from its text (no tree
        // cloned); one the tool put there itself does not stand.
        if let Some(meta) = &mut result.meta {
            meta.0.shift_remove(keys::SERVER_INFO);
        }
        Answer::ToolResult(result, self.inner.server_info_text.clone())
    }

    /// True when one of the server's resources or templates uses `scheme`.
    fn owns_scheme(&self, scheme: &str) -> bool {
        let has = |uri: &str| {
            uri.split_once(':')
                .is_some_and(|(s, _)| s.eq_ignore_ascii_case(scheme))
        };
        self.inner
            .resources
            .snapshot()
            .iter()
            .any(|slot| has(&slot.item.definition.uri))
            || self
                .inner
                .templates
                .snapshot()
                .iter()
                .any(|slot| has(&slot.item.definition.uri_template))
    }
}

impl Server {
    /// A result that breaks the tool's own `outputSchema` is a server bug: never sent.
    pub(super) fn check_output(
        &self,
        tool: &crate::features::registry::RegisteredTool,
        result: &CallToolResult,
    ) -> Result<(), ErrorObject> {
        let Some(schema) = &tool.output_schema else {
            return Ok(());
        };
        if result.is_error() {
            return Ok(());
        }
        let name = &tool.definition.name;
        let problem = match &result.structured_content {
            None => "the result has no structuredContent".to_owned(),
            Some(value) => match schema.validate(value) {
                Ok(()) => return Ok(()),
                Err(errors) => errors.to_string(),
            },
        };
        tracing::error!(tool = %name, %problem, "structuredContent breaks the tool's outputSchema; result withheld");
        Err(ErrorObject::internal(format!(
            "Tool {name} produced a result that does not match its outputSchema"
        )))
    }
}

/// `tools/call` params read straight from their text: `_meta` (checked by
/// `check_meta`) is skipped, not built.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(default)]
    input_responses: Option<InputResponses>,
    #[serde(default)]
    request_state: Option<String>,
}

pub(super) fn parse_call(params: &Params) -> Result<CallToolRequestParams, ErrorObject> {
    if let Some(call) = read_call(params) {
        return Ok(call);
    }
    // Params that do not fit get the exact error of a whole read.
    let call: CallParams = parse(params)?;
    Ok(CallToolRequestParams {
        name: call.name,
        arguments: call.arguments,
        input_responses: call.input_responses,
        request_state: call.request_state,
        meta: None,
    })
}

/// `tools/call` params read member by member, `None` when one does not
/// fit: only the members the call uses are read (`_meta`, checked by
/// `check_meta`, is not read again).
fn read_call(params: &Params) -> Option<CallToolRequestParams> {
    fn optional<T: DeserializeOwned>(params: &Params, name: &str) -> Option<Option<T>> {
        match params.member(name) {
            None => Some(None),
            Some(raw) => serde_json::from_str(raw.get()).ok(),
        }
    }
    Some(CallToolRequestParams {
        name: view::string_member(Some(params), "name")?,
        arguments: optional(params, "arguments")?,
        input_responses: optional(params, "inputResponses")?,
        request_state: optional(params, "requestState")?,
        meta: None,
    })
}
