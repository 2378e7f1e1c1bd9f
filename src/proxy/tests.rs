//! In-process tests of the dispatch rules: [`serve`] driven over `tokio::io::duplex`, and two
//! sessions over one [`Core`]. Tools come from an in-memory cassette (no child process) except
//! where a request must stay in flight or a server must ask the client something: there the
//! fixture server (tests/fixtures/fixture_server.py, run by `python3`) answers.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::mpsc;

use super::session::Session;
use super::*;
use crate::cassette::{Cassette, Playback};
use crate::config::Config;

const WAIT: Duration = Duration::from_secs(60);

/// A config from TOML text.
fn config(text: &str) -> Arc<Config> {
    Arc::new(Config::parse(text, Path::new("test.toml"), &|_| None).expect("valid test config"))
}

/// A strict cassette offering tool `echo` of server `rec`, whose calls with `{"text": T}`
/// answer `T`, for each text in `texts` (in that order).
fn cassette(texts: &[&str]) -> Playback {
    let tool = json!({"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}});
    let mut lines = vec![
        json!({"v": 1, "kind": "tools", "recorded_at": "2026-12-01T00:00:00.000Z",
        "server": "rec", "tools": [tool]})
        .to_string(),
    ];
    for (seq, text) in texts.iter().enumerate() {
        lines.push(
            json!({
                "v": 1, "started_at": "2026-12-01T00:00:00.000Z", "seq": seq,
                "call_id": seq.to_string(), "tool": "echo", "server": "rec", "server_tool": "echo",
                "arguments": {"text": text}, "char_budget": 2000, "timeout_ms": 1000,
                "outcome": {"kind": "result", "result": {"content": [{"type": "text", "text": text}]}},
                "envelope": {"call_id": seq.to_string(), "tool": "echo", "status": "ok",
                             "content": text, "omitted": 0, "retryable": false},
                "duration_ms": 1
            })
            .to_string(),
        );
    }
    let text = lines.join("\n") + "\n";
    let t = crate::transcript::parse_transcript(&text, Path::new("cassette.jsonl")).unwrap();
    Playback::new(Cassette::new(&t, Vec::new()), false)
}

/// A TOML table for the fixture server named `name`.
fn fixture_server(name: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fixture_server.py");
    format!(
        "[mcp_servers.{name}]\ncommand = \"python3\"\nargs = [{:?}, \"--name\", \"{name}\"]\ntool_prefix = \"{name}_\"\n",
        script.display().to_string()
    )
}

fn initialize(id: Value, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version,
        "capabilities": {"sampling": {}, "roots": {"listChanged": true}},
        "clientInfo": {"name": "in-process", "version": "1"}}})
}

