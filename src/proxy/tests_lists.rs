//! Lists when servers are slow: `resources/list`, `resources/templates/list` and `prompts/list`
//! ask every server at once, so the client waits at most one `tool_timeout_sec`, not their sum,
//! and a client's cancellation reaches every server still asked.

use super::*;

/// The fixture server `name` with resources and prompts, whose lists are never answered
/// (`FIXTURE_HANG_LISTS`), with a `tool_timeout_sec` of `timeout_sec`.
fn hung_lists(name: &str, timeout_sec: u64) -> String {
    let env = format!("env = {{ FIXTURE_HANG_LISTS = \"1\" }}\ntool_timeout_sec = {timeout_sec}\n");
    format!("{}{env}", feature_server().replace("fx", name))
}

/// Two servers whose lists take 2 s each.
const ONE_TIMEOUT: Duration = Duration::from_millis(3500);

/// The answer to `message`, skipping the notifications before it, and how long it took.
async fn answer_to(c: &mut Client, message: &Value) -> (Value, Duration) {
    let started = tokio::time::Instant::now();
    c.session.feed_line(message.to_string().into_bytes()).await;
    loop {
        let seen = c.recv().await;
        if seen.get("id") == message.get("id") {
            return (seen, started.elapsed());
        }
    }
}

/// The `key` of each item of `list`.
fn keys(list: &Value, key: &str) -> Vec<String> {
    let items = list
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"));
    let each = items
        .iter()
        .map(|i| i[key].as_str().unwrap_or("?").to_owned());
    each.collect()
}

