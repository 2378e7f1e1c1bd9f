//! Routing by URI when servers are slow: a URI no server lists is asked of the servers at once,
//! not one after another, so the client waits at most one `tool_timeout_sec`, not their sum.

use super::*;

/// The fixture server `name` with resources, which never answers a read or subscribe of a URI
/// it does not serve (`FIXTURE_HANG_UNKNOWN`), with a `tool_timeout_sec` of 2 s.
fn slow_server(name: &str) -> String {
    let env = "env = { FIXTURE_HANG_UNKNOWN = \"1\" }\ntool_timeout_sec = 2\n";
    format!("{}{env}", feature_server().replace("fx", name))
}

/// `message` sent, its answer and how long it took.
async fn timed(c: &mut Client, message: &Value) -> (Value, Duration) {
    let started = tokio::time::Instant::now();
    let answer = c.ask(message).await;
    (answer, started.elapsed())
}

/// Two slow servers before `fx`: a URI nobody lists is asked of all three at once. Each slow one
/// costs its 2 s timeout; asked in turn, the client waited 4 s (found by a fresh-user test).
#[tokio::test]
async fn an_unlisted_uri_waits_for_one_timeout_not_the_sum() {
    let servers = format!(
        "{}{}{}",
        slow_server("s1"),
        slow_server("s2"),
        feature_server()
    );
    let core = Core::new(config(&servers), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let one_timeout = Duration::from_millis(3500);
    let read = |id: i64, uri: &str| request(json!(id), "resources/read", json!({ "uri": uri }));
    // Listed by fx: its answer wins at once, the slow ones are not asked.
    let (doc, took) = timed(&mut c, &read(2, "fixture://fx/doc/1")).await;
    assert_eq!(doc["result"]["contents"][0]["text"], "doc 1 of fx", "{doc}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    // Served by fx, listed by nobody: fx's answer, once the slow ones (first in config order)
    // timed out.
    let (secret, took) = timed(&mut c, &read(3, "hidden://fx/secret")).await;
    let text = &secret["result"]["contents"][0]["text"];
    assert_eq!(text, "secret of fx", "{secret}");
    assert!(took < one_timeout, "{took:?}");
    // Nobody's.
    let (nobody, took) = timed(&mut c, &read(4, "nobody://x")).await;
    assert_eq!(nobody["error"]["code"], -32002, "{nobody}");
    assert!(took < one_timeout, "{took:?}");
    // A template nobody lists: fx's refusal, once the slow ones timed out.
    let unknown = json!({"type": "ref/resource", "uri": "nobody://{x}"});
    let complete = json!({"ref": unknown, "argument": {"name": "x", "value": ""}});
    let (refused, took) = timed(&mut c, &request(json!(6), "completion/complete", complete)).await;
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("Unknown reference"), "{refused}");
    assert!(took < one_timeout, "{took:?}");
    let subscribe = request(
        json!(5),
        "resources/subscribe",
        json!({"uri": "hidden://fx/secret"}),
    );
    let (subscribed, took) = timed(&mut c, &subscribe).await;
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");
    assert!(took < one_timeout, "{took:?}");
    c.session.close().await;
    core.shutdown().await;
}

/// The text of `uri` as read through the proxy.
async fn read_text(c: &mut Client, id: i64, uri: &str) -> String {
    let read = request(json!(id), "resources/read", json!({ "uri": uri }));
    let answer = c.ask(&read).await;
    let text = answer["result"]["contents"][0]["text"].as_str();
    text.unwrap_or_else(|| panic!("{answer}")).to_owned()
}

/// A subscription asked of two servers at once (both list the URI) is held by the first in
/// config order only: the other one's is undone.
#[tokio::test]
async fn a_subscription_two_servers_accepted_is_kept_at_one() {
    let servers = format!(
        "{}{}",
        feature_server(),
        feature_server().replace("fx", "fy")
    );
    let core = Core::new(config(&servers), None);
    let mut c = Client::open(&core);
    c.initialized().await;
    let subscribe = request(
        json!(2),
        "resources/subscribe",
        json!({"uri": "shared://doc"}),
    );
    assert_eq!(c.ask(&subscribe).await["result"], json!({}));
    let mut at_fy = String::new();
    for id in 10..110 {
        at_fy = read_text(&mut c, id, "hidden://fy/subscriptions").await;
        if at_fy == "subscribed: " {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(at_fy, "subscribed: ");
    let at_fx = read_text(&mut c, 200, "hidden://fx/subscriptions").await;
    assert_eq!(at_fx, "subscribed: shared://doc");
    c.session.close().await;
    core.shutdown().await;
}

#[path = "tests_lists.rs"]
mod lists;
