//! A JSON-RPC batch (a JSON array, JSON-RPC 2.0 "Batch") POSTed to the MCP endpoint.
//!
//! MCP 2025-03-26 "Transports: Streamable HTTP", "Sending Messages to the Server": the body of
//! a POST may be an array batching requests and/or notifications, or responses; input of
//! notifications and responses only is answered with 202 Accepted and no body, input with any
//! request with `Content-Type: application/json` or `text/event-stream`, the stream carrying
//! one response per request (which MAY be batched). 2025-06-18 removed batches, and 2026-07-28
//! has none. So a batch is taken only in a session that negotiated a version with batches
//! ([`crate::proxy::batches_allowed`]: 2025-03-26, and 2024-11-05, as over stdio); every other
//! batch is refused with 400 and a JSON-RPC error -32600 (`id` null), as before: a stateless
//! (2026-07-28) client's, one naming no session, one of a session of another version. A batch
//! naming a session that is unknown, ended or expired gets 404 (the client opens a new one).
//!
//! A batch taken:
//! - is checked whole first: an empty batch, a member that is not a valid JSON-RPC message, or
//!   an `initialize` (MCP 2025-03-26 "Lifecycle": it MUST NOT be part of a batch) refuses it
//!   with 400 naming the member, and nothing of it reaches the session (as a single message
//!   that is not valid is refused, never passed on);
//! - then each member goes to the session in order as if POSTed alone: a notification or a
//!   response is delivered, a request submitted (a request whose id is already in flight, in
//!   this batch or another POST, gets its -32600 answer in the batch's answer);
//! - with no request, the answer is 202 with no body;
//! - with requests, as a single request is answered: while every message the session sends
//!   for them is a response, the answer is one JSON array of the responses (`application/json`,
//!   in the order they came); as soon as another message for them comes first (progress, a
//!   server-to-client request), an SSE stream of every message, each response its own event
//!   (those already in first), ending after the last response.

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{stream, StreamExt};
use serde_json::Value;

use super::channel::{one_line, Channel, Out, SubmitError, Ticket};
use super::handlers::{closed, ended_session, error, event, json_response, refuse, sse};
use super::headers as mcp;
use super::App;
use crate::wire::jsonrpc::{self, Message};

/// POST of a batch `items` (see the module documentation).
pub(super) async fn post(app: &App, headers: &HeaderMap, items: Vec<Value>) -> Response {
    let channel = match batch_session(app, headers) {
        Ok(channel) => channel,
        Err(response) => return *response,
    };
    let members = match checked(items) {
        Ok(members) => members,
        Err(reason) => return refuse(StatusCode::BAD_REQUEST, Value::Null, error(-32600, &reason)),
    };
    let mut tickets = Vec::new();
    let mut answered = Vec::new();
    for (item, message) in members {
        let raw = serde_json::to_vec(&item).expect("a JSON value always serializes");
        match message {
            Message::Request { id, .. } => match channel.submit(item, raw, false).await {
                Ok(ticket) => tickets.push(ticket),
                Err(SubmitError::DuplicateId) => {
                    let e = error(-32600, &format!("request id {id} is already in flight"));
                    let answer = jsonrpc::error_response(id, e);
                    answered.push(serde_json::to_vec(&answer).expect("JSON serializes"));
                }
                Err(SubmitError::Closed) => return closed(Value::Null),
            },
            _ => {
                if channel.deliver(one_line(raw)).await.is_err() {
                    return closed(Value::Null);
                }
                if item["method"] == "notifications/cancelled" {
                    if let Some(request_id) = item.pointer("/params/requestId") {
                        channel.end_cancelled(request_id);
                    }
                }
            }
        }
    }
    if tickets.is_empty() && answered.is_empty() {
        return StatusCode::ACCEPTED.into_response();
    }
    answer(tickets, answered).await
}