/// Two servers whose lists hang, before and between two good ones: every list is the good
/// ones' items in config order (then each server's own order, all its pages), as before, once
/// the slow ones timed out together. Asked in turn, each list waited 4 s.
#[tokio::test]
async fn lists_wait_for_one_timeout_not_the_sum() {
    let fy = feature_server()
        .replace("fx", "fy")
        .replace("\"--features\"]", "\"--features\", \"--page-size\", \"2\"]");
    let servers = format!(
        "{}{}{}{fy}",
        hung_lists("s1", 2),
        feature_server(),
        hung_lists("s2", 2),
    );
    let core = Core::new(config(&servers), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let list = |id: i64, method: &str| request(json!(id), method, json!({}));
    let (resources, took) = answer_to(&mut c, &list(2, "resources/list")).await;
    assert!(took < ONE_TIMEOUT, "{took:?}");
    let uris = keys(&resources["result"]["resources"], "uri");
    let doc = |s: &str, k: u32| format!("fixture://{s}/doc/{k}");
    let mut expected: Vec<String> = (0..3).map(|k| doc("fx", k)).collect();
    expected.push("shared://doc".into());
    expected.extend((0..3).map(|k| doc("fy", k)));
    assert_eq!(uris, expected, "{resources}");
    assert!(resources["result"].get("nextCursor").is_none());
    let (templates, took) = answer_to(&mut c, &list(3, "resources/templates/list")).await;
    assert!(took < ONE_TIMEOUT, "{took:?}");
    let templates = keys(&templates["result"]["resourceTemplates"], "uriTemplate");
    assert_eq!(
        templates,
        ["fixture://fx/item/{id}", "fixture://fy/item/{id}"]
    );
    let (prompts, took) = answer_to(&mut c, &list(4, "prompts/list")).await;
    assert!(took < ONE_TIMEOUT, "{took:?}");
    let names = keys(&prompts["result"]["prompts"], "name");
    let expected = [
        "fx_greet",
        "fx_only_fx",
        "fx_secret",
        "fy_greet",
        "fy_only_fy",
        "fy_secret",
    ];
    assert_eq!(names, expected, "{prompts}");
    // A cursor is still none of ours.
    let cursor = request(json!(5), "prompts/list", json!({"cursor": "2"}));
    assert_eq!(answer_to(&mut c, &cursor).await.0["error"]["code"], -32602);
    c.session.close().await;
    core.shutdown().await;
}

/// Calls `tool` (one of the fixture's that add an item of list `kind` and say so), then
/// waits for the client's `notifications/<kind>/list_changed`: how long that took after the
/// tool's answer.
async fn changed_after(c: &mut Client, tool: &str, kind: &str) -> Duration {
    let (added, _) = answer_to(c, &call(json!(2), tool, json!({}))).await;
    let started = tokio::time::Instant::now();
    assert_eq!(envelope(&added)["content"], "added", "{added}");
    let changed = c.recv().await;
    let took = started.elapsed();
    let method = format!("notifications/{kind}/list_changed");
    assert_eq!(changed["method"], method.as_str(), "{changed}");
    took
}

/// A server's `notifications/prompts/list_changed` before the client listed prompts: every
/// server's prompts are read (names are given over all of them), at once, so the client hears
/// of the change after one timeout of the slow ones, not two.
#[tokio::test]
async fn a_list_change_waits_for_one_timeout_not_the_sum() {
    let servers = format!(
        "{}{}{}",
        hung_lists("s1", 2),
        hung_lists("s2", 2),
        feature_server()
    );
    let core = Core::new(config(&servers), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let took = changed_after(&mut c, "fx_add_prompt", "prompts").await;
    assert!(took < ONE_TIMEOUT, "{took:?}");
    let (prompts, _) = answer_to(&mut c, &request(json!(3), "prompts/list", json!({}))).await;
    assert!(keys(&prompts["result"]["prompts"], "name").contains(&"fx_new_fx".to_owned()));
    c.session.close().await;
    core.shutdown().await;
}

/// What the fixture `server` says of the requests it never answered and the cancellations
/// it got: `{"hung": [ids], "cancelled": [ids]}`.
async fn cancellations(c: &mut Client, id: i64, server: &str) -> Value {
    let asked = call(json!(id), &format!("{server}_cancellations"), json!({}));
    let (answer, _) = answer_to(c, &asked).await;
    let text = envelope(&answer)["content"].as_str().map(str::to_owned);
    let text = text.unwrap_or_else(|| panic!("{answer}"));
    let ids = |part: &str| -> Value {
        let each = part
            .split_whitespace()
            .map(|id| serde_json::from_str(id).unwrap());
        Value::Array(each.collect())
    };
    let (hung, cancelled) = text
        .split_once(" cancelled:")
        .expect("the fixture's format");
    let hung = hung.strip_prefix("hung:").expect("the fixture's format");
    json!({"hung": ids(hung), "cancelled": ids(cancelled)})
}

/// A list the client cancels while two servers have not answered it: each of them gets its own
/// `notifications/cancelled`, under the id it knows the request by (before, only the last one
/// the request was sent to did); the server that answered gets none.
#[tokio::test]
async fn a_cancelled_list_is_cancelled_at_every_server_still_asked() {
    let servers = format!(
        "{}{}{}",
        hung_lists("s1", 60),
        feature_server(),
        hung_lists("s2", 60)
    );
    let core = Core::new(config(&servers), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let list = request(json!("L"), "resources/list", json!({}));
    c.session.feed_line(list.to_string().into_bytes()).await;
    let mut id = 10;
    let mut hung = Vec::new();
    for server in ["s1", "s2"] {
        loop {
            id += 1;
            let seen = cancellations(&mut c, id, server).await;
            if let Some(first) = seen["hung"].as_array().and_then(|h| h.first()) {
                hung.push(first.clone());
                break;
            }
            assert!(id < 300, "{server} was never asked: {seen}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // fx's answer is in by now (it answers a list at once).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "L", "reason": "enough"}});
    c.session.feed_line(cancel.to_string().into_bytes()).await;
    for (server, hung) in ["s1", "s2"].into_iter().zip(hung) {
        let mut seen = Value::Null;
        for _ in 0..100 {
            id += 1;
            seen = cancellations(&mut c, id, server).await;
            if seen["cancelled"].as_array().is_some_and(|c| !c.is_empty()) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(seen["cancelled"], json!([hung]), "{server}: {seen}");
    }
    let at_fx = cancellations(&mut c, id + 1, "fx").await;
    assert_eq!(at_fx["cancelled"], json!([]), "it answered: {at_fx}");
    // Nobody answers the cancelled list.
    let (after, _) = answer_to(&mut c, &request(json!(999), "ping", json!({}))).await;
    assert_eq!(after["id"], 999, "{after}");
    c.session.close().await;
    core.shutdown().await;
}

/// A server's `notifications/resources/list_changed`: both its lists are read again at once,
/// so a server slow to answer each (2 s a page here) costs the client one delay before it hears
/// of the change, not two.
#[tokio::test]
async fn a_resource_list_change_reads_both_lists_at_once() {
    let env = "env = { FIXTURE_LIST_DELAY_MS = \"2000\" }\ntool_timeout_sec = 20\n";
    let core = Core::new(config(&format!("{}{env}", feature_server())), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let took = changed_after(&mut c, "fx_add_resource", "resources").await;
    assert!(took < ONE_TIMEOUT, "{took:?}");
    let read = request(
        json!(3),
        "resources/read",
        json!({"uri": "fixture://fx/doc/3"}),
    );
    let (doc, took) = answer_to(&mut c, &read).await;
    assert_eq!(doc["result"]["contents"][0]["text"], "doc 3 of fx", "{doc}");
    assert!(took < Duration::from_secs(1), "already listed: {took:?}");
    c.session.close().await;
    core.shutdown().await;
}
