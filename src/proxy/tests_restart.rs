//! A server that restarts (a crash and the automatic restart, or a config reload) or is down:
//! what the client made through the proxy survives the restart, and a request for something
//! of a server that is down names it.

use super::*;

impl Client {
    /// Sends `message` and returns the answer with its id, skipping the notifications before it.
    async fn answer(&mut self, message: &Value) -> Value {
        self.session
            .feed_line(message.to_string().into_bytes())
            .await;
        loop {
            let m = self.recv().await;
            if m.get("id") == message.get("id") {
                return m;
            }
        }
    }

    /// What the fixture server `fx` holds subscriptions to once it says `want` (polled: a
    /// restarted server is subscribed again in the background), or what it says last.
    async fn held_subscriptions(&mut self, first_id: i64, want: &str) -> String {
        let mut said = String::new();
        for id in first_id..first_id + 200 {
            let read = request(
                json!(id),
                "resources/read",
                json!({"uri": "hidden://fx/subscriptions"}),
            );
            let answer = self.answer(&read).await;
            said = answer["result"]["contents"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if said == want {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        said
    }
}

/// The fixture server `fx`'s connection now, once it is ready.
async fn ready_connection(core: &Arc<Core>) -> Arc<crate::downstream::Connection> {
    for _ in 0..600 {
        let fx = core.servers().iter().find(|d| d.name() == "fx").cloned();
        if let Some(crate::downstream::ServerState::Ready(conn)) = fx.map(|d| d.state()) {
            if !conn.is_closed() {
                return conn;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("fx is not ready");
}

/// Waits until `fx` is ready on a connection other than `before` (it restarted).
async fn restarted(core: &Arc<Core>, before: &Arc<crate::downstream::Connection>) {
    for _ in 0..600 {
        if !Arc::ptr_eq(&ready_connection(core).await, before) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("fx did not restart");
}

const DOC: &str = "fixture://fx/doc/1";

/// A client that subscribed to a resource keeps its subscription when the server crashes and
/// is restarted: the new process is subscribed again (it would send no
/// `notifications/resources/updated` otherwise).
#[tokio::test]
async fn a_crashed_and_restarted_server_is_subscribed_again() {
    let core = Core::new(config(&feature_server()), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let sub = c
        .answer(&request(
            json!(2),
            "resources/subscribe",
            json!({"uri": DOC}),
        ))
        .await;
    assert_eq!(sub["result"], json!({}), "{sub}");
    let before = ready_connection(&core).await;
    c.answer(&call(json!(3), "fx_crash", json!({}))).await;
    restarted(&core, &before).await;
    let want = format!("subscribed: {DOC}");
    assert_eq!(c.held_subscriptions(10, &want).await, want);
    c.session.close().await;
    core.shutdown().await;
}

/// A server that restarts is listed again, its resources and prompts at once: when its lists
/// hang (2 s timeout), the client hears of both changes after one timeout, not two.
#[tokio::test]
async fn a_restarted_servers_lists_are_read_at_once() {
    let env = "env = { FIXTURE_HANG_LISTS = \"1\" }\ntool_timeout_sec = 2\n";
    let core = Core::new(config(&format!("{}{env}", feature_server())), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let before = ready_connection(&core).await;
    c.answer(&call(json!(2), "fx_crash", json!({}))).await;
    restarted(&core, &before).await;
    let started = tokio::time::Instant::now();
    let mut changed = Vec::new();
    while changed.len() < 2 {
        let seen = c.recv().await;
        let method = seen["method"].as_str().unwrap_or_default();
        if method.ends_with("/list_changed") && !method.contains("tools") {
            changed.push(method.to_owned());
        }
    }
    let took = started.elapsed();
    let expected = [
        "notifications/resources/list_changed",
        "notifications/prompts/list_changed",
    ];
    assert_eq!(changed, expected);
    assert!(took < Duration::from_millis(3500), "{took:?}");
    c.session.close().await;
    core.shutdown().await;
}

/// The same when a config reload restarts the server (its launch changed).
#[tokio::test]
async fn a_server_restarted_by_a_reload_is_subscribed_again() {
    let core = Core::new(config(&feature_server()), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let sub = c
        .answer(&request(
            json!(2),
            "resources/subscribe",
            json!({"uri": DOC}),
        ))
        .await;
    assert_eq!(sub["result"], json!({}), "{sub}");
    let before = ready_connection(&core).await;
    let changed = format!("{}env = {{ FIXTURE_RELOADED = \"1\" }}\n", feature_server());
    let changes = core.apply_config((*config(&changed)).clone()).await;
    assert_eq!(changes.restart, ["fx"]);
    restarted(&core, &before).await;
    let want = format!("subscribed: {DOC}");
    assert_eq!(c.held_subscriptions(10, &want).await, want);
    c.session.close().await;
    core.shutdown().await;
}

/// Waits until `fx` gave up (`unavailable`).
async fn gave_up(core: &Arc<Core>) {
    for _ in 0..600 {
        let fx = core.servers().iter().find(|d| d.name() == "fx").cloned();
        let state = fx.map(|d| d.state());
        if matches!(
            state,
            Some(crate::downstream::ServerState::Unavailable { .. })
        ) {
            // Its prompts and resources leave the lists when the change is handled.
            tokio::time::sleep(Duration::from_millis(300)).await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("fx did not give up");
}

/// `fx` (which gives up at its first crash) and `fy`, both with resources, prompts and
/// completions.
fn fx_that_gives_up_and_fy() -> String {
    let fy = feature_server().replace("fx", "fy");
    format!("{}max_restarts = 0\n{fy}", feature_server())
}

/// The message of an error answer, after checking that it names `fx` and why it is down.
fn names_fx_and_why(answer: &Value) -> String {
    names_fx_and_why_in(answer, "/server")
}

/// The same, with the server's name at `pointer` in the error's `data`.
fn names_fx_and_why_in(answer: &Value, pointer: &str) -> String {
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("server 'fx'"), "{answer}");
    assert!(message.contains("gave up after 0 restart"), "{answer}");
    let server = answer["error"]["data"].pointer(pointer);
    assert_eq!(server, Some(&json!("fx")), "{answer}");
    message.to_owned()
}

/// A resource, a prompt or a completion of a server that gave up is answered with an error that
/// names it and why it is down (not a bare "not found", not an answer from another server); an
/// unsubscribe of its URI succeeds, since the server holds no subscription any more.
#[tokio::test]
async fn requests_for_what_a_down_server_owns_name_it() {
    let core = Core::new(config(&fx_that_gives_up_and_fy()), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    for (id, method) in [
        (2, "resources/list"),
        (3, "resources/templates/list"),
        (4, "prompts/list"),
    ] {
        let listed = c.answer(&request(json!(id), method, json!({}))).await;
        assert!(listed.get("result").is_some(), "{listed}");
    }
    let sub = c
        .answer(&request(
            json!(5),
            "resources/subscribe",
            json!({"uri": DOC}),
        ))
        .await;
    assert_eq!(sub["result"], json!({}), "{sub}");
    c.answer(&call(json!(6), "fx_crash", json!({}))).await;
    gave_up(&core).await;
    let uri = |u: &str| json!({ "uri": u });
    let read = request(json!(7), "resources/read", uri(DOC));
    let answer = c.answer(&read).await;
    assert_eq!(answer["error"]["code"], -32002, "{answer}");
    assert_eq!(answer["error"]["data"]["uri"], DOC, "{answer}");
    names_fx_and_why(&answer);
    // A URI of its template, and a subscription.
    let item = request(json!(8), "resources/read", uri("fixture://fx/item/7"));
    names_fx_and_why(&c.answer(&item).await);
    let other = "fixture://fx/doc/2";
    let sub = request(json!(9), "resources/subscribe", uri(other));
    names_fx_and_why(&c.answer(&sub).await);
    let get = json!({"name": "fx_greet", "arguments": {"name": "Ann"}});
    let answer = c.answer(&request(json!(10), "prompts/get", get)).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    names_fx_and_why(&answer);
    let argument = json!({"name": "name", "value": "al"});
    let prompt_ref =
        json!({"ref": {"type": "ref/prompt", "name": "fx_greet"}, "argument": argument});
    names_fx_and_why(
        &c.answer(&request(json!(11), "completion/complete", prompt_ref))
            .await,
    );
    // fy is asked nothing for fx's template.
    let template = json!({"type": "ref/resource", "uri": "fixture://fx/item/{id}"});
    let resource_ref = json!({"ref": template, "argument": {"name": "id", "value": "1"}});
    names_fx_and_why(
        &c.answer(&request(json!(12), "completion/complete", resource_ref))
            .await,
    );
    // What no server owns is answered as before.
    let nobody = c
        .answer(&request(json!(13), "resources/read", uri("nobody://x")))
        .await;
    assert_eq!(nobody["error"]["code"], -32002, "{nobody}");
    let unknown = json!({"name": "nope"});
    let unknown = c.answer(&request(json!(14), "prompts/get", unknown)).await;
    let message = unknown["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Unknown prompt: nope"), "{unknown}");
    // fy still serves its own.
    let fy = c
        .answer(&request(
            json!(15),
            "resources/read",
            uri("fixture://fy/doc/1"),
        ))
        .await;
    assert_eq!(fy["result"]["contents"][0]["text"], "doc 1 of fy", "{fy}");
    // Unsubscribing from a URI of the down server succeeds (the proxy drops its record).
    for id in [16, 17] {
        let unsub = request(json!(id), "resources/unsubscribe", uri(DOC));
        let answer = c.answer(&unsub).await;
        assert_eq!(answer["result"], json!({}), "{answer}");
    }
    c.session.close().await;
    core.shutdown().await;
}

/// A completion for a prompt of a server that is restarting waits for it (as `prompts/get`
/// does), instead of answering an empty completion at once.
#[tokio::test]
async fn a_completion_for_a_restarting_servers_prompt_waits_for_it() {
    let core = Core::new(config(&feature_server()), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let listed = c
        .answer(&request(json!(2), "prompts/list", json!({})))
        .await;
    assert!(listed.get("result").is_some(), "{listed}");
    c.answer(&call(json!(3), "fx_crash", json!({}))).await;
    let argument = json!({"name": "name", "value": "al"});
    let prompt_ref =
        json!({"ref": {"type": "ref/prompt", "name": "fx_greet"}, "argument": argument});
    let done = c
        .answer(&request(json!(4), "completion/complete", prompt_ref))
        .await;
    let values = &done["result"]["completion"]["values"];
    assert_eq!(values, &json!(["alice@fx", "albert@fx"]), "{done}");
    c.session.close().await;
    core.shutdown().await;
}

/// Whether the fixture's request log holds a request `rpc` in session `session`.
fn logged_in(log: &Path, rpc: &str, session: &str) -> bool {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|e| e["rpc"] == rpc && e["session"] == session)
}

/// A remote server restarted while the proxy was idle no longer knows the proxy's session: the
/// proxy opens a new one, and the server is then set to the client's logging level and
/// subscribed again to what the client holds, as a restarted stdio server is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_servers_new_session_gets_the_level_and_the_subscriptions_again() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    // The fault fixture (standard library only), logging its requests to `log`.
    let server = super::remote::HttpFixture::start(
        Path::new("python3"),
        &["faults", "--forgetful"],
        &["--log".as_ref(), log.as_os_str()],
    );
    let url = server.url.clone();
    let core = Core::new(config(&format!("[mcp_servers.web]\nurl = {url:?}\n")), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let set = request(json!(2), "logging/setLevel", json!({"level": "info"}));
    assert_eq!(c.answer(&set).await["result"], json!({}));
    let sub = request(json!(3), "resources/subscribe", json!({"uri": "web://a"}));
    assert_eq!(c.answer(&sub).await["result"], json!({}));
    c.answer(&call(json!(4), "forget", json!({}))).await;
    let echo = c
        .answer(&call(json!(5), "echo", json!({"text": "after"})))
        .await;
    assert_eq!(envelope(&echo)["content"], "after", "{echo}");
    let renewed = "fault-session-2";
    assert!(
        logged_in(&log, "tools/call", renewed),
        "the call went to the new session"
    );
    let mut both = false;
    for _ in 0..200 {
        both = logged_in(&log, "logging/setLevel", renewed)
            && logged_in(&log, "resources/subscribe", renewed);
        if both {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let requests = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        both,
        "level and subscription again in the new session:\n{requests}"
    );
    c.session.close().await;
    core.shutdown().await;
}

/// A `resources/read` that makes the server that is asked crash is answered with that failure
/// at once, even for a URI the server does not list: read again once the server is back, it
/// crashed it a second time (with `max_restarts = 1`, the server then gave up), and the
/// client got a bare "Resource not found" (found by a fresh-user test).
#[tokio::test]
async fn a_read_that_crashes_its_server_is_that_failure_not_asked_again() {
    let core = Core::new(
        config(&format!("{}max_restarts = 1\n", feature_server())),
        None,
    );
    let mut c = Client::open(&core);
    c.initialized().await;
    let read = |id: i64, uri: &str| request(json!(id), "resources/read", json!({ "uri": uri }));
    let crashed = c.answer(&read(2, "hidden://fx/crash")).await;
    let message = crashed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("server 'fx' did not answer"), "{crashed}");
    // Crashed once, restarted once: it is back, not given up.
    let doc = c.answer(&read(3, DOC)).await;
    assert_eq!(doc["result"]["contents"][0]["text"], "doc 1 of fx", "{doc}");
    c.session.close().await;
    core.shutdown().await;
}

/// The URIs the fixture server `fx`'s process got a `resources/subscribe` for, in arrival order
/// (repeats kept), once it holds the subscriptions `want` says and a moment has passed for a
/// late repeat.
async fn subscribes_once_holding(c: &mut Client, first_id: i64, want: &str) -> Vec<String> {
    assert_eq!(c.held_subscriptions(first_id, want).await, want);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let read = request(
        json!(first_id + 300),
        "resources/read",
        json!({"uri": "hidden://fx/subscribe-log"}),
    );
    let answer = c.answer(&read).await;
    let text = answer["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let log = text
        .strip_prefix("subscribes:")
        .unwrap_or_else(|| panic!("{answer}"));
    log.split_whitespace().map(str::to_owned).collect()
}

/// A `resources/subscribe` sent while its server restarts reaches the new process once per URI:
/// the restart's re-subscribe sweep and the forwarded request used to both send it, for a URI
/// the client already held (and, depending on which came first, for a new one) (found by a
/// fresh-user test).
#[tokio::test]
async fn a_subscribe_during_a_restart_reaches_the_new_process_once() {
    let core = Core::new(config(&feature_server()), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let subscribe =
        |id: i64, uri: &str| request(json!(id), "resources/subscribe", json!({ "uri": uri }));
    assert_eq!(c.answer(&subscribe(2, DOC)).await["result"], json!({}));
    c.answer(&call(json!(3), "fx_crash", json!({}))).await;
    // Both sent at once, while fx restarts: the URI held already, and a new one.
    let other = "fixture://fx/doc/2";
    for message in [subscribe(4, DOC), subscribe(5, other)] {
        c.session.feed_line(message.to_string().into_bytes()).await;
    }
    let mut answered = Vec::new();
    while answered.len() < 2 {
        let m = c.recv().await;
        if m.get("id").is_some_and(|id| id == 4 || id == 5) {
            assert_eq!(m["result"], json!({}), "{m}");
            answered.push(m);
        }
    }
    let want = format!("subscribed: {DOC} {other}");
    let mut log = subscribes_once_holding(&mut c, 10, &want).await;
    log.sort();
    assert_eq!(log, [DOC, other], "one subscribe per URI");
    c.session.close().await;
    core.shutdown().await;
}

/// The message of an error answer, after checking that its `data.servers_down` names `fx` (down
/// since it gave up) and why, and that the message does too.
fn names_fx_among_servers_down(answer: &Value) -> String {
    let message = names_fx_and_why_in(answer, "/servers_down/0/server");
    assert!(message.contains("server 'fx' is down"), "{answer}");
    let down = &answer["error"]["data"]["servers_down"];
    assert_eq!(down[0]["server"], "fx", "{answer}");
    let reason = down[0]["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("unavailable: gave up"), "{answer}");
    message.to_owned()
}

/// What a server that is down might own is answered naming it and why, even when nobody listed
/// its resources or prompts before it went down: a request that no server up can answer names
/// the servers that are down (those whose `tool_prefix` and prompt filters could give a prompt
/// name), as a `tools/call` of an unknown name does (found by a fresh-user test).
#[tokio::test]
async fn what_no_server_up_answers_names_the_servers_down_without_earlier_listing() {
    let core = Core::new(config(&fx_that_gives_up_and_fy()), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    c.answer(&call(json!(2), "fx_crash", json!({}))).await;
    gave_up(&core).await;
    let uri = |u: &str| json!({ "uri": u });
    let read = c
        .answer(&request(json!(3), "resources/read", uri(DOC)))
        .await;
    assert_eq!(read["error"]["code"], -32002, "{read}");
    assert_eq!(read["error"]["data"]["uri"], DOC, "{read}");
    names_fx_among_servers_down(&read);
    let sub = request(json!(4), "resources/subscribe", uri(DOC));
    names_fx_among_servers_down(&c.answer(&sub).await);
    let get = json!({"name": "fx_greet", "arguments": {"name": "Ann"}});
    let answer = c.answer(&request(json!(5), "prompts/get", get)).await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = names_fx_among_servers_down(&answer);
    assert!(message.starts_with("Unknown prompt: fx_greet"), "{answer}");
    let argument = json!({"name": "name", "value": "al"});
    let prompt_ref =
        json!({"ref": {"type": "ref/prompt", "name": "fx_greet"}, "argument": argument});
    let complete = request(json!(6), "completion/complete", prompt_ref);
    names_fx_among_servers_down(&c.answer(&complete).await);
    let template = json!({"type": "ref/resource", "uri": "fixture://fx/item/{id}"});
    let resource_ref = json!({"ref": template, "argument": {"name": "id", "value": "1"}});
    let complete = request(json!(7), "completion/complete", resource_ref);
    names_fx_among_servers_down(&c.answer(&complete).await);
    // fx's prefix could not give this name: it is not named.
    let other = json!({"name": "fy_nope"});
    let answer = c.answer(&request(json!(8), "prompts/get", other)).await;
    assert_eq!(
        answer["error"]["message"], "Unknown prompt: fy_nope",
        "{answer}"
    );
    c.session.close().await;
    core.shutdown().await;
}