fn request(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn call(id: Value, tool: &str, arguments: Value) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

fn envelope(answer: &Value) -> Value {
    answer["result"]["structuredContent"].clone()
}

/// A client of [`serve`] over an in-memory pipe.
struct Piped {
    to_proxy: WriteHalf<DuplexStream>,
    from_proxy: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Piped {
    fn start(config: Arc<Config>, cassette: Option<Playback>) -> Piped {
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (input, output) = tokio::io::split(theirs);
        let stop = std::future::pending::<()>();
        let served = tokio::spawn(serve(config, input, output, None, cassette, stop));
        let (from_proxy, to_proxy) = tokio::io::split(ours);
        Piped {
            to_proxy,
            from_proxy: BufReader::new(from_proxy).lines(),
            served,
        }
    }

    async fn send_text(&mut self, text: &str) {
        self.to_proxy.write_all(text.as_bytes()).await.unwrap();
        self.to_proxy.write_all(b"\n").await.unwrap();
    }

    async fn send(&mut self, message: &Value) {
        self.send_text(&message.to_string()).await;
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.from_proxy.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("the proxy's output is open");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends `message` and returns the next message from the proxy.
    async fn ask(&mut self, message: &Value) -> Value {
        self.send(message).await;
        self.recv().await
    }

    /// Closes stdin and waits for `serve` to return.
    async fn finish(mut self) {
        self.to_proxy.shutdown().await.unwrap();
        let served = tokio::time::timeout(WAIT, self.served).await;
        served.expect("serve returns").unwrap().unwrap();
    }
}

#[tokio::test]
async fn initialize_ping_and_unknown_methods_follow_the_lifecycle() {
    let mut p = Piped::start(config(""), Some(cassette(&[])));
    let early = p.ask(&request(json!(1), "tools/list", json!({}))).await;
    assert_eq!(early["error"]["code"], -32600, "{early}");
    assert!(early["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not initialized"));
    let pong = p.ask(&request(json!("p0"), "ping", json!({}))).await;
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": "p0", "result": {}}));

    let init = p.ask(&initialize(json!(2), "2025-06-18")).await;
    assert_eq!(init["id"], 2);
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);
    assert!(init["result"]["instructions"]
        .as_str()
        .unwrap()
        .starts_with(OUR_INSTRUCTIONS));
    let again = p.ask(&initialize(json!(3), "2025-06-18")).await;
    assert_eq!(again["error"]["code"], -32600, "{again}");

    let unknown = p.ask(&request(json!(4), "no/such_method", json!({}))).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    assert_eq!(unknown["id"], 4);
    let garbage = p.ask_text("{not json").await;
    assert_eq!(garbage["error"]["code"], -32700, "{garbage}");
    assert_eq!(garbage["id"], Value::Null);
    let no_method = p.ask(&json!({"jsonrpc": "2.0", "id": 5})).await;
    assert_eq!(no_method["error"]["code"], -32600, "{no_method}");
    p.finish().await;
}

impl Piped {
    async fn ask_text(&mut self, text: &str) -> Value {
        self.send_text(text).await;
        self.recv().await
    }
}

#[tokio::test]
async fn an_unknown_protocol_version_gets_the_latest() {
    let mut p = Piped::start(config(""), Some(cassette(&[])));
    let init = p.ask(&initialize(json!(1), "1999-01-01")).await;
    assert_eq!(init["result"]["protocolVersion"], LATEST_PROTOCOL_VERSION);
    p.finish().await;
}

#[tokio::test]
async fn batches_only_where_the_version_has_them_and_ids_stay_unique() {
    let mut p = Piped::start(config(""), Some(cassette(&[])));
    p.ask(&initialize(json!(0), "2025-06-18")).await;
    let refused = p.ask(&json!([request(json!(1), "ping", json!({}))])).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(refused["id"], Value::Null);
    p.finish().await;

    let mut p = Piped::start(config(""), Some(cassette(&[])));
    p.ask(&initialize(json!(0), "2025-03-26")).await;
    let batch = json!([
        request(json!(1), "ping", json!({})),
        request(json!(1), "ping", json!({})),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        initialize(json!(2), "2025-03-26"),
        request(json!(3), "no/such_method", json!({})),
    ]);
    let answers = p.ask(&batch).await;
    let answers = answers.as_array().expect("one array for the batch");
    assert_eq!(
        answers.len(),
        4,
        "no answer for the notification: {answers:?}"
    );
    assert_eq!(answers[0], json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    assert_eq!(answers[1]["error"]["code"], -32600, "the duplicate id");
    assert_eq!(answers[2]["error"]["code"], -32600, "initialize in a batch");
    assert_eq!(answers[3]["error"]["code"], -32601);
    p.finish().await;
}

#[tokio::test]
async fn tools_are_listed_and_called_with_the_envelope() {
    let mut p = Piped::start(config(""), Some(cassette(&["hello"])));
    p.ask(&initialize(json!(0), "2025-11-25")).await;
    let list = p.ask(&request(json!(1), "tools/list", json!({}))).await;
    let tools = &list["result"]["tools"];
    assert_eq!(tools.as_array().map(Vec::len), Some(2), "{list}");
    assert_eq!(tools[0]["name"], "echo");
    assert_eq!(
        tools[1]["name"], "envelope_next_page",
        "the page tool comes last"
    );
    let answer = p
        .ask(&call(json!("c1"), "echo", json!({"text": "hello"})))
        .await;
    let env = envelope(&answer);
    assert_eq!(env["call_id"], "c1", "{answer}");
    assert_eq!(env["status"], "ok");
    assert_eq!(env["content"], "hello");
    let missing = p.ask(&call(json!(2), "nope", json!({}))).await;
    assert_eq!(envelope(&missing)["status"], "error", "{missing}");
    let bad = p
        .ask(&request(json!(3), "tools/call", json!({"name": 7})))
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    p.finish().await;
}

/// One session of a shared core, read through its output queue.
struct Client {
    session: Arc<Session>,
    out: mpsc::Receiver<Vec<u8>>,
}

impl Client {
    fn open(core: &Arc<Core>) -> Client {
        let (lines, out) = mpsc::channel(OUTPUT_QUEUE);
        let session = core.open_session(SessionOutput { lines, gate: None });
        Client { session, out }
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.out.recv())
            .await
            .expect("a message in time")
            .expect("the session's output is open");
        assert_eq!(line.last(), Some(&b'\n'), "one line per message");
        serde_json::from_slice(&line).unwrap()
    }

    async fn ask(&mut self, message: &Value) -> Value {
        self.session
            .feed_line(message.to_string().into_bytes())
            .await;
        self.recv().await
    }
}

#[tokio::test]
async fn two_sessions_share_one_core_and_keep_their_own_ids_and_state() {
    let core = Core::new(config(""), None);
    core.set_cassette(cassette(&["from a", "from b"]));
    let mut a = Client::open(&core);
    let mut b = Client::open(&core);
    assert_ne!(a.session.id(), b.session.id());
    let init_a = a.ask(&initialize(json!(1), "2025-06-18")).await;
    assert_eq!(init_a["result"]["protocolVersion"], "2025-06-18");
    // Before its own initialize, b is not initialized, whatever a did.
    let early = b.ask(&request(json!(1), "tools/list", json!({}))).await;
    assert_eq!(early["error"]["code"], -32600, "{early}");
    let init_b = b.ask(&initialize(json!(1), "2025-03-26")).await;
    assert_eq!(
        init_b["result"]["protocolVersion"], "2025-03-26",
        "{init_b}"
    );
    assert_eq!(b.session.protocol_version(), Some("2025-03-26"));
    assert_eq!(a.session.protocol_version(), Some("2025-06-18"));
    // The same client id in both sessions: each gets its own answer.
    let from_a = a
        .ask(&call(json!(7), "echo", json!({"text": "from a"})))
        .await;
    let from_b = b
        .ask(&call(json!(7), "echo", json!({"text": "from b"})))
        .await;
    assert_eq!(envelope(&from_a)["content"], "from a", "{from_a}");
    assert_eq!(envelope(&from_b)["content"], "from b", "{from_b}");
    // Batches follow each session's own version.
    let batch = json!([request(json!(8), "ping", json!({}))]);
    assert_eq!(a.ask(&batch).await["error"]["code"], -32600);
    assert_eq!(
        b.ask(&batch).await,
        json!([{"jsonrpc": "2.0", "id": 8, "result": {}}])
    );
    // A closed session leaves the other working.
    a.session.close().await;
    let pong = b.ask(&request(json!(9), "ping", json!({}))).await;
    assert_eq!(pong["result"], json!({}));
    b.session.close().await;
    core.shutdown().await;
}

#[tokio::test]
async fn a_session_pages_only_its_own_results() {
    let long: String = (0..200).map(|i| format!("line {i}\n")).collect();
    let core = Core::new(config("[defaults]\nchar_budget = 100\n"), None);
    core.set_cassette(cassette(&[&long]));
    let mut a = Client::open(&core);
    let mut b = Client::open(&core);
    a.ask(&initialize(json!(1), "2025-11-25")).await;
    b.ask(&initialize(json!(1), "2025-11-25")).await;
    let first = a
        .ask(&call(json!("t"), "echo", json!({"text": long})))
        .await;
    assert_eq!(envelope(&first)["status"], "truncated", "{first}");
    let page = json!({"call_id": "t"});
    let theirs = b
        .ask(&call(json!("p"), "envelope_next_page", page.clone()))
        .await;
    assert_eq!(
        envelope(&theirs)["status"],
        "error",
        "b cannot page a's result: {theirs}"
    );
    let ours = a.ask(&call(json!("p"), "envelope_next_page", page)).await;
    assert_ne!(envelope(&ours)["status"], "error", "{ours}");
    core.shutdown().await;
}

/// Two sessions of `core`, each initialized at 2025-11-25 (sampling and roots declared).
async fn two_ready_clients(core: &Arc<Core>) -> (Client, Client) {
    let mut a = Client::open(core);
    let mut b = Client::open(core);
    a.ask(&initialize(json!(1), "2025-11-25")).await;
    b.ask(&initialize(json!(1), "2025-11-25")).await;
    for c in [&a, &b] {
        let ready = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        c.session.feed_line(ready.to_string().into_bytes()).await;
    }
    (a, b)
}

#[tokio::test]
async fn a_servers_request_goes_to_the_session_whose_call_caused_it() {
    let core = Core::new(config(&fixture_server("fx")), None);
    let (mut a, mut b) = two_ready_clients(&core).await;
    let sample = call(json!(2), "fx_sample", json!({"prompt": "hi"}));
    b.session.feed_line(sample.to_string().into_bytes()).await;
    let asked = b.recv().await;
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    assert!(a.out.try_recv().is_err(), "the other session is not asked");
    let reply = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"role": "assistant",
        "content": {"type": "text", "text": "sampled"}, "model": "m"}});
    let done = b.ask(&reply).await;
    assert_eq!(done["id"], 2, "{done}");
    assert!(envelope(&done)["content"]
        .as_str()
        .unwrap()
        .contains("sampled"));
    // A list change reaches every session.
    b.session
        .feed_line(
            call(json!(3), "fx_add_tool", json!({}))
                .to_string()
                .into_bytes(),
        )
        .await;
    let mut seen_b = Vec::new();
    while seen_b.len() < 2 {
        seen_b.push(b.recv().await);
    }
    assert!(
        seen_b
            .iter()
            .any(|m| m["method"] == "notifications/tools/list_changed"),
        "{seen_b:?}"
    );
    assert_eq!(a.recv().await["method"], "notifications/tools/list_changed");
    a.session.close().await;
    b.session.close().await;
    core.shutdown().await;
}

