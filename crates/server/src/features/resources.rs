//! Resources: static resources and URI templates with typed read handlers.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use toolwire_protocol::{
    Annotations, BlobResourceContents, Resource, ResourceContents, ResourceTemplate,
    TextResourceContents,
};

use crate::context::RequestContext;
use crate::context::output::BoxFuture;
use crate::context::output::ToolError;
use crate::features::cache::CacheHint;
use crate::features::completion::{Completer, CompletionFn};
use crate::features::registry::Named;
use crate::setters::setters;

/// What a read handler is told: the URI asked for and, for a template, its variables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadRequest {
    /// The URI being read.
    pub uri: String,
    /// Template variables (empty for a static resource).
    pub variables: BTreeMap<String, String>,
}

/// What a read handler returns: the contents, or an error (`ToolError::Execution`
/// becomes -32602; `?` on `cx.elicit_form(..)` asks the client for input first).
pub type ReadResult = Result<Vec<ResourceContents>, ToolError>;

pub(crate) type ErasedReadHandler =
    Arc<dyn Fn(ReadRequest, RequestContext) -> BoxFuture<ReadResult> + Send + Sync>;

/// Text contents for `uri`.
///
/// ```
/// let c = toolwire_server::text_contents("test://a", "text/plain", "hello");
/// assert_eq!(c.uri(), "test://a");
/// ```
pub fn text_contents(
    uri: impl Into<String>,
    mime_type: impl Into<String>,
    text: impl Into<String>,
) -> ResourceContents {
    ResourceContents::Text(TextResourceContents {
        uri: uri.into(),
        mime_type: Some(mime_type.into()),
        text: text.into(),
        meta: None,
    })
}

/// Binary contents for `uri` (base64-encoded for the wire).
pub fn blob_contents(
    uri: impl Into<String>,
    mime_type: impl Into<String>,
    bytes: &[u8],
) -> ResourceContents {
    ResourceContents::Blob(BlobResourceContents {
        uri: uri.into(),
        mime_type: Some(mime_type.into()),
        blob: STANDARD.encode(bytes),
        meta: None,
    })
}

fn erase<F, Fut>(handler: F) -> ErasedReadHandler
where
    F: Fn(ReadRequest, RequestContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ReadResult> + Send + 'static,
{
    let handler = Arc::new(handler);
    Arc::new(move |request, cx| {
        let handler = Arc::clone(&handler);
        Box::pin(async move { handler(request, cx).await }) as BoxFuture<_>
    })
}

/// A static resource being defined.
///
/// ```
/// use toolwire_server::{ResourceBuilder, text_contents};
/// let r = ResourceBuilder::new("test://readme", "readme")
///     .mime_type("text/plain")
///     .handler(|req, _cx| async move { Ok(vec![text_contents(req.uri, "text/plain", "Read me")]) });
/// assert_eq!(r.definition().name, "readme");
/// ```
#[derive(Clone)]
pub struct ResourceBuilder {
    pub(crate) definition: Resource,
    pub(crate) handler: Option<ErasedReadHandler>,
    pub(crate) cache: Option<CacheHint>,
    pub(crate) required_scopes: Vec<String>,
}

impl std::fmt::Debug for ResourceBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceBuilder")
            .field("definition", &self.definition)
            .finish()
    }
}

impl ResourceBuilder {
    /// A resource at `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceBuilder {
            definition: Resource {
                uri: uri.into(),
                name: name.into(),
                ..Default::default()
            },
            handler: None,
            cache: None,
            required_scopes: Vec::new(),
        }
    }

    setters! {
        /// Display name.
        text title;
        /// What the resource is.
        text description;
        /// MIME type.
        text mime_type;
        /// Size in bytes.
        value size: u64;
        /// Adds an icon.
        icon;
        /// Display hints.
        value annotations: Annotations;
    }

    /// Caching hints for reads of this resource (default: the server's read hints).
    pub fn cache(mut self, hint: CacheHint) -> Self {
        self.cache = Some(hint);
        self
    }

    setters! {
        /// Scopes a caller must hold to see and read it.
        require_scopes;
    }

    /// The read handler.
    pub fn handler<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ReadRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReadResult> + Send + 'static,
    {
        self.handler = Some(erase(handler));
        self
    }

    /// The definition as listed.
    pub fn definition(&self) -> &Resource {
        &self.definition
    }
}

/// A URI template (RFC 6570 level 1: `{name}` expands to one value) being defined.
///
/// ```
/// use toolwire_server::{ResourceTemplateBuilder, text_contents};
/// let t = ResourceTemplateBuilder::new("test://items/{id}", "item")
///     .handler(|req, _cx| async move {
///         Ok(vec![text_contents(req.uri.clone(), "text/plain", req.variables["id"].clone())])
///     });
/// assert_eq!(t.definition().uri_template, "test://items/{id}");
/// ```
#[derive(Clone)]
pub struct ResourceTemplateBuilder {
    pub(crate) definition: ResourceTemplate,
    pub(crate) handler: Option<ErasedReadHandler>,
    pub(crate) completer: Completer,
    pub(crate) cache: Option<CacheHint>,
    pub(crate) required_scopes: Vec<String>,
}

impl std::fmt::Debug for ResourceTemplateBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceTemplateBuilder")
            .field("definition", &self.definition)
            .finish()
    }
}

