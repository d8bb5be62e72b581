//! What a tool handler takes, in any order: its typed arguments, the
//! call's [`RequestContext`] and shared [`State`].
//!
//! A handler is any `async` function or closure whose parameters are each
//! one of those three (at most one arguments type; without one the tool
//! takes no arguments). States are looked up once, when the tool is
//! registered, so a missing one is a registration error, not a failed call.

use std::any::{Any, TypeId, type_name};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use toolwire_protocol::JsonObject;

use crate::context::RequestContext;
use crate::context::output::{BoxFuture, IntoToolOutput, ToolError, ToolOutput, schema_object_for};

/// A handler with its argument and result types erased. It reads the
/// arguments it needs before it returns its future (the dispatcher keeps
/// them, for a round that asks for input).
pub type ErasedToolHandler = Arc<
    dyn Fn(&JsonObject, RequestContext) -> BoxFuture<Result<ToolOutput, ToolError>> + Send + Sync,
>;

/// Shared state a handler takes as a parameter, given once with
/// [`crate::ServerBuilder::state`] (or [`crate::ToolBuilder::state`]) and
/// cloned into every call: keep it cheap to clone (an `Arc`, or a type
/// such as [`crate::Handles`] that is one inside).
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use toolwire_server::{NoArgs, Server, State, ToolBuilder};
///
/// #[derive(Clone, Default)]
/// struct Hits(Arc<AtomicU64>);
///
/// async fn hit(State(hits): State<Hits>, _: NoArgs) -> String {
///     (hits.0.fetch_add(1, Ordering::Relaxed) + 1).to_string()
/// }
///
/// let server = Server::builder("counter", "1.0.0")
///     .state(Hits::default())
///     .tool(ToolBuilder::new("hit").handler(hit))
///     .build()
///     .unwrap();
/// # drop(server);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct State<S>(pub S);

/// States by type: the server's, with a tool's own over them.
#[derive(Clone, Default)]
pub struct States(HashMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl States {
    /// Keeps `state`, replacing one of the same type.
    pub(crate) fn insert<S: Clone + Send + Sync + 'static>(&mut self, state: S) {
        self.0.insert(TypeId::of::<S>(), Arc::new(state));
    }

    /// A copy of the state of type `S`, if one was given.
    fn get<S: Clone + 'static>(&self) -> Option<S> {
        self.0
            .get(&TypeId::of::<S>())
            .and_then(|state| state.downcast_ref::<S>())
            .cloned()
    }

    /// `own` over `self`: a tool's states win over the server's.
    pub(crate) fn with(&self, own: &States) -> States {
        let mut all = self.clone();
        all.0.extend(own.0.iter().map(|(k, v)| (*k, Arc::clone(v))));
        all
    }
}

impl std::fmt::Debug for States {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("States")
            .field("count", &self.0.len())
            .finish()
    }
}

/// Why a handler cannot serve a tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    /// It takes a state that no one gave: the state's type.
    #[error(
        "its handler takes State<{0}>, but no state of that type was given \
         (ServerBuilder::state or ToolBuilder::state)"
    )]
    MissingState(&'static str),
    /// It takes more than one arguments parameter: their types.
    #[error("its handler takes {} arguments parameters ({}): at most one", .0.len(), .0.join(", "))]
    TooManyArguments(Vec<&'static str>),
}

/// The kinds of handler parameter, told apart by a marker type so that the
/// blanket impl for arguments does not overlap the others.
pub mod marker {
    /// The tool's typed arguments.
    #[derive(Debug)]
    pub enum Arguments {}
    /// The call's [`crate::RequestContext`].
    #[derive(Debug)]
    pub enum Context {}
    /// A [`crate::State`].
    #[derive(Debug)]
    pub enum State {}
}

mod sealed {
    use super::*;

    /// How one parameter is prepared at registration and made for a call.
    pub trait Param<M>: Sized + Send + 'static {
        /// What registration resolves for every call (a state's value).
        type Prepared: Send + Sync + 'static;
        fn prepare(states: &States) -> Result<Self::Prepared, BindError>;
        /// The input schema, for the arguments parameter only.
        fn input_schema() -> Option<JsonObject> {
            None
        }
        fn extract(
            prepared: &Self::Prepared,
            arguments: &JsonObject,
            cx: &RequestContext,
        ) -> Result<Self, ToolError>;
    }

    /// How a whole handler is described and bound to its states.
    pub trait Bind<M>: Send + Sync + 'static {
        /// The input schemas of its parameters (at most one is not `None`).
        fn input_schemas() -> Vec<(&'static str, JsonObject)>;
        fn output_schema() -> Option<JsonObject>;
        fn bind(handler: &Arc<Self>, states: &States) -> Result<ErasedToolHandler, BindError>;
    }
}

pub(crate) use sealed::Bind;

/// A type a tool handler can take as a parameter: the typed arguments
/// (`Deserialize + JsonSchema`), [`RequestContext`] or [`State`]. `M` is
/// one of the [`marker`] types; it is inferred.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool handler's parameter",
    label = "not a tool handler parameter",
    note = "a handler takes, in any order: its arguments type (Deserialize + JsonSchema), \
            RequestContext, and State<S>"
)]
pub trait ToolParam<M>: sealed::Param<M> {}