/// `_meta` of an MCP 2026-07-28 request.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "stateless", "version": "1"},
    })
}

#[tokio::test]
async fn a_stateless_session_needs_no_initialize_and_gets_stamped_results() {
    let core = Core::new(config(""), None);
    core.set_cassette(cassette(&["modern"]));
    let mut c = Client::open(&core);
    let discover = request(json!(1), "server/discover", json!({"_meta": modern_meta()}));
    let found = c.ask(&discover).await;
    assert!(found["result"]["supportedVersions"].is_array(), "{found}");
    assert!(c.session.is_modern());
    assert_eq!(c.session.protocol_version(), None);
    let mut echo = call(json!(2), "echo", json!({"text": "modern"}));
    echo["params"]["_meta"] = modern_meta();
    let answer = c.ask(&echo).await;
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(envelope(&answer)["content"], "modern");
    // Without its `_meta`, a request of a client that spoke 2026-07-28 is refused.
    let bare = c.ask(&request(json!(3), "tools/list", json!({}))).await;
    assert!(bare.get("error").is_some(), "{bare}");
    core.shutdown().await;
}

#[tokio::test]
async fn sessions_initializing_at_once_both_wait_for_the_first_start() {
    let core = Core::new(config(&fixture_server("fx")), None);
    let mut a = Client::open(&core);
    let mut b = Client::open(&core);
    let init = |id| initialize(json!(id), "2025-11-25").to_string().into_bytes();
    tokio::join!(a.session.feed_line(init(1)), b.session.feed_line(init(1)));
    let (init_a, init_b) = (a.recv().await, b.recv().await);
    assert_eq!(
        init_a["result"], init_b["result"],
        "the same servers behind both"
    );
    assert!(init_a["result"]["instructions"].is_string());
    for c in [&mut a, &mut b] {
        let list = c.ask(&request(json!(2), "tools/list", json!({}))).await;
        let tools = list["result"]["tools"].as_array().unwrap();
        assert!(tools.iter().any(|t| t["name"] == "fx_echo"), "{list}");
    }
    assert_eq!(
        core.servers().len(),
        1,
        "one server process for both sessions"
    );
    drop(a);
    assert_eq!(core.sessions().len(), 1, "a dropped session is forgotten");
    core.shutdown().await;
}

