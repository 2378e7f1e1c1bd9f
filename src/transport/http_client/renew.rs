//! A new streamable-HTTP session when the server forgot ours (it restarted while we were
//! idle, or expired the session): the `initialize` that opened the first session is POSTed
//! again without a session id, its answer must be a result, the new `Mcp-Session-Id` is kept,
//! `notifications/initialized` follows, and the GET stream of server messages is opened again.
//! The connection above is told ([`Inbox::renewed`]), so that the logging level and the
//! resource subscriptions are sent to the server again, as to a restarted server.
//! Requests that met the forgotten session wait for this and are then sent again, once.
//!
//! Source: MCP specification 2025-11-25, "Transports: Streamable HTTP", session management:
//! "When a client receives HTTP 404 in response to a request containing an `Mcp-Session-Id`,
//! it MUST start a new session by sending a new `InitializeRequest` without a session ID
//! attached." Servers built on the TypeScript SDK answer an unknown session id with 400 and
//! "No valid session ID provided", which is treated the same way.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use reqwest::header::HeaderValue;
use sse_stream::SseByteStream;
use tracing::info;

use super::answer::{content_type, data_stream, read_limited, Answer, BodyError};
use super::{HttpTransport, Inbox, EVENT_STREAM, SESSION_ID};
use crate::wire::jsonrpc::{self, Incoming, Message};

impl HttpTransport {
    /// Opens a new session in place of `old` (see the module doc); does nothing when another
    /// request already replaced `old`. Errors say why the server refused the new session.
    pub(super) async fn renew_session<S: Inbox>(
        self: &Arc<Self>,
        old: &HeaderValue,
        sink: &S,
    ) -> Result<(), String> {
        let _one_at_a_time = self.renewing.lock().await;
        if self.session.read().unwrap().as_ref() != Some(old) {
            return Ok(());
        }
        let init = self.initialize_body.lock().unwrap().clone();
        let init = init.ok_or("the session was never initialized")?;
        *self.session.write().unwrap() = None;
        let resp = self.post_again(init).await?;
        let session = resp.headers().get(SESSION_ID).cloned();
        let answer = self.first_message(resp).await?;
        match jsonrpc::classify(&answer) {
            Incoming::Single(Message::Response { outcome: Ok(_), .. }) => {}
            _ => return Err("the new `initialize` was not answered with a result".into()),
        }
        *self.session.write().unwrap() = session;
        let initialized = jsonrpc::notification("notifications/initialized", None);
        self.post_again(Bytes::from(jsonrpc::to_line(&initialized)))
            .await?;
        info!(server = %self.server, "the server no longer knew our session; opened a new one");
        sink.renewed();
        self.start_listening(sink);
        Ok(())
    }

    /// POSTs `body` with the session headers; an error status or a failed connection is the
    /// error.
    async fn post_again(&self, body: Bytes) -> Result<Answer, String> {
        let resp = self.post(|_| {}, body).await?;
        if !resp.status().is_success() {
            return Err(format!(
                "the server answered HTTP {}",
                resp.status().as_u16()
            ));
        }
        Ok(resp)
    }

    /// The answer in a POST's response: its JSON body, or the first response on its SSE
    /// stream.
    async fn first_message(&self, mut resp: Answer) -> Result<Vec<u8>, String> {
        if content_type(&resp) != EVENT_STREAM {
            return read_limited(&mut resp, self.max_message_bytes)
                .await
                .map_err(|e| match e {
                    BodyError::TooLong(len) => format!("the answer is larger than max_message_bytes (reading stopped at {len} bytes)"),
                    BodyError::Http(detail) => detail,
                });
        }
        let mut events = std::pin::pin!(SseByteStream::new(data_stream(resp)));
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| format!("the SSE stream broke: {e}"))?;
            let data = event.data.unwrap_or_default().into_bytes();
            let message = matches!(event.event.as_deref(), None | Some("message"));
            if message
                && matches!(
                    jsonrpc::classify(&data),
                    Incoming::Single(Message::Response { .. })
                )
            {
                return Ok(data);
            }
        }
        Err("the SSE stream ended without an answer".into())
    }
}
