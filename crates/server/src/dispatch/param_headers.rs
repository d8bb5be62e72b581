//! Which `Mcp-Param-{Name}` headers a `tools/call` request must carry.
//!
//! The dispatcher knows the tools; the HTTP transport knows headers. This is
//! the seam between them: the transport asks which parameters the called tool
//! mirrors into headers, with the argument found at each one's path, and then
//! compares the headers it received.

use serde_json::Value;
use toolwire_protocol::Request;
use toolwire_schema::HeaderKind;

use crate::dispatch::view;
use crate::server::Server;

/// One `Mcp-Param-{Name}` header expected on a `tools/call` request.
///
/// ```
/// use serde_json::json;
/// use toolwire_server::{Server, ToolBuilder, RequestContext};
/// use toolwire_server::protocol::Request;
/// let schema = json!({"type": "object", "properties": {
///     "region": {"type": "string", "x-mcp-header": "Region"}}});
/// let server = Server::builder("demo", "1")
///     .tool(ToolBuilder::new("sql").raw_handler(
///         schema.as_object().unwrap().clone(),
///         |_args, _cx: RequestContext| async { "ok" }))
///     .build()
///     .unwrap();
/// let params = json!({"name": "sql", "arguments": {"region": "eu"}});
/// let request = Request::new(1, "tools/call", params.as_object().cloned());
/// let expected = server.param_headers(&request);
/// assert_eq!(expected[0].name, "Mcp-Param-Region");
/// assert_eq!(expected[0].value, Some(&json!("eu")));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ParamHeader<'a> {
    /// The full header field name as annotated, e.g. `Mcp-Param-Region`
    /// (compare case-insensitively).
    pub name: String,
    /// Where the parameter sits in the arguments, as a JSON pointer (e.g. `/region`).
    pub pointer: String,
    /// The argument at that path. `None` when it is absent or `null`: the
    /// client then omits the header and the server must not expect it.
    pub value: Option<&'a Value>,
    /// How the value is written in the header.
    pub kind: HeaderKind,
}

impl Server {
    /// The `Mcp-Param-{Name}` headers a request must carry: one per
    /// `x-mcp-header` annotation of the tool a `tools/call` names, with the
    /// argument at its path.
    ///
    /// Empty for any other method, for a tool that is unknown or disabled (the
    /// dispatcher then answers the call itself), and for a tool without
    /// annotations.
    pub fn param_headers<'a>(&self, request: &'a Request) -> Vec<ParamHeader<'a>> {
        if request.method != "tools/call" {
            return Vec::new();
        }
        let Some(params) = &request.params else {
            return Vec::new();
        };
        // The name from the params' text: their map is built only for a
        // tool that has header parameters.
        let tool = view::with_string_member(Some(params), "name", |name| {
            name.and_then(|name| self.inner.tools.get(name))
        });
        let Some(tool) = tool else {
            return Vec::new();
        };
        if tool.header_params.is_empty() {
            return Vec::new();
        }
        let arguments = params.get("arguments").filter(|a| a.is_object());
        tool.header_params
            .iter()
            .map(|param| ParamHeader {
                name: param.field_name(),
                pointer: param.pointer(),
                value: arguments
                    .and_then(|args| param.value_in(args))
                    .filter(|v| !v.is_null()),
                kind: param.kind,
            })
            .collect()
    }
}