impl<M, T: sealed::Param<M>> ToolParam<M> for T {}

/// A function that can handle a tool's calls: `async fn` or closure whose
/// parameters are [`ToolParam`]s, in any order, returning
/// [`IntoToolOutput`]. `M` is inferred.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool handler",
    label = "not a tool handler",
    note = "a handler is an async fn or closure taking, in any order, its arguments type \
            (Deserialize + JsonSchema), RequestContext and State<S>, and returning something \
            that implements IntoToolOutput (String, Structured<T>, Result<_, ToolError>, ...)"
)]
pub trait ToolHandler<M>: sealed::Bind<M> {}

impl<M, H: sealed::Bind<M>> ToolHandler<M> for H {}

impl<A: DeserializeOwned + JsonSchema + Send + 'static> sealed::Param<marker::Arguments> for A {
    type Prepared = ();

    fn prepare(_: &States) -> Result<(), BindError> {
        Ok(())
    }

    fn input_schema() -> Option<JsonObject> {
        Some(schema_object_for::<A>())
    }

    fn extract(_: &(), arguments: &JsonObject, _: &RequestContext) -> Result<A, ToolError> {
        A::deserialize(arguments).map_err(|e| ToolError::new(format!("Invalid arguments: {e}")))
    }
}

impl sealed::Param<marker::Context> for RequestContext {
    type Prepared = ();

    fn prepare(_: &States) -> Result<(), BindError> {
        Ok(())
    }

    fn extract(_: &(), _: &JsonObject, cx: &RequestContext) -> Result<RequestContext, ToolError> {
        Ok(cx.clone())
    }
}

impl<S: Clone + Send + Sync + 'static> sealed::Param<marker::State> for State<S> {
    type Prepared = S;

    fn prepare(states: &States) -> Result<S, BindError> {
        states
            .get::<S>()
            .ok_or(BindError::MissingState(type_name::<S>()))
    }

    fn extract(state: &S, _: &JsonObject, _: &RequestContext) -> Result<State<S>, ToolError> {
        Ok(State(state.clone()))
    }
}

/// `Bind` for handlers of each arity: `$p` the parameter types, `$m` their
/// markers, `$v` names for their values.
macro_rules! bind_handler {
    ($(($p:ident, $m:ident, $v:ident)),*) => {
        impl<F, Fut, R, $($p, $m),*> sealed::Bind<($(($m, $p),)*)> for F
        where
            F: Fn($($p),*) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = R> + Send + 'static,
            R: IntoToolOutput + 'static,
            $($p: sealed::Param<$m>, $m: 'static,)*
        {
            fn input_schemas() -> Vec<(&'static str, JsonObject)> {
                let schemas: Vec<Option<(&'static str, JsonObject)>> = vec![$(
                    <$p as sealed::Param<$m>>::input_schema().map(|s| (type_name::<$p>(), s))
                ),*];
                schemas.into_iter().flatten().collect()
            }

            fn output_schema() -> Option<JsonObject> {
                R::output_schema()
            }

            fn bind(
                handler: &Arc<Self>,
                #[allow(unused_variables)] states: &States,
            ) -> Result<ErasedToolHandler, BindError> {
                let prepared = ($(<$p as sealed::Param<$m>>::prepare(states)?,)*);
                let handler = Arc::clone(handler);
                #[allow(unused_variables)]
                Ok(Arc::new(move |arguments: &JsonObject, cx: RequestContext| {
                    // The parameters are made now, from the borrowed
                    // arguments: the future owns what it needs.
                    let ($($v,)*) = &prepared;
                    // A closure for `?`: the first parameter that cannot be
                    // made ends the call.
                    #[allow(clippy::redundant_closure_call)]
                    let made = (|| -> Result<_, ToolError> {
                        Ok(($(<$p as sealed::Param<$m>>::extract($v, arguments, &cx)?,)*))
                    })();
                    let handler = Arc::clone(&handler);
                    Box::pin(async move {
                        let ($($v,)*) = made?;
                        handler($($v),*).await.into_tool_output()
                    }) as BoxFuture<_>
                }))
            }
        }
    };
}

bind_handler!();
bind_handler!((P1, M1, v1));
bind_handler!((P1, M1, v1), (P2, M2, v2));
bind_handler!((P1, M1, v1), (P2, M2, v2), (P3, M3, v3));
bind_handler!((P1, M1, v1), (P2, M2, v2), (P3, M3, v3), (P4, M4, v4));
bind_handler!(
    (P1, M1, v1),
    (P2, M2, v2),
    (P3, M3, v3),
    (P4, M4, v4),
    (P5, M5, v5)
);
bind_handler!(
    (P1, M1, v1),
    (P2, M2, v2),
    (P3, M3, v3),
    (P4, M4, v4),
    (P5, M5, v5),
    (P6, M6, v6)
);
