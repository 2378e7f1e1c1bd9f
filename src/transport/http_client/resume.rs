//! SSE streams that break before the answer came, resumed (MCP specification 2025-11-25,
//! "Transports: Streamable HTTP", "Resumability and Redelivery"): a server that gives its SSE
//! events `id`s lets a client that lost the stream reconnect with a GET carrying
//! `Last-Event-ID: <the last id it saw>`; the server replays what it sent after that event on
//! the stream that broke, and the rest follows there. The client waits the `retry` the server
//! last asked for before reconnecting. A server may also close a request's stream on purpose
//! before answering (after an event with an id), expecting exactly this.
//!
//! Here: a request's response stream that ends or breaks before its response, after the
//! server gave an event id, is resumed with GET + `Last-Event-ID` (session headers too), again
//! while each new stream brings events, at most [`MAX_IDLE_RESUMES`] times in a row without
//! one, and only while the request still waits (a timed-out call is not resumed). A stream
//! without event ids, or a resume the server refuses, fails the request as a
//! broken connection (`server_error`, retryable). The GET stream of server messages is
//! reopened with `Last-Event-ID` in the same way. 2026-07-28 streams are not resumable (that
//! revision dropped it) and are never resumed.
//!
//! Server requests that arrive on a request's stream (before or after a resume) belong to that
//! request ([`Seen::Request`]): the transport tells the [`super::Inbox`] which request caused
//! them.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::ACCEPT;
use reqwest::Method;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;
use tracing::debug;

use super::answer::{content_type, from_reqwest, Answer};
use super::{describe, Fault, HttpTransport, Inbox, EVENT_STREAM};
use crate::wire::head::response_head;

/// `Last-Event-ID`.
const LAST_EVENT_ID: &str = "last-event-id";
/// Wait before a resume (or reopening the GET stream) when the server named no `retry`.
pub const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// Longest wait before a resume, whatever `retry` the server asks for.
pub const MAX_RETRY: Duration = Duration::from_secs(30);
/// Resumes in a row that brought no event before the request is failed.
pub const MAX_IDLE_RESUMES: u32 = 5;

/// Where an SSE stream got to.
#[derive(Debug, Default)]
pub(super) struct Cursor {
    /// The last event id the server gave (`id:` field).
    pub(super) last_event_id: Option<String>,
    /// The reconnection delay it last asked for (`retry:` field, ms).
    pub(super) retry: Option<Duration>,
    /// Whether the awaited response came.
    pub(super) answered: bool,
    /// Events read since the stream was (re)opened.
    pub(super) events: u64,
}

impl Cursor {
    /// Notes an event's `id` and `retry` fields.
    pub(super) fn saw(&mut self, event: &sse_stream::Sse) {
        self.events += 1;
        if let Some(id) = &event.id {
            self.last_event_id = Some(id.clone());
        }
        if let Some(ms) = event.retry {
            self.retry = Some(Duration::from_millis(ms));
        }
    }

    /// How long to wait before resuming.
    pub(super) fn delay(&self) -> Duration {
        self.retry.unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)
    }
}

/// What one message on a request's response stream is, for that request.
#[derive(Debug, PartialEq)]
pub(super) enum Seen {
    /// The response to it.
    Answer,
    /// A server request (id given), caused by it.
    Request(Value),
    /// Anything else (a notification, another response).
    Other,
    /// No JSON at all (serde_json's reason): nobody can read it, so it answers the request
    /// as an invalid response rather than leaving it to "ended without a response".
    NotJson(String),
}

#[derive(Deserialize)]
struct Head {
    id: Option<Value>,
    method: Option<IgnoredAny>,
    result: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
}

