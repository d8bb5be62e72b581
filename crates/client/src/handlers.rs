//! What the application plugs in to answer a server's input requests:
//! elicitation, sampling and roots. The client declares exactly the
//! capabilities whose handlers are installed.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;
use toolwire_protocol::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationCapability, InputRequest, JsonObject, Root, SamplingCapability,
};

use crate::future::BoxFuture;

/// Any error a handler returns; its text is reported in [`crate::Error::Input`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Where an input request comes from, for the application's prompts and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputContext {
    /// The server's label (see [`crate::ClientBuilder::name`]).
    pub server: String,
    /// The request being answered: `tools/call`, `prompts/get` or `resources/read`.
    pub method: String,
    /// The tool or prompt name, or the resource URI.
    pub target: String,
    /// The input request's key in `inputRequests`.
    pub key: String,
    /// Which round of input this is, from 1.
    pub round: usize,
}

/// Answers `elicitation/create`: asks the user, returns accept, decline or cancel.
///
/// Implemented for closures:
///
/// ```
/// use toolwire_client::handlers::{ElicitationHandler, InputContext};
/// use toolwire_protocol::{ElicitRequestParams, ElicitResult};
/// fn assert_handler<H: ElicitationHandler>(_: H) {}
/// assert_handler(|_params: ElicitRequestParams, _cx: InputContext| async {
///     Ok::<_, toolwire_client::handlers::BoxError>(ElicitResult::decline())
/// });
/// ```
pub trait ElicitationHandler: Send + Sync {
    /// Asks the user.
    fn elicit(
        &self,
        params: ElicitRequestParams,
        cx: InputContext,
    ) -> BoxFuture<'static, Result<ElicitResult, BoxError>>;
}

impl<F, Fut> ElicitationHandler for F
where
    F: Fn(ElicitRequestParams, InputContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<ElicitResult, BoxError>> + Send + 'static,
{
    fn elicit(
        &self,
        params: ElicitRequestParams,
        cx: InputContext,
    ) -> BoxFuture<'static, Result<ElicitResult, BoxError>> {
        Box::pin(self(params, cx))
    }
}

/// Answers `sampling/createMessage`: runs the application's model.
pub trait SamplingHandler: Send + Sync {
    /// Produces a completion.
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
        cx: InputContext,
    ) -> BoxFuture<'static, Result<CreateMessageResult, BoxError>>;
}

impl<F, Fut> SamplingHandler for F
where
    F: Fn(CreateMessageRequestParams, InputContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<CreateMessageResult, BoxError>> + Send + 'static,
{
    fn create_message(
        &self,
        params: CreateMessageRequestParams,
        cx: InputContext,
    ) -> BoxFuture<'static, Result<CreateMessageResult, BoxError>> {
        Box::pin(self(params, cx))
    }
}

/// Answers `roots/list`: the directories the server may work in.
pub trait RootsProvider: Send + Sync {
    /// The current roots.
    fn roots(&self, cx: InputContext) -> BoxFuture<'static, Result<Vec<Root>, BoxError>>;
}

impl<F, Fut> RootsProvider for F
where
    F: Fn(InputContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Vec<Root>, BoxError>> + Send + 'static,
{
    fn roots(&self, cx: InputContext) -> BoxFuture<'static, Result<Vec<Root>, BoxError>> {
        Box::pin(self(cx))
    }
}

/// A fixed list of roots.
#[derive(Debug, Clone, Default)]
pub struct StaticRoots(pub Vec<Root>);

impl RootsProvider for StaticRoots {
    fn roots(&self, _cx: InputContext) -> BoxFuture<'static, Result<Vec<Root>, BoxError>> {
        let roots = self.0.clone();
        Box::pin(async move { Ok(roots) })
    }
}

/// Answers every input request of one request, whatever its kind, with the
/// raw JSON result (an `ElicitResult`, `CreateMessageResult` or
/// `ListRootsResult`). Set per request with
/// [`crate::RequestOptions::on_input`], it comes before the client's own
/// handlers, for the multi round-trip rounds of a 2026-07-28 server and the
/// server→client requests a 2025-11-25 server sends during that request.
/// It is for clients that pass input requests on, as a gateway does.
///
/// Implemented for closures:
/// ```
/// use toolwire_client::handlers::{BoxError, InputContext, InputHandler};
/// use toolwire_protocol::InputRequest;
/// fn assert_handler<H: InputHandler>(_: H) {}
/// assert_handler(|_request: InputRequest, _cx: InputContext| async {
///     Ok::<_, BoxError>(serde_json::json!({"action": "decline"}))
/// });
/// ```
pub trait InputHandler: Send + Sync {
    /// The answer to `request`.
    fn answer(
        &self,
        request: InputRequest,
        cx: InputContext,
    ) -> BoxFuture<'static, Result<Value, BoxError>>;
}

impl<F, Fut> InputHandler for F
where
    F: Fn(InputRequest, InputContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Value, BoxError>> + Send + 'static,
{
    fn answer(
        &self,
        request: InputRequest,
        cx: InputContext,
    ) -> BoxFuture<'static, Result<Value, BoxError>> {
        Box::pin(self(request, cx))
    }
}

/// The handlers an application installed.
#[derive(Clone, Default)]
pub(crate) struct Handlers {
    pub elicitation: Option<Arc<dyn ElicitationHandler>>,
    pub elicitation_url: bool,
    pub sampling: Option<Arc<dyn SamplingHandler>>,
    pub roots: Option<Arc<dyn RootsProvider>>,
}

impl fmt::Debug for Handlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handlers")
            .field("elicitation", &self.elicitation.is_some())
            .field("elicitation_url", &self.elicitation_url)
            .field("sampling", &self.sampling.is_some())
            .field("roots", &self.roots.is_some())
            .finish()
    }
}

impl Handlers {
    /// The capabilities these handlers let the client declare.
    pub fn capabilities(&self) -> ClientCapabilities {
        let elicitation = self.elicitation.as_ref().map(|_| ElicitationCapability {
            form: Some(JsonObject::new()),
            url: self.elicitation_url.then(JsonObject::new),
        });
        ClientCapabilities {
            elicitation,
            sampling: self
                .sampling
                .as_ref()
                .map(|_| SamplingCapability::default()),
            roots: self.roots.as_ref().map(|_| JsonObject::new()),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn capabilities_follow_the_installed_handlers() {
        let none = Handlers::default();
        assert_eq!(
            serde_json::to_value(none.capabilities()).unwrap(),
            json!({})
        );
        let all = Handlers {
            elicitation: Some(Arc::new(|_: ElicitRequestParams, _: InputContext| async {
                Ok::<_, BoxError>(ElicitResult::cancel())
            })),
            elicitation_url: true,
            sampling: None,
            roots: Some(Arc::new(StaticRoots(vec![Root::new("file:///tmp")]))),
        };
        assert_eq!(
            serde_json::to_value(all.capabilities()).unwrap(),
            json!({"elicitation": {"form": {}, "url": {}}, "roots": {}})
        );
    }
}
