//! The HTTP layer against an in-memory fake session (no proxy, no servers): routing of answers,
//! progress, server-to-client requests and listen streams; sessions; the guards; shutdown.

use std::sync::{Arc, Mutex};

use super::host::SessionIo;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::*;

/// What the fake sessions were told: every line each received, in order.
#[derive(Default, Clone)]
pub(super) struct Seen(pub(super) Arc<Mutex<Vec<Value>>>);

/// A session that answers a few methods (see [`fake_session`]).
struct FakeHost {
    seen: Seen,
    release: Arc<tokio::sync::Notify>,
}

impl Host for FakeHost {
    fn open(&self) -> SessionIo {
        let (in_tx, in_rx) = mpsc::channel(16);
        let (out_tx, out_rx) = mpsc::channel(16);
        let release = self.release.clone();
        let finished = tokio::spawn(fake_session(in_rx, out_tx, self.seen.clone(), release));
        SessionIo {
            input: in_tx,
            output: out_rx,
            finished,
        }
    }
}

fn line(v: Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

/// `initialize`, `echo` and `tools/call` (with the id it saw) answer at once; `slow` sends progress first when asked; `ask` sends
/// a server-to-client request and answers with the client's reply; `tell` logs an unrelated
/// message first; `stray` sends progress for a token no request set, then a log message; `hang` never answers; `subscriptions/listen` acknowledges and completes when
/// the input ends; `late` answers once the test releases it (the session ends after that).
async fn fake_session(
    mut input: mpsc::Receiver<Vec<u8>>,
    out: mpsc::Sender<Vec<u8>>,
    seen: Seen,
    release: Arc<tokio::sync::Notify>,
) {
    let mut asked: Option<Value> = None;
    let mut listening: Vec<Value> = vec![];
    let mut late = vec![];
    while let Some(bytes) = input.recv().await {
        let msg: Value = serde_json::from_slice(&bytes).unwrap();
        seen.0.lock().unwrap().push(msg.clone());
        let id = msg["id"].clone();
        let reply = |result: Value| line(json!({"jsonrpc": "2.0", "id": id, "result": result}));
        match msg["method"].as_str() {
            Some("initialize") => {
                let _ = out
                    .send(reply(json!({"protocolVersion": "2025-11-25"})))
                    .await;
            }
            Some("echo") => {
                let _ = out.send(reply(json!({"echo": msg["params"]}))).await;
            }
            Some("tools/call") => {
                let _ = out.send(reply(json!({"wire_id": id}))).await;
            }
            Some("slow") => {
                if let Some(token) = msg.pointer("/params/_meta/progressToken") {
                    let p = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": 1}});
                    let _ = out.send(line(p)).await;
                }
                let _ = out.send(reply(json!({"done": true}))).await;
            }
            Some("stray") => stray(&out, reply(json!({}))).await,
            Some("tell") => {
                let n = json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "hello"}});
                let _ = out.send(line(n)).await;
                let _ = out.send(reply(json!({}))).await;
            }
            Some("ask") => {
                asked = Some(id.clone());
                let q = json!({"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create",
                    "params": {"message": "ok?"}});
                let _ = out.send(line(q)).await;
            }
            Some("subscriptions/listen") => {
                let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                    "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": id}}});
                let _ = out.send(line(ack)).await;
                listening.push(id);
            }
            Some("late") => {
                let (release, out, answer) = (release.clone(), out.clone(), reply(json!({})));
                late.push(tokio::spawn(async move {
                    release.notified().await;
                    let _ = out.send(answer).await;
                }));
            }
            Some("unknown") => {
                let e =
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}});
                let _ = out.send(line(e)).await;
            }
            None if msg["id"] == "srv-1" => {
                if let Some(asked) = asked.take() {
                    let r =
                        json!({"jsonrpc": "2.0", "id": asked, "result": {"answer": msg["result"]}});
                    let _ = out.send(line(r)).await;
                }
            }
            _ => {}
        }
    }
    for task in late {
        let _ = task.await;
    }
    for id in listening {
        let done = json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete",
            "_meta": {"io.modelcontextprotocol/subscriptionId": id}}});
        let _ = out.send(line(done)).await;
    }
}