/// What message `data` is for request `owner`: a success response's head is read without
/// parsing its result ([`response_head`]); anything else is parsed (skipping values).
pub(super) fn seen(data: &str, owner: &Value) -> Seen {
    if let Some(id) = response_head(data) {
        return if &id == owner {
            Seen::Answer
        } else {
            Seen::Other
        };
    }
    let head = match serde_json::from_str::<Head>(data) {
        Ok(head) => head,
        // Valid JSON of another shape (an array, a string) is a message nobody waits for.
        Err(e) if e.is_syntax() || e.is_eof() => return Seen::NotJson(e.to_string()),
        Err(_) => return Seen::Other,
    };
    match head {
        Head {
            id: Some(id),
            method: Some(_),
            ..
        } => Seen::Request(id),
        Head { id: Some(id), .. }
            if &id == owner && (head.result.is_some() || head.error.is_some()) =>
        {
            Seen::Answer
        }
        _ => Seen::Other,
    }
}

/// Whether a JSON answer `body` is the response to our request `id` (then nothing is left to
/// fail once it is dispatched; any other body leaves the request unanswered).
pub(super) fn answers(body: &[u8], id: &Value) -> bool {
    std::str::from_utf8(body).is_ok_and(|text| seen(text, id) == Seen::Answer)
}

impl HttpTransport {
    /// Reads request `id`'s SSE response stream to its end. When it ends or breaks before the
    /// response and the server gave event ids, it is resumed (`http_client/resume.rs`) when
    /// `resumable` (2025 era); else, or when it cannot be resumed, the request fails as a broken
    /// connection.
    pub(super) async fn follow_stream<S: Inbox>(
        &self,
        resp: Answer,
        id: Option<&Value>,
        resumable: bool,
        sink: &S,
    ) {
        let mut cursor = Cursor::default();
        let mut read = self.read_events(resp, id, &mut cursor, sink).await;
        let mut idle = 0;
        // Why the stream first broke, and how often in a row resuming it failed since.
        let mut broke: Option<String> = None;
        let mut failed_resumes = 0;
        loop {
            let Some(owner) = id.filter(|_| !cursor.answered) else {
                return;
            };
            if !sink.is_waiting(owner) {
                return;
            }
            if cursor.events > 0 {
                idle = 0;
            }
            let why = match read {
                Err(why) => why,
                Ok(()) => "the server ended its answer without a response to the request".into(),
            };
            let why = match &broke {
                Some(first) if failed_resumes > 0 => {
                    format!(
                        "{first}; resuming it failed ({failed_resumes} time(s)), the last: {why}"
                    )
                }
                _ => why,
            };
            if !resumable || cursor.last_event_id.is_none() || idle >= MAX_IDLE_RESUMES {
                return sink.fail(id, Fault::Connection(why)).await;
            }
            debug!(server = %self.server, %why, "resuming the SSE stream of a request");
            idle += 1;
            cursor.events = 0;
            tokio::time::sleep(cursor.delay()).await;
            read = match self.open_get(cursor.last_event_id.as_deref()).await {
                Ok(resp) => {
                    (broke, failed_resumes) = (None, 0);
                    self.read_events(resp, id, &mut cursor, sink).await
                }
                Err(e) => {
                    broke.get_or_insert(why);
                    failed_resumes += 1;
                    Err(e.to_string())
                }
            };
        }
    }

    /// Reads the GET stream of server-initiated messages in a task of its own, unless it is
    /// being read already.
    pub(super) fn start_listening<S: Inbox>(self: &Arc<Self>, sink: &S) {
        if self.listening.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = self.clone();
        let sink = sink.clone();
        let listen = tokio::spawn(async move {
            me.clone().listen(sink).await;
            me.listening.store(false, Ordering::Release);
        });
        self.readers.lock().unwrap().push(listen.abort_handle());
    }