/// A 2026-07-28 `tools/call` of `tool` with `arguments`, `extra` params and capabilities `caps`.
fn modern_call(id: &str, tool: &str, arguments: Value, extra: Value, caps: Value) -> Value {
    let mut message = call(json!(id), tool, arguments);
    for (k, v) in extra.as_object().unwrap() {
        message["params"][k] = v.clone();
    }
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = caps;
    message["params"]["_meta"] = meta;
    message
}

#[tokio::test]
async fn a_parked_call_resumes_through_another_session() {
    let core = Core::new(config(&fixture_server("fx")), None);
    let mut first = Client::open(&core);
    let caps = json!({"elicitation": {}});
    let ask = json!({"message": "sure?"});
    let asked = first
        .ask(&modern_call(
            "a",
            "fx_elicit",
            ask.clone(),
            json!({}),
            caps.clone(),
        ))
        .await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"].clone();
    // A stateless client's retry may reach any session (another HTTP request, another replica
    // behind the same core): the parked call lives in the core.
    drop(first);
    let mut second = Client::open(&core);
    let answers = json!({"1": {"action": "accept", "content": {"ok": true}}});
    let retry = json!({"requestState": state, "inputResponses": answers});
    let done = second
        .ask(&modern_call("b", "fx_elicit", ask, retry, caps))
        .await;
    let env = envelope(&done);
    assert_eq!(env["status"], "ok", "{done}");
    assert!(
        env["content"].as_str().unwrap().contains("accept"),
        "{done}"
    );
    core.shutdown().await;
}

