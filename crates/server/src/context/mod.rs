//! What a handler is given and gives back: the [`RequestContext`] of one
//! request, the caller's [`Principal`], the [`Outbox`] its notifications go
//! to, the outputs a handler returns, and the multi-round (MRTR) machinery
//! with the sealing of `requestState`. The lowest layer: it imports nothing
//! else of the crate.

pub(crate) mod encode;
pub(crate) mod mrtr;
mod outbox;
pub(crate) mod output;
mod request;
pub(crate) mod seal;

pub use outbox::{MessageSink, Outbox};
pub(crate) use request::{CheckedMeta, TaskStatusSink, TextFilter};
pub use request::{Principal, RequestContext, RequestEnv, response_streams, wants_notifications};