    /// Opens the GET stream of server-initiated messages and reads it, again after it ends
    /// (with `Last-Event-ID` when the server gave event ids, after the `retry` it asked for),
    /// until the connection closes; stops for good on an error status (405: none offered).
    async fn listen<S: Inbox>(self: Arc<Self>, sink: S) {
        let mut cursor = Cursor::default();
        loop {
            match self.open_get(cursor.last_event_id.as_deref()).await {
                Ok(r) => {
                    if let Err(e) = self.read_events(r, None, &mut cursor, &sink).await {
                        debug!(server = %self.server, error = %e, "GET stream ended");
                    }
                }
                Err(why) => {
                    debug!(server = %self.server, %why, "no GET stream for server messages");
                    return;
                }
            }
            if sink.is_closed() {
                return;
            }
            tokio::time::sleep(cursor.delay()).await;
        }
    }

    /// Opens a GET stream with the session headers: the stream of server messages, or with
    /// `last_event_id` the stream that broke after that event, resumed. `Err` says why the
    /// server would not open it (an error status: 405 when it offers none).
    pub(super) async fn open_get(&self, last_event_id: Option<&str>) -> Result<Answer, String> {
        let mut get = self
            .request(Method::GET, self.endpoint.clone())
            .header(ACCEPT, EVENT_STREAM);
        if let Some(id) = last_event_id {
            get = get.header(LAST_EVENT_ID, id);
        }
        let resp = from_reqwest(get.send().await.map_err(|e| describe(&e))?);
        let status = resp.status();
        if status.is_success() && content_type(&resp) == EVENT_STREAM {
            if last_event_id.is_some() {
                debug!(server = %self.server, ?last_event_id, "SSE stream resumed");
            }
            return Ok(resp);
        }
        Err(format!(
            "the server answered the GET with HTTP {}",
            status.as_u16()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_on_a_request_stream_are_told_apart() {
        let owner = json!(7);
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
            "x".repeat(10_000)
        );
        assert_eq!(seen(&big, &owner), Seen::Answer);
        let ts_order = r#"{"result":{},"jsonrpc":"2.0","id":7}"#;
        assert_eq!(seen(ts_order, &owner), Seen::Answer);
        assert!(matches!(seen("{broken", &owner), Seen::NotJson(_)));
        assert_eq!(seen("[1]", &owner), Seen::Other);
        let error = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"x"}}"#;
        assert_eq!(seen(error, &owner), Seen::Answer);
        let other = r#"{"jsonrpc":"2.0","id":8,"result":{}}"#;
        assert_eq!(seen(other, &owner), Seen::Other);
        let request = r#"{"jsonrpc":"2.0","id":"s-1","method":"elicitation/create","params":{}}"#;
        assert_eq!(seen(request, &owner), Seen::Request(json!("s-1")));
        let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;
        assert_eq!(seen(progress, &owner), Seen::Other);
        assert!(matches!(seen("not json", &owner), Seen::NotJson(_)));
    }

    #[test]
    fn a_json_answer_answers_only_its_own_request() {
        let body = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
        assert!(answers(body, &json!(7)));
        assert!(!answers(body, &json!(8)));
        let error = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"m"}}"#;
        assert!(!answers(error, &json!(7)));
        assert!(!answers(b"\xff not text", &json!(7)));
    }

    #[test]
    fn the_cursor_keeps_the_last_id_and_the_asked_delay() {
        let mut cursor = Cursor::default();
        assert_eq!(cursor.delay(), DEFAULT_RETRY);
        let event = |id: Option<&str>, retry| sse_stream::Sse {
            id: id.map(str::to_owned),
            retry,
            ..Default::default()
        };
        cursor.saw(&event(Some("a-1"), Some(2000)));
        cursor.saw(&event(None, None));
        assert_eq!(cursor.last_event_id.as_deref(), Some("a-1"));
        assert_eq!(cursor.delay(), Duration::from_secs(2));
        cursor.saw(&event(Some("a-2"), Some(10_000_000)));
        assert_eq!(cursor.last_event_id.as_deref(), Some("a-2"));
        assert_eq!(cursor.delay(), MAX_RETRY);
        assert_eq!(cursor.events, 3);
    }
}
