//! Tools: `list_tools` (every page, cached, with bad definitions rejected),
//! and `call_tool` with approval, `Mcp-Param-*` headers, input rounds,
//! output validation and an audit record.

use std::collections::HashSet;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio::time::Instant;
use toolwire_protocol::{CallToolResult, JsonObject, ListToolsResult, ResultType, Tool, code};
use toolwire_schema::HeaderParam;

use crate::arguments::to_arguments;
use crate::cache::{CacheHints, Freshness};
use crate::client::{Client, parse, parse_complete, read, write};
use crate::digest::sha256_hex;
use crate::error::Error;
use crate::headers::{param_headers, tool_header_params};
use crate::options::RequestOptions;
use crate::safety::{
    Approval, ApprovalRequest, AuditRecord, ToolInfo, audit_events_enabled, trace_audit,
};
use crate::tasks::{TaskHandle, TaskMode, ToolCallStart, task_id_of};
use crate::tool_book::{ToolBook, ToolEntry};
use crate::transport::TransportKind;

/// Most pages one list may have before the client gives up.
const MAX_PAGES: usize = 10_000;

/// A tool definition the client refused, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectedTool {
    /// The tool's name.
    pub name: String,
    /// The rule its definition breaks.
    pub reason: String,
}

/// Every tool a server offers, across all pages.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolList {
    /// The usable tools, in the server's order.
    pub tools: Vec<ToolInfo>,
    /// Definitions left out because they break a rule (e.g. `x-mcp-header` on HTTP).
    pub rejected: Vec<RejectedTool>,
    /// The least fresh of the pages.
    pub freshness: Freshness,
    /// The server's caching hints: the most cautious of the pages'.
    pub hints: CacheHints,
}

enum Lookup {
    Found(Arc<ToolEntry>),
    Unknown,
}

impl Client {
    /// Lists every tool, walking all pages (each page cached on its own).
    ///
    /// On HTTP, tools whose `x-mcp-header` annotations break the rules are
    /// left out (and listed in [`ToolList::rejected`]) with a warning.
    pub async fn list_tools(&self) -> Result<ToolList, Error> {
        self.list_tools_with(&RequestOptions::new()).await
    }

    /// [`Client::list_tools`] with per-request options.
    pub async fn list_tools_with(&self, options: &RequestOptions) -> Result<ToolList, Error> {
        let (pages, freshness) = self.walk_pages("tools/list", options).await?;
        let mut book = ToolBook::listing();
        let mut list = ToolList {
            tools: Vec::new(),
            rejected: Vec::new(),
            freshness,
            hints: crate::features::pages_hints(&pages),
        };
        for page in pages {
            let page: ListToolsResult = parse(page)?;
            for tool in page.tools {
                self.admit(tool, &mut book, &mut list);
            }
        }
        *write(&self.inner.tools) = book;
        Ok(list)
    }

    /// Adds one definition to the book, or rejects it.
    fn admit(&self, tool: Tool, book: &mut ToolBook, list: &mut ToolList) {
        let name = tool.name.clone();
        if book.has(&name) {
            tracing::warn!(server = %self.name(), tool = %name, "duplicate tool name in tools/list; keeping the first");
            return;
        }
        let header_params = match self.check_headers(&tool) {
            Ok(params) => params,
            Err(reason) => {
                tracing::warn!(server = %self.name(), tool = %name, rule = %reason, "rejecting tool definition: invalid x-mcp-header");
                book.reject(name.clone(), reason.clone());
                list.rejected.push(RejectedTool { name, reason });
                return;
            }
        };
        let info = ToolInfo {
            tool,
            annotations_trusted: self.inner.trusted,
        };
        list.tools.push(info.clone());
        book.admit(name, ToolEntry::new(info, header_params));
    }

    /// `x-mcp-header` rules apply on HTTP only; stdio ignores the annotations.
    fn check_headers(&self, tool: &Tool) -> Result<Vec<HeaderParam>, String> {
        if self.transport_kind() != TransportKind::Http {
            return Ok(Vec::new());
        }
        tool_header_params(tool).map_err(|e| e.to_string())
    }

    /// Fetches every page of a list method, restarting from the first page
    /// once if a cursor stops working.
    pub(crate) async fn walk_pages(
        &self,
        method: &str,
        options: &RequestOptions,
    ) -> Result<(Vec<JsonObject>, Freshness), Error> {
        let mut restarted = false;
        loop {
            match self.walk_once(method, options).await {
                Err(WalkError::CursorFailed(_)) if !restarted => {
                    tracing::warn!(server = %self.name(), method, "a cursor was rejected; discarding cached pages and starting over");
                    self.inner
                        .cache
                        .discard_method(&self.inner.server_key, method);
                    restarted = true;
                }
                Err(WalkError::CursorFailed(e) | WalkError::Other(e)) => return Err(e),
                Ok(walked) => return Ok(walked),
            }
        }
    }

