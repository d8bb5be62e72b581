//! [`Headers`]: a request's headers, and how to make them again.

use reqwest::header::HeaderMap;

use crate::transport::TransportError;

/// Makes a request's headers (the same ones every time it is called).
pub(super) type MakeHeaders<'a> = &'a (dyn Fn() -> Result<HeaderMap, TransportError> + Sync);

/// A request's headers, and the function that made them: the lean path
/// hands the headers to hyper, and makes them again only when it follows a
/// redirect, instead of keeping a copy of every request's headers.
pub(super) struct Headers<'a> {
    /// The headers, made once.
    pub(super) first: HeaderMap,
    /// Makes them again (for a redirect followed).
    pub(super) again: MakeHeaders<'a>,
}

impl<'a> Headers<'a> {
    /// Makes the headers with `make`, kept to make them again.
    pub(super) fn new(make: MakeHeaders<'a>) -> Result<Self, TransportError> {
        Ok(Headers {
            first: make()?,
            again: make,
        })
    }
}