/// Progress for a token no request set, a log message, then `answer`.
async fn stray(out: &mpsc::Sender<Vec<u8>>, answer: Vec<u8>) {
    let p = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": "not-this-sessions", "progress": 1}});
    let n = json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": "after"}});
    for message in [line(p), line(n), answer] {
        let _ = out.send(message).await;
    }
}

pub(super) struct Server {
    pub(super) url: String,
    pub(super) seen: Seen,
    pub(super) release: Arc<tokio::sync::Notify>,
    pub(super) stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub(super) task: tokio::task::JoinHandle<std::io::Result<()>>,
    pub(super) http: reqwest::Client,
}

pub(super) async fn start(options: HttpOptions) -> Server {
    start_at("127.0.0.1:0", options).await
}

/// The endpoint over the fake sessions, listening on `bind` (an IPv4 address and port); its
/// `url` reaches it at 127.0.0.1.
pub(super) async fn start_at(bind: &str, options: HttpOptions) -> Server {
    let listener = TcpListener::bind(bind).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let seen = Seen::default();
    let release = Arc::new(tokio::sync::Notify::new());
    let host = Arc::new(FakeHost {
        seen: seen.clone(),
        release: release.clone(),
    });
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let stop = async move {
        let _ = stop_rx.await;
    };
    let task = tokio::spawn(serve(listener, host, options, stop));
    Server {
        url,
        seen,
        release,
        stop: Some(stop_tx),
        task,
        http: reqwest::Client::new(),
    }
}

pub(super) fn defaults() -> HttpOptions {
    HttpOptions {
        max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        ..HttpOptions::default()
    }
}

const BOTH: &str = "application/json, text/event-stream";

impl Server {
    pub(super) fn post(&self, body: &Value, session: Option<&str>) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.url)
            .header("accept", BOTH)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(body).unwrap());
        if let Some(s) = session {
            request = request.header("mcp-session-id", s);
        }
        request
    }

    pub(super) async fn get_stream(&self, session: &str) -> reqwest::Response {
        self.http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session)
            .send()
            .await
            .unwrap()
    }

    pub(super) async fn initialize(&self) -> String {
        let response = self
            .post(&init_message(json!(0)), None)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(session.len(), 32, "{session}");
        let body = json_of(response).await;
        assert_eq!(body["result"]["protocolVersion"], "2025-11-25");
        session
    }
}

/// An `initialize` request under `id` with the params MCP 2025-11-25 requires.
pub(super) fn init_message(id: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "http-test", "version": "1"}}})
}