/// The legacy session a batch may go to, or the answer refusing the batch (module doc).
fn batch_session(app: &App, headers: &HeaderMap) -> Result<Arc<Channel>, Box<Response>> {
    let no_batches = || {
        let e = error(
            -32600,
            "the body must be one JSON-RPC message (no batches): JSON-RPC batches are taken \
             only in a session that negotiated protocol version 2025-03-26",
        );
        Box::new(refuse(StatusCode::BAD_REQUEST, Value::Null, e))
    };
    let modern = mcp::header(headers, mcp::PROTOCOL_VERSION)
        .is_some_and(|v| crate::era::MODERN_VERSIONS.contains(&v));
    if modern || mcp::check_legacy_version(headers).is_err() {
        return Err(no_batches());
    }
    let named = mcp::session_id(headers);
    let session = named.map_err(|r| Box::new(refuse(r.status, Value::Null, r.error)))?;
    let Some(session) = session else {
        return Err(no_batches());
    };
    let Some(channel) = app.session(session) else {
        return Err(Box::new(ended_session(Value::Null)));
    };
    match channel.protocol_version() {
        Some(version) if crate::proxy::batches_allowed(version) => Ok(channel),
        _ => Err(no_batches()),
    }
}

/// Each member of a batch with what it is, or why the batch is refused whole: it is empty, or
/// a member is not a valid message or is `initialize` (module doc).
fn checked(items: Vec<Value>) -> Result<Vec<(Value, Message)>, String> {
    if items.is_empty() {
        return Err("an empty batch holds no message (JSON-RPC 2.0 \"Batch\")".into());
    }
    let mut members = Vec::with_capacity(items.len());
    for (at, item) in items.into_iter().enumerate() {
        let message = jsonrpc::classify_value(item.clone());
        match &message {
            Message::Invalid { reason, .. } => {
                return Err(format!(
                    "batch member {at} is not a valid message: {reason}"
                ));
            }
            Message::Request { method, .. } if method == "initialize" => {
                return Err(format!(
                    "batch member {at} is `initialize`, which cannot be part of a batch \
                     (MCP 2025-03-26 \"Lifecycle\")"
                ));
            }
            _ => members.push((item, message)),
        }
    }
    Ok(members)
}

/// The answer to the requests of a batch: `answered` (the answers made at once) and what the
/// session sends for each ticket, as one JSON array while only responses come, else as an SSE
/// stream (module doc). A request the client cancelled has no response in either.
async fn answer(tickets: Vec<Ticket>, mut answered: Vec<Vec<u8>>) -> Response {
    let each = tickets.into_iter().map(|ticket| {
        Box::pin(stream::unfold(ticket, |mut ticket| async move {
            let out = ticket.next().await?;
            Some((out, ticket))
        }))
    });
    let mut merged =
        stream::select_all(each).filter(|out| futures_util::future::ready(!out.is_cancelled()));
    while let Some(out) = merged.next().await {
        if out.last {
            answered.push(out.json);
            continue;
        }
        let first = answered.into_iter().map(|json| Out { json, last: true });
        let all = stream::iter(first).chain(stream::iter([out])).chain(merged);
        return sse(all.map(event), None);
    }
    if answered.is_empty() {
        return sse(stream::empty(), None);
    }
    json_response(StatusCode::OK, array(&answered), None)
}

/// The JSON array of the JSON texts `items`.
fn array(items: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(items.iter().map(|i| i.len() + 1).sum::<usize>() + 1);
    out.push(b'[');
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item);
    }
    out.push(b']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_batch_is_refused_whole_for_an_invalid_member_or_initialize() {
        let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(checked(vec![ping.clone(), note]).unwrap().len(), 2);
        assert!(checked(vec![]).unwrap_err().contains("empty batch"));
        let bad = json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"});
        let why = checked(vec![ping.clone(), bad]).unwrap_err();
        assert!(
            why.starts_with("batch member 1 is not a valid message"),
            "{why}"
        );
        let init = json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {}});
        let why = checked(vec![init, ping]).unwrap_err();
        assert!(why.contains("batch member 0 is `initialize`"), "{why}");
    }

    #[test]
    fn answers_join_into_one_array() {
        let items = [b"{\"id\":1}".to_vec(), b"{\"id\":2}".to_vec()];
        assert_eq!(array(&items), b"[{\"id\":1},{\"id\":2}]");
        assert_eq!(array(&[]), b"[]");
    }
}
