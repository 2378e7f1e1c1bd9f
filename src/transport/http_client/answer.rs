//! A remote server's answer to one of our HTTP requests, whichever client sent it: hyper's
//! connection (`http_client/plain.rs`, the POSTs to a plain `http://` server) or reqwest
//! (TLS, proxies, redirects, the GET streams). One type, so the answer is read one way.

use std::error::Error;

use bytes::Bytes;
use futures_util::Stream;
use http_body_util::{BodyDataStream, BodyExt, Either};
use hyper::body::Incoming;
use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE};

use super::describe;

/// A response: status, headers and the body as it comes, from either client.
pub(super) type Answer = http::Response<Either<Incoming, reqwest::Body>>;

/// Takes reqwest's response as an [`Answer`] (its headers moved, not copied).
pub(super) fn from_reqwest(resp: reqwest::Response) -> Answer {
    http::Response::<reqwest::Body>::from(resp).map(Either::Right)
}

/// The media type of a response, lower-case, without parameters (`text/event-stream`).
pub(super) fn content_type(resp: &Answer) -> String {
    let value = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let value = value.unwrap_or("").split(';').next().unwrap_or("");
    value.trim().to_ascii_lowercase()
}

/// Why a body could not be read whole.
pub(super) enum BodyError {
    /// Longer than allowed: the length read so far, in bytes.
    TooLong(usize),
    /// The connection broke while it was read (in words, see [`describe_error`]).
    Http(String),
}

/// The body, read frame by frame, refused once longer than `max` bytes.
pub(super) async fn read_limited(resp: &mut Answer, max: usize) -> Result<Vec<u8>, BodyError> {
    let announced = resp
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    let mut body = Vec::with_capacity(announced.unwrap_or(0).min(1 << 20));
    while let Some(frame) = resp.body_mut().frame().await {
        let frame = frame.map_err(|e| BodyError::Http(describe_error(&*e)))?;
        let Ok(chunk) = frame.into_data() else {
            continue;
        };
        if body.len() + chunk.len() > max {
            return Err(BodyError::TooLong(body.len() + chunk.len()));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The whole body as text (invalid UTF-8 replaced), or why it could not be read.
pub(super) async fn text(resp: Answer) -> Result<String, String> {
    let body = resp.into_body().collect().await;
    let body = body.map_err(|e| describe_error(&*e))?.to_bytes();
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// The body's bytes as a stream (for the SSE parser, which wants a `std::error::Error`).
pub(super) fn data_stream(
    resp: Answer,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + Unpin {
    BodyDataStream::new(resp.into_body().map_err(std::io::Error::other))
}

/// An error of either client in plain words, without the URL: reqwest's as [`describe`] says
/// it, any other as its innermost cause.
pub(super) fn describe_error(e: &(dyn Error + Send + Sync + 'static)) -> String {
    if let Some(e) = e.downcast_ref::<reqwest::Error>() {
        return describe(e);
    }
    innermost(e)
}

/// The innermost cause of `e`, e.g. `Connection reset by peer (os error 104)`.
pub(super) fn innermost(e: &(dyn Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}
