//! HTTP replies: the status a JSON-RPC message maps to, JSON bodies, errors.

use axum::body::Body;
use axum::response::Response;
use http::header::{self};
use http::{HeaderValue, StatusCode};
use toolwire_protocol::{ErrorObject, ErrorResponse, Message, RequestId, code};

use crate::context::encode::encode_message;

/// The HTTP status of a reply carrying `message`.
pub(super) fn status_of(message: &Message) -> StatusCode {
    match message {
        Message::Error(response) => status_of_error(&response.error),
        _ => StatusCode::OK,
    }
}

pub(super) fn status_of_error(error: &ErrorObject) -> StatusCode {
    match error.code {
        code::PARSE_ERROR
        | code::INVALID_REQUEST
        | code::HEADER_MISMATCH
        | code::MISSING_REQUIRED_CLIENT_CAPABILITY
        | code::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        code::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        code::INVALID_PARAMS if crate::dispatch::is_meta_error(error) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

pub(super) fn json_reply(message: &Message) -> Response {
    let mut body = Vec::with_capacity(256);
    encode_message(&mut body, message);
    json_body(body, status_of(message))
}

/// A JSON response from its encoded body.
pub(super) fn json_body(body: Vec<u8>, status: StatusCode) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

pub(super) fn error_reply(
    status: StatusCode,
    id: Option<RequestId>,
    error: ErrorObject,
) -> Response {
    let mut response = json_reply(&Message::Error(ErrorResponse::new(id, error)));
    *response.status_mut() = status;
    response
}

pub(super) fn empty(status: StatusCode) -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = status;
    response
}
