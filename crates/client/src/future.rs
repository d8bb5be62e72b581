//! The boxed future every hook and transport trait returns. It lives below
//! all of them so that `auth/`, the hooks and `transport/` need not import
//! each other for it.

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