impl Client {
    /// `initialize` (2025-11-25) and `notifications/initialized`.
    async fn initialized(&mut self) {
        self.ask(&initialize(json!(1), "2025-11-25")).await;
        let ready = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.session.feed_line(ready.to_string().into_bytes()).await;
    }
}

/// The fixture server `fx` with resources, prompts and the `touch` tool.
fn feature_server() -> String {
    fixture_server("fx").replace("\"--name\", \"fx\"]", "\"--name\", \"fx\", \"--features\"]")
}

/// What the fixture server `fx` holds subscriptions to, as it says.
async fn server_subscriptions(c: &mut Client, id: i64) -> String {
    let uri = "hidden://fx/subscriptions";
    let read = c
        .ask(&request(json!(id), "resources/read", json!({ "uri": uri })))
        .await;
    read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn resource_updates_reach_only_the_sessions_that_subscribed() {
    let core = Core::new(config(&feature_server()), None);
    let (mut a, mut b) = (Client::open(&core), Client::open(&core));
    for c in [&mut a, &mut b] {
        c.initialized().await;
    }
    let (doc0, doc1) = ("fixture://fx/doc/0", "fixture://fx/doc/1");
    for (c, uris) in [(&mut a, vec![doc0]), (&mut b, vec![doc0, doc1])] {
        for uri in uris {
            let sub = c
                .ask(&request(
                    json!(2),
                    "resources/subscribe",
                    json!({ "uri": uri }),
                ))
                .await;
            assert_eq!(sub["result"], json!({}), "{sub}");
        }
    }
    let touch = |id: i64, uri: &str| call(json!(id), "fx_touch", json!({ "uri": uri }));
    // b's update for doc/1 reaches b, not a.
    b.session
        .feed_line(touch(3, doc1).to_string().into_bytes())
        .await;
    let first = b.recv().await;
    assert_eq!(
        first["method"], "notifications/resources/updated",
        "{first}"
    );
    assert_eq!(first["params"]["uri"], doc1);
    assert_eq!(b.recv().await["id"], 3);
    // a unsubscribes from doc/0: the server keeps it for b.
    let unsub = a
        .ask(&request(
            json!(4),
            "resources/unsubscribe",
            json!({ "uri": doc0 }),
        ))
        .await;
    assert_eq!(unsub["result"], json!({}), "{unsub}");
    assert_eq!(
        server_subscriptions(&mut b, 5).await,
        format!("subscribed: {doc0} {doc1}")
    );
    a.session
        .feed_line(touch(6, doc0).to_string().into_bytes())
        .await;
    assert_eq!(a.recv().await["id"], 6, "a gets its answer, no update");
    let update = b.recv().await;
    assert_eq!(update["params"]["uri"], doc0, "{update}");
    assert!(a.out.try_recv().is_err(), "nothing else for a");
    // b ends: the server is told to drop what nobody holds.
    b.session.close().await;
    let mut left = String::new();
    for id in 7..200 {
        left = server_subscriptions(&mut a, id).await;
        if left == "subscribed: " {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(left, "subscribed: ");
    a.session.close().await;
    core.shutdown().await;
}

#[tokio::test]
async fn each_session_gets_log_messages_at_its_own_level() {
    let core = Core::new(config(&feature_server()), None);
    let (mut a, mut b) = (Client::open(&core), Client::open(&core));
    for (c, level) in [(&mut a, "error"), (&mut b, "info")] {
        c.initialized().await;
        let set = c
            .ask(&request(
                json!(2),
                "logging/setLevel",
                json!({ "level": level }),
            ))
            .await;
        assert_eq!(set["result"], json!({}), "{set}");
    }
    for params in [json!({"level": "bogus"}), json!({"level": 3}), json!({})] {
        let set = a.ask(&request(json!(2), "logging/setLevel", params)).await;
        assert_eq!(set["error"]["code"], -32602, "{set}");
        let message = set["error"]["message"].as_str().unwrap();
        assert!(message.contains(": use debug, info,"), "{message}");
        assert!(!message.contains("no `level`"), "{message}");
    }
    let server_level = |id: i64| call(json!(id), "fx_log_level", json!({}));
    let level = a.ask(&server_level(3)).await;
    assert_eq!(
        envelope(&level)["content"],
        "info",
        "the most verbose asked"
    );
    // A warning: below a's level, at or above b's.
    let logged = a.ask(&call(json!(4), "fx_log_named", json!({}))).await;
    assert_eq!(
        logged["id"], 4,
        "no log message before the answer: {logged}"
    );
    let message = b.recv().await;
    assert_eq!(message["method"], "notifications/message", "{message}");
    assert_eq!(message["params"]["level"], "warning");
    // b ends: the server goes back to a's level.
    b.session.close().await;
    let mut now = Value::Null;
    for id in 5..200 {
        now = envelope(&a.ask(&server_level(id)).await)["content"].clone();
        if now == "error" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(now, "error");
    a.session.close().await;
    core.shutdown().await;
}

#[path = "tests_remote.rs"]
mod remote;

#[path = "tests_cancel.rs"]
mod cancel;

#[path = "tests_refused.rs"]
mod refused;

#[path = "tests_seq.rs"]
mod seq;

#[path = "tests_versions.rs"]
mod versions;

#[path = "tests_init.rs"]
mod init;

#[path = "tests_params.rs"]
mod params;

#[path = "tests_restart.rs"]
mod restart;

#[path = "tests_routing.rs"]
mod routing;
