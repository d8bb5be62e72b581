//! The stylesheet, the one script and the icon, embedded in the binary and served
//! from the console's own origin (the Content-Security-Policy allows
//! nothing else).

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

const STYLESHEET: &str = include_str!("../assets/console.css");
const SCRIPT: &str = include_str!("../assets/console.js");
const ICON: &str = include_str!("../assets/favicon.svg");

/// `GET /ui/assets/{file}`: an embedded asset, cached for an hour.
pub(crate) async fn serve(Path(file): Path<String>) -> Response {
    let (content_type, body) = match file.as_str() {
        "console.css" => ("text/css; charset=utf-8", STYLESHEET),
        "console.js" => ("text/javascript; charset=utf-8", SCRIPT),
        "favicon.svg" => ("image/svg+xml", ICON),
        _ => return (StatusCode::NOT_FOUND, "No such asset.").into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "private, max-age=3600"),
        ],
        body,
    )
        .into_response()
}