impl ResourceTemplateBuilder {
    /// A template such as `file:///logs/{date}`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplateBuilder {
            definition: ResourceTemplate {
                uri_template: uri_template.into(),
                name: name.into(),
                ..Default::default()
            },
            handler: None,
            completer: Completer::default(),
            cache: None,
            required_scopes: Vec::new(),
        }
    }

    setters! {
        /// Display name.
        text title;
        /// What the resources are.
        text description;
        /// MIME type of every match.
        text mime_type;
        /// Adds an icon.
        icon;
        /// Display hints.
        value annotations: Annotations;
    }

    /// Caching hints for reads (default: the server's read hints).
    pub fn cache(mut self, hint: CacheHint) -> Self {
        self.cache = Some(hint);
        self
    }

    setters! {
        /// Scopes a caller must hold to see and read matches.
        require_scopes;
    }

    /// Completions for the template variable `variable` (`completion/complete`).
    pub fn complete<F, Fut>(mut self, variable: impl Into<String>, complete: F) -> Self
    where
        F: Fn(String, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<String>> + Send + 'static,
    {
        self.completer
            .insert(variable.into(), CompletionFn::new(complete));
        self
    }

    /// The read handler; `ReadRequest::variables` holds the matched values.
    pub fn handler<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ReadRequest, RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReadResult> + Send + 'static,
    {
        self.handler = Some(erase(handler));
        self
    }

    /// The definition as listed.
    pub fn definition(&self) -> &ResourceTemplate {
        &self.definition
    }
}

/// A static resource ready to read.
pub(crate) struct RegisteredResource {
    pub definition: Resource,
    pub handler: ErasedReadHandler,
    pub cache: Option<CacheHint>,
    pub required_scopes: Vec<String>,
}

impl Named for RegisteredResource {
    const KIND: &'static str = "resource";
    fn key(&self) -> &str {
        &self.definition.uri
    }
}

/// A template ready to match and read.
pub(crate) struct RegisteredTemplate {
    pub definition: ResourceTemplate,
    pub handler: ErasedReadHandler,
    pub completer: Completer,
    pub cache: Option<CacheHint>,
    pub required_scopes: Vec<String>,
    parts: Vec<TemplatePart>,
}

impl Named for RegisteredTemplate {
    const KIND: &'static str = "resource template";
    fn key(&self) -> &str {
        &self.definition.uri_template
    }
}

#[derive(Debug, Clone, PartialEq)]
enum TemplatePart {
    Literal(String),
    Variable(String),
}

impl RegisteredTemplate {
    pub fn new(
        builder: ResourceTemplateBuilder,
        handler: ErasedReadHandler,
    ) -> Result<Self, String> {
        let parts = parse_template(&builder.definition.uri_template)?;
        Ok(RegisteredTemplate {
            definition: builder.definition,
            handler,
            completer: builder.completer,
            cache: builder.cache,
            required_scopes: builder.required_scopes,
            parts,
        })
    }

    /// The variables when `uri` matches this template.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        match_parts(&self.parts, uri)
    }
}

fn parse_template(template: &str) -> Result<Vec<TemplatePart>, String> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(TemplatePart::Literal(rest[..open].to_owned()));
        }
        let close = rest[open..]
            .find('}')
            .ok_or_else(|| format!("unclosed '{{' in URI template {template:?}"))?;
        let name = &rest[open + 1..open + close];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "unsupported expression {{{name}}} in {template:?} (level 1 only)"
            ));
        }
        if matches!(parts.last(), Some(TemplatePart::Variable(_))) {
            return Err(format!(
                "two variables with nothing between them in {template:?}"
            ));
        }
        parts.push(TemplatePart::Variable(name.to_owned()));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(TemplatePart::Literal(rest.to_owned()));
    }
    Ok(parts)
}

/// Level 1 matching: a variable takes one or more characters up to the next
/// literal (or the end) and never a `/`; values are percent-decoded, and a
/// value that decodes to a path step (`/`, `\`, NUL, `.` or `..`) does not
/// match, so `..%2F..%2Fetc%2Fpasswd` never reaches a handler that builds a
/// path from it.
fn match_parts(parts: &[TemplatePart], uri: &str) -> Option<BTreeMap<String, String>> {
    let mut variables = BTreeMap::new();
    let mut rest = uri;
    for (i, part) in parts.iter().enumerate() {
        match part {
            TemplatePart::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
            TemplatePart::Variable(name) => {
                let end = match parts.get(i + 1) {
                    Some(TemplatePart::Literal(next)) => rest.find(next.as_str())?,
                    _ => rest.len(),
                };
                let value = &rest[..end];
                if value.is_empty() || value.contains('/') {
                    return None;
                }
                let value = percent_decode(value)?;
                if value.contains(['/', '\\', '\0']) || value == "." || value == ".." {
                    return None;
                }
                variables.insert(name.clone(), value);
                rest = &rest[end..];
            }
        }
    }
    rest.is_empty().then_some(variables)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        match_parts(&parse_template(template).unwrap(), uri).map(|v| v.into_iter().collect())
    }

    #[test]
    fn level_one_matching() {
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(
            vars("test://template/{id}/data", "test://template/123/data"),
            Some(vec![pair("id", "123")])
        );
        assert_eq!(
            vars("test://template/{id}/data", "test://template//data"),
            None
        );
        assert_eq!(
            vars("test://template/{id}/data", "test://template/1/2/data"),
            None
        );
        assert_eq!(
            vars("x://{a}-{b}", "x://one-two"),
            Some(vec![pair("a", "one"), pair("b", "two")])
        );
        assert_eq!(
            vars("x://{a}", "x://hello%20world"),
            Some(vec![pair("a", "hello world")])
        );
        assert_eq!(vars("x://{a}", "x://bad%zz"), None);
    }

    #[test]
    fn bad_templates_are_rejected() {
        assert!(parse_template("x://{a").is_err());
        assert!(parse_template("x://{+a}").is_err());
        assert!(parse_template("x://{a}{b}").is_err());
    }
}