    async fn walk_once(
        &self,
        method: &str,
        options: &RequestOptions,
    ) -> Result<(Vec<JsonObject>, Freshness), WalkError> {
        let mut pages = Vec::new();
        let mut freshness = Freshness::Fetched;
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut params = JsonObject::new();
            if let Some(cursor) = &cursor {
                params.insert("cursor".into(), Value::String(cursor.clone()));
            }
            let (page, page_freshness) = match self.cached(method, params, options).await {
                Ok(page) => page,
                Err(e @ Error::Protocol { .. }) if cursor.is_some() => {
                    return Err(WalkError::CursorFailed(e));
                }
                Err(e) => return Err(WalkError::Other(e)),
            };
            freshness = freshness.worst(page_freshness);
            let next = page
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned);
            pages.push(page);
            match next {
                None => return Ok((pages, freshness)),
                Some(next) if !seen.insert(next.clone()) || pages.len() >= MAX_PAGES => {
                    return Err(WalkError::Other(Error::InvalidReply(format!(
                        "{method} pagination does not end (cursor {next:?} repeats or too many pages)"
                    ))));
                }
                Some(next) => cursor = Some(next),
            }
        }
    }

    /// The tool's definition, listing tools first when it is not known yet.
    async fn tool_entry(&self, name: &str) -> Result<Lookup, Error> {
        if let Some(found) = self.known_tool(name, false)? {
            return Ok(found);
        }
        // Boxed: listing is the rare path, and in place it would make every
        // call's future (moved into a box or two per call) twice as large.
        Box::pin(self.list_tools()).await?;
        Ok(self.known_tool(name, true)?.unwrap_or(Lookup::Unknown))
    }

    fn known_tool(&self, name: &str, after_listing: bool) -> Result<Option<Lookup>, Error> {
        let book = read(&self.inner.tools);
        if !book.is_loaded() && !after_listing {
            return Ok(None);
        }
        if let Some(reason) = book.rejection(name) {
            return Err(Error::InvalidTool {
                tool: name.to_owned(),
                reason: reason.clone(),
            });
        }
        Ok(book.entry(name).map(Lookup::Found))
    }

    /// Forgets the tool list: the next call or listing asks the server again.
    pub fn invalidate_tools(&self) {
        self.inner
            .cache
            .invalidate_method(&self.inner.server_key, "tools/list");
        write(&self.inner.tools).invalidate();
    }

    /// Calls a tool. `arguments` must serialize to a JSON object (or `null`
    /// for none).
    ///
    /// `Ok` is a successful result whose `structuredContent` matches the
    /// tool's `outputSchema`. A result with `isError: true` is
    /// [`Error::ToolExecution`] (its content is meant for the model).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, &RequestOptions::new())
            .await
    }

    /// [`Client::call_tool`] with per-request options (timeouts,
    /// cancellation, progress and log notifications).
    ///
    /// A server may answer with a task (the Tasks extension, declared unless
    /// the client was built with [`crate::ClientBuilder::tasks`]`(false)`):
    /// the call then polls it until it ends, answering its input requests
    /// with the client's handlers, and passes each status it sees to the
    /// sink as [`crate::RequestNotification::Task`]. The hard maximum
    /// ([`RequestOptions::max_timeout`]) bounds the whole wait; cancelling,
    /// or running out of time, sends `tasks/cancel`.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: impl Serialize,
        options: &RequestOptions,
    ) -> Result<CallToolResult, Error> {
        self.call_tool_waiting(name, to_arguments(arguments), options)
            .await
    }

    /// [`Client::call_tool_with`] given the arguments as a JSON object
    /// already (a proxy's case): they are sent as they are, not serialized
    /// into a new tree first.
    pub async fn call_tool_object_with(
        &self,
        name: &str,
        arguments: JsonObject,
        options: &RequestOptions,
    ) -> Result<CallToolResult, Error> {
        self.call_tool_waiting(name, Ok(arguments), options).await
    }

    /// A call whose task, if the server makes one, is waited for.
    async fn call_tool_waiting(
        &self,
        name: &str,
        arguments: Result<JsonObject, Error>,
        options: &RequestOptions,
    ) -> Result<CallToolResult, Error> {
        match self
            .call_tool_inner(name, arguments, options, TaskMode::Transparent)
            .await?
        {
            ToolCallStart::Done(result) => Ok(result),
            ToolCallStart::Task(task) => Err(Error::InvalidReply(format!(
                "unexpected task {} for a call that waits",
                task.id()
            ))),
        }
    }

    /// A call of `name` with `arguments` (as [`to_arguments`] makes them).
    pub(crate) async fn call_tool_inner(
        &self,
        name: &str,
        arguments: Result<JsonObject, Error>,
        options: &RequestOptions,
        mode: TaskMode,
    ) -> Result<ToolCallStart, Error> {
        let started = Instant::now();
        let events = self.inner.audit_events && audit_events_enabled();
        // The digest only when someone reads the record.
        let digest = (events || self.inner.audit.is_some()).then(|| match &arguments {
            Ok(arguments) => sha256_hex(&serde_json::to_vec(arguments).unwrap_or_default()),
            Err(_) => sha256_hex(b""),
        });
        let mut rounds = 0;
        let outcome = match arguments {
            Ok(arguments) => self.call(name, arguments, options, mode, &mut rounds).await,
            Err(invalid) => Err(invalid),
        };
        let Some(digest) = digest else {
            return outcome;
        };
        let record = AuditRecord {
            server: self.name().to_owned(),
            tool: name.to_owned(),
            arguments_sha256: digest,
            outcome: match &outcome {
                Ok(_) => "ok",
                Err(e) => e.outcome(),
            },
            duration: started.elapsed(),
            rounds,
        };
        if events {
            trace_audit(&record);
        }
        if let Some(hook) = &self.inner.audit {
            hook.record(&record);
        }
        outcome
    }

    async fn call(
        &self,
        name: &str,
        arguments: JsonObject,
        options: &RequestOptions,
        mode: TaskMode,
        rounds: &mut usize,
    ) -> Result<ToolCallStart, Error> {
        let mut entry = self.tool_entry(name).await?;
        self.approve(name, &entry, &arguments).await?;
        let options = match mode {
            TaskMode::Start => self.with_tasks(options),
            TaskMode::Transparent if self.tasks_enabled() => self.with_tasks(options),
            TaskMode::Transparent => options.clone(),
        };
        // The arguments move into the params (no copy); what reads them
        // later reads them there.
        let mut params = JsonObject::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        params.insert("arguments".into(), Value::Object(arguments));
        let Some(Value::Object(arguments)) = params.get("arguments") else {
            return Err(Error::InvalidArguments("no arguments object".into()));
        };
        let origin = self.origin("tools/call", name);
        let mut attempt = 0;
        let answer = loop {
            attempt += 1;
            let headers = self.headers_for(name, &entry, arguments);
            match self
                .run_rounds(&origin, &params, &options, &headers, None)
                .await
            {
                Err(e) if e.code() == Some(code::HEADER_MISMATCH) && attempt == 1 => {
                    tracing::warn!(server = %self.name(), tool = name, error = %e, "header mismatch; refreshing the tool list and retrying");
                    self.invalidate_tools();
                    entry = self.tool_entry(name).await?;
                }
                other => break other?,
            }
        };
        *rounds = answer.rounds;
        let result: CallToolResult = match answer.result_type {
            ResultType::Task => {
                let id = task_id_of(&answer.result)?;
                let task = TaskHandle::for_tool(self, id, name);
                match mode {
                    TaskMode::Start => return Ok(ToolCallStart::Task(task)),
                    // Boxed, as the listing in `tool_entry` is.
                    TaskMode::Transparent => Box::pin(task.wait_inner(&options, true)).await?,
                }
            }
            // `run_rounds` ends only with a complete result or a task: read
            // the result's text straight into its type.
            _ => parse_complete(answer.result)?,
        };
        if result.is_error() {
            return Err(Error::ToolExecution {
                tool: name.to_owned(),
                result: Box::new(result),
            });
        }
        if let Lookup::Found(entry) = &entry {
            entry.check_output(&result)?;
        }
        Ok(ToolCallStart::Done(result))
    }

    async fn approve(
        &self,
        name: &str,
        entry: &Lookup,
        arguments: &JsonObject,
    ) -> Result<(), Error> {
        let info = match entry {
            Lookup::Found(entry) => Some(&entry.info),
            Lookup::Unknown => None,
        };
        let request = ApprovalRequest {
            server: self.name(),
            tool: name,
            info,
            arguments,
        };
        match self.inner.approval.approve(request).await {
            Approval::Allow => Ok(()),
            Approval::Deny(reason) => Err(Error::Denied {
                tool: name.to_owned(),
                reason,
            }),
        }
    }

    fn headers_for(
        &self,
        name: &str,
        entry: &Lookup,
        arguments: &JsonObject,
    ) -> Vec<(String, String)> {
        match entry {
            Lookup::Found(entry) if self.transport_kind() == TransportKind::Http => {
                param_headers(name, &entry.header_params, arguments)
            }
            _ => Vec::new(),
        }
    }
}

enum WalkError {
    CursorFailed(Error),
    Other(Error),
}