pub(super) fn request(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub(super) async fn json_of(response: reqwest::Response) -> Value {
    serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
}

/// The JSON messages of an SSE body.
fn sse_messages(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

#[tokio::test]
async fn legacy_sessions_are_opened_named_and_ended() {
    let server = start(defaults()).await;
    let session = server.initialize().await;
    let echo = request(json!(1), "echo", json!({"x": 1}));
    let response = server.post(&echo, Some(&session)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body = json_of(response).await;
    assert_eq!(body["id"], 1);
    assert_eq!(body["result"]["echo"]["x"], 1);

    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = server.post(&note, Some(&session)).send().await.unwrap();
    assert_eq!(response.status(), 202);
    assert_eq!(response.text().await.unwrap(), "");

    let missing = server.post(&echo, None).send().await.unwrap();
    assert_eq!(missing.status(), 400);
    let unknown = server.post(&echo, Some("0123")).send().await.unwrap();
    assert_eq!(unknown.status(), 404);

    let other = server.initialize().await;
    assert_ne!(other, session, "each initialize opens its own session");

    let deleted = server
        .http
        .delete(&server.url)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    let after = server.post(&echo, Some(&session)).send().await.unwrap();
    assert_eq!(after.status(), 404);
    let still = server.post(&echo, Some(&other)).send().await.unwrap();
    assert_eq!(still.status(), 200);
    let seen = server.seen.0.lock().unwrap().clone();
    assert!(seen.contains(&note), "the notification reached the session");
}

#[tokio::test]
async fn progress_for_a_token_no_request_of_the_session_set_is_dropped() {
    let server = start(defaults()).await;
    let session = server.initialize().await;
    let stray = request(json!(5), "stray", json!({}));
    let response = server.post(&stray, Some(&session)).send().await.unwrap();
    let messages = sse_messages(&response.text().await.unwrap());
    let methods: Vec<&Value> = messages.iter().map(|m| &m["method"]).collect();
    assert_eq!(
        methods,
        [&json!("notifications/message"), &Value::Null],
        "{messages:?}"
    );
    assert_eq!(messages[1]["id"], 5);
}

#[tokio::test]
async fn related_messages_turn_the_answer_into_a_stream() {
    let server = start(defaults()).await;
    let session = server.initialize().await;
    let slow = request(json!(7), "slow", json!({"_meta": {"progressToken": "p7"}}));
    let response = server.post(&slow, Some(&session)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let messages = sse_messages(&response.text().await.unwrap());
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0]["params"]["progressToken"], "p7");
    assert_eq!(messages[1]["id"], 7);
    assert_eq!(messages[1]["result"]["done"], true);

    // A server-to-client request with no GET stream open goes on the waiting POST's stream;
    // the client's reply is POSTed back and accepted with 202.
    let server = Arc::new(server);
    let asking = {
        let server = server.clone();
        let session = session.clone();
        tokio::spawn(async move {
            let ask = request(json!(8), "ask", json!({}));
            let response = server.post(&ask, Some(&session)).send().await.unwrap();
            response.text().await.unwrap()
        })
    };
    let reply = json!({"jsonrpc": "2.0", "id": "srv-1", "result": {"action": "accept"}});
    let mut accepted = false;
    for _ in 0..100 {
        let asked = server
            .seen
            .0
            .lock()
            .unwrap()
            .iter()
            .any(|m| m["method"] == "ask");
        if asked {
            let r = server.post(&reply, Some(&session)).send().await.unwrap();
            accepted = r.status() == 202;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(accepted);
    let messages = sse_messages(&asking.await.unwrap());
    assert_eq!(messages[0]["method"], "elicitation/create");
    assert_eq!(messages[1]["id"], 8);
    assert_eq!(messages[1]["result"]["answer"]["action"], "accept");
}

#[tokio::test]
async fn unrelated_messages_wait_for_and_use_the_get_stream() {
    let server = start(defaults()).await;
    let session = server.initialize().await;
    // No GET stream is open: the unrelated log message goes with the waiting request.
    let tell = request(json!(2), "tell", json!({}));
    let response = server.post(&tell, Some(&session)).send().await.unwrap();
    let first = response.text().await.unwrap();
    let messages = sse_messages(&first);
    assert_eq!(messages[0]["method"], "notifications/message");

    let mut get = server.get_stream(&session).await;
    assert_eq!(get.status(), 200);
    let second = server.get_stream(&session).await;
    assert_eq!(second.status(), 409, "one GET stream per session");
    // Now the same message goes to the GET stream, and the POST is plain JSON.
    let response = server.post(&tell, Some(&session)).send().await.unwrap();
    assert_eq!(response.headers()["content-type"], "application/json");
    let mut text = String::new();
    while !text.contains("notifications/message") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), get.chunk())
            .await
            .expect("the GET stream delivers")
            .unwrap()
            .expect("the GET stream stays open");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert_eq!(sse_messages(&text)[0]["params"]["data"], "hello");
}

pub(super) fn modern(
    id: Value,
    method: &str,
    mut params: Value,
) -> (Value, Vec<(&'static str, String)>) {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28".to_owned()),
        ("mcp-method", method.to_owned()),
    ];
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        headers.push(("mcp-name", name.to_owned()));
    }
    (request(id, method, params), headers)
}

impl Server {
    pub(super) fn post_modern(
        &self,
        (body, headers): &(Value, Vec<(&'static str, String)>),
    ) -> reqwest::RequestBuilder {
        headers
            .iter()
            .fold(self.post(body, None), |r, (k, v)| r.header(*k, v))
    }
}

#[tokio::test]
async fn stateless_requests_share_one_session_without_colliding() {
    let server = start(defaults()).await;
    let a = modern(json!(1), "echo", json!({"name": "a"}));
    let b = modern(json!(1), "slow", json!({"name": "b"}));
    let hang = modern(json!(1), "hang", json!({}));
    // Three requests with the same id at once: the fake answers two; the third stays open.
    let pending = server.post_modern(&hang).send();
    let pending = tokio::spawn(pending);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (ra, rb) = tokio::join!(server.post_modern(&a).send(), server.post_modern(&b).send());
    let (ra, rb) = (json_of(ra.unwrap()).await, json_of(rb.unwrap()).await);
    assert_eq!(ra["id"], 1);
    assert_eq!(ra["result"]["echo"]["name"], "a");
    assert_eq!(rb["id"], 1);
    assert_eq!(rb["result"]["done"], true);
    assert!(server
        .post_modern(&a)
        .send()
        .await
        .unwrap()
        .headers()
        .get("mcp-session-id")
        .is_none());

    // The client goes away: the session is told to cancel that request.
    pending.abort();
    let mut cancelled = false;
    for _ in 0..100 {
        let seen = server.seen.0.lock().unwrap().clone();
        let hang_id = seen
            .iter()
            .find(|m| m["method"] == "hang")
            .map(|m| m["id"].clone());
        cancelled = seen.iter().any(|m| {
            m["method"] == "notifications/cancelled"
                && Some(&m["params"]["requestId"]) == hang_id.as_ref()
        });
        if cancelled {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(cancelled, "a closed response cancels its request");
}

#[tokio::test]
async fn stateless_tool_calls_get_unguessable_wire_ids_legacy_ones_keep_theirs() {
    let server = start(defaults()).await;
    let call = || {
        modern(
            json!(5),
            "tools/call",
            json!({"name": "t", "arguments": {}}),
        )
    };
    let (a, b) = (call(), call());
    let (ra, rb) = tokio::join!(server.post_modern(&a).send(), server.post_modern(&b).send());
    let (ra, rb) = (json_of(ra.unwrap()).await, json_of(rb.unwrap()).await);
    let mut wire_ids = vec![];
    for answer in [&ra, &rb] {
        assert_eq!(answer["id"], 5, "the client's id comes back: {answer}");
        let wire = answer["result"]["wire_id"].as_str().unwrap().to_owned();
        let hex = wire.chars().all(|c| c.is_ascii_hexdigit());
        assert!(wire.len() == 32 && hex, "not 128 random bits: {wire}");
        wire_ids.push(wire);
    }
    assert_ne!(wire_ids[0], wire_ids[1]);
    // Other stateless requests keep their ids while they do not collide.
    let echo = json_of(
        server
            .post_modern(&modern(json!(7), "echo", json!({})))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(echo["id"], 7);
    assert_eq!(server.seen.0.lock().unwrap().last().unwrap()["id"], 7);
    // A legacy session's call ids stay the client's (as over stdio).
    let session = server.initialize().await;
    let body = request(
        json!(5),
        "tools/call",
        json!({"name": "t", "arguments": {}}),
    );
    let legacy = server.post(&body, Some(&session)).send().await.unwrap();
    assert_eq!(json_of(legacy).await["result"]["wire_id"], 5);
}

#[tokio::test]
async fn stateless_headers_and_errors_map_to_statuses() {
    let server = start(defaults()).await;
    let (body, mut headers) = modern(json!(3), "tools/call", json!({"name": "echo"}));
    headers.retain(|(k, _)| *k != "mcp-name");
    let response = server.post_modern(&(body, headers)).send().await.unwrap();
    assert_eq!(response.status(), 400);
    let error = json_of(response).await;
    assert_eq!(error["error"]["code"], -32020);
    assert_eq!(error["id"], 3);

    let unknown = modern(json!(4), "unknown", json!({}));
    let response = server.post_modern(&unknown).send().await.unwrap();
    assert_eq!(response.status(), 404);
    let error = json_of(response).await;
    assert_eq!(error["error"]["code"], -32601);

    let get = server
        .http
        .get(&server.url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status(), 405);
}

#[tokio::test]
async fn bodies_that_are_not_one_valid_message_are_refused_at_once() {
    let server = start(defaults()).await;
    let session = server.initialize().await;
    let no_id = "`id` must be a string or an integer";
    let cases = [
        (
            json!({"jsonrpc": "2.0", "id": null, "method": "ping"}),
            no_id,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
            no_id,
        ),
        (
            json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}),
            no_id,
        ),
        (
            json!({"jsonrpc": "2.0", "id": true, "method": "ping"}),
            no_id,
        ),
        (
            json!({"jsonrpc": "2.0", "foo": 1}),
            "a message needs a `method` or an `id`",
        ),
        (json!("hello"), "a JSON-RPC message must be a JSON object"),
        (
            json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
            "no batches",
        ),
    ];
    for (body, why) in cases {
        for modern in [false, true] {
            let request = if modern {
                let headers = vec![
                    ("mcp-protocol-version", "2026-07-28".to_owned()),
                    ("mcp-method", "ping".to_owned()),
                ];
                server.post_modern(&(body.clone(), headers))
            } else {
                server.post(&body, Some(&session))
            };
            let response = tokio::time::timeout(Duration::from_secs(5), request.send())
                .await
                .unwrap_or_else(|_| panic!("no answer to {body}"))
                .unwrap();
            assert_eq!(response.status(), 400, "{body}");
            let answer = json_of(response).await;
            assert_eq!(answer["id"], Value::Null, "{body}");
            assert_eq!(answer["error"]["code"], -32600, "{body}");
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(message.contains(why), "{body}: {message}");
        }
    }
    // The session still answers.
    let ping = server.post(&request(json!(9), "echo", json!({})), Some(&session));
    assert_eq!(ping.send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn foreign_origins_missing_tokens_and_large_bodies_are_refused() {
    let mut options = defaults();
    options.auth_token = Some("s3cret".into());
    options.max_body_bytes = 1024;
    let server = start(options).await;
    let init = init_message(json!(0));
    let big = request(json!(1), "echo", json!({"pad": "x".repeat(2000)}));
    let cases: [(&Value, Option<&str>, Option<&str>, u16); 6] = [
        (&init, None, None, 401),
        (&init, Some("nope"), None, 401),
        (&init, Some("s3cret"), None, 200),
        (&init, Some("s3cret"), Some("https://evil.example"), 403),
        (&init, Some("s3cret"), Some("http://localhost:3000"), 200),
        (&big, Some("s3cret"), None, 413),
    ];
    for (body, token, origin, status) in cases {
        let mut post = server.post(body, None);
        if let Some(token) = token {
            post = post.bearer_auth(token);
        }
        if let Some(origin) = origin {
            post = post.header("origin", origin);
        }
        let response = post.send().await.unwrap();
        assert_eq!(response.status(), status, "{token:?} {origin:?}");
        if status == 401 {
            let challenge = response.headers()["www-authenticate"].to_str().unwrap();
            assert!(challenge.starts_with("Bearer"), "{challenge}");
        }
    }
}

#[tokio::test]
async fn stopping_closes_listen_streams_and_sessions() {
    let mut server = start(defaults()).await;
    let session = server.initialize().await;
    let listen = modern(
        json!("L"),
        "subscriptions/listen",
        json!({"notifications": {}}),
    );
    let mut stream = server.post_modern(&listen).send().await.unwrap();
    let first = stream.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("acknowledged"));
    server.stop.take().unwrap().send(()).unwrap();
    let mut rest = String::new();
    while let Ok(Some(chunk)) = stream.chunk().await {
        rest.push_str(&String::from_utf8_lossy(&chunk));
    }
    let last = sse_messages(&rest).pop().expect("a closing answer");
    assert_eq!(last["id"], "L");
    assert_eq!(last["result"]["resultType"], "complete");
    tokio::time::timeout(Duration::from_secs(20), &mut server.task)
        .await
        .expect("the server stops")
        .unwrap()
        .unwrap();
    let echo = request(json!(1), "echo", json!({}));
    assert!(
        server.post(&echo, Some(&session)).send().await.is_err(),
        "nothing listens any more"
    );
}
