//! Resources, prompts, completion and logging through the proxy, and tool results that are not
//! plain tool results: the real binary driven by the Python MCP SDK, against server-everything
//! and fixture servers started with `--features`.

use crate::common;

use common::*;
use serde_json::{json, Value};

/// The notifications of a report with this method.
fn notes<'a>(report: &'a Value, method: &str) -> Vec<&'a Value> {
    report["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["method"] == method)
        .collect()
}

fn names_of(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|i| i[key].as_str().unwrap().to_owned())
        .collect()
}

fn text_of_prompt(result: &Value) -> &str {
    result["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{result}"))
}

const DYNAMIC: &str = "demo://resource/dynamic/text/5";

/// server-everything behind the proxy: the capabilities it passes through (not tasks) and its
/// instructions after ours.
fn capabilities_and_instructions_are_merged(init: &Value) {
    let caps = &init["capabilities"];
    assert_eq!(
        caps["resources"],
        json!({"subscribe": true, "listChanged": true}),
        "{caps}"
    );
    assert_eq!(caps["prompts"], json!({"listChanged": true}));
    assert_eq!(caps["completions"], json!({}));
    assert_eq!(caps["logging"], json!({}));
    assert!(caps.get("tasks").is_none(), "tasks are not proxied: {caps}");
    let instructions = init["instructions"].as_str().unwrap();
    assert!(
        instructions.starts_with("Every tool result is a JSON envelope"),
        "{instructions}"
    );
    assert!(
        instructions.contains("\n\n## everything\n# Everything Server"),
        "{instructions}"
    );
}

#[test]
fn server_everything_resources_prompts_completion_and_logging_pass_through() {
    let (_d, cfg) = write_config(&real_server("everything", ""));
    let plan = json!([
        {"op": "list_resources"},
        {"op": "list_resource_templates"},
        {"op": "read_resource", "uri": DYNAMIC},
        {"op": "read_resource", "uri": "demo://resource/static/document/architecture.md"},
        {"op": "read_resource", "uri": "demo://no/such/thing"},
        {"op": "list_prompts"},
        {"op": "get_prompt", "name": "args-prompt", "arguments": {"city": "Paris"}},
        {"op": "complete", "ref": {"type": "ref/prompt", "name": "completable-prompt"}, "argument": {"name": "department", "value": "E"}},
        {"op": "complete", "ref": {"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"}, "argument": {"name": "resourceId", "value": "1"}},
        {"op": "set_level", "level": "debug"},
        {"op": "subscribe", "uri": DYNAMIC},
        {"op": "call", "name": "toggle-subscriber-updates", "arguments": {}},
        {"op": "call", "name": "toggle-simulated-logging", "arguments": {}},
        {"op": "wait", "seconds": 6},
        {"op": "unsubscribe", "uri": DYNAMIC},
        {"op": "list_resources", "cursor": "not-ours"},
        {"op": "list_tools_page", "cursor": "not-ours"},
        {"op": "list_tools"}
    ]);
    let r = sdk_session(&cfg, &plan, &[]);
    let direct = sdk_run(
        &everything_cmd(),
        &json!([{"op": "list_resources"}, {"op": "list_prompts"}, {"op": "list_resource_templates"}]),
    );
    capabilities_and_instructions_are_merged(&r["initialize"]);

    let s = &r["steps"];
    // Lists: the server's own items, unchanged.
    assert_eq!(s[0]["resources"], direct["steps"][0]["resources"]);
    assert_eq!(names_of(&s[0]["resources"], "uri").len(), 7);
    assert_eq!(
        s[1]["resourceTemplates"],
        direct["steps"][2]["resourceTemplates"]
    );
    assert_eq!(s[5]["prompts"], direct["steps"][1]["prompts"]);
    // Read: routed by template, contents not enveloped, URI unchanged.
    assert_eq!(s[2]["contents"][0]["uri"], DYNAMIC);
    assert!(
        s[2]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Resource 5: "),
        "{}",
        s[2]
    );
    assert_eq!(s[3]["contents"][0]["mimeType"], "text/markdown");
    // Nobody has it: the spec's resource-not-found error.
    assert_eq!(s[4]["error"]["code"], -32002, "{}", s[4]);
    assert_eq!(s[4]["error"]["data"]["uri"], "demo://no/such/thing");
    assert_eq!(text_of_prompt(&s[6]), "What's weather in Paris?");
    assert_eq!(s[7]["completion"]["values"], json!(["Engineering"]));
    assert_eq!(s[8]["completion"]["values"], json!(["1"]));
    assert_eq!(s[9], json!({}));
    assert_eq!(s[10], json!({}));
    assert_eq!(s[14], json!({}));
    // Subscribed updates and log messages reach the client, the server named as logger.
    let updated = notes(&r, "notifications/resources/updated");
    assert!(
        !updated.is_empty(),
        "no resources/updated in {}",
        r["notifications"]
    );
    assert!(updated.iter().all(|n| n["params"]["uri"] == DYNAMIC));
    let messages = notes(&r, "notifications/message");
    assert!(
        messages
            .iter()
            .any(|n| n["params"]["logger"] == "everything"),
        "no message with logger 'everything': {messages:?}"
    );
    // Cursors we never gave out.
    assert_eq!(s[15]["error"]["code"], -32602, "{}", s[15]);
    assert_eq!(s[16]["error"]["code"], -32602, "{}", s[16]);
    // A tool that can only run as a task is not listed.
    let tools = names_of(&s[17], "name");
    assert!(tools.contains(&"echo".to_owned()));
    assert!(
        !tools.contains(&"simulate-research-query".to_owned()),
        "{tools:?}"
    );
}

/// Three fixture servers: `a` paginates its lists (2 per page) and hides prompt `secret`; `b`
/// prefixes its names with `b_`; `c` exposes only its prompt `greet`.
fn three_fixtures() -> String {
    [
        fixture_server(
            "a",
            &["--features", "--page-size", "2"],
            "disabled_prompts = [\"secret\"]",
        ),
        fixture_server("b", &["--features"], "tool_prefix = \"b_\""),
        fixture_server(
            "c",
            &["--features"],
            "enabled_prompts = [\"greet\"]\nenabled_tools = [\"echo\"]",
        ),
    ]
    .concat()
}

#[test]
fn fixture_resources_are_merged_over_pages_and_routed_by_uri() {
    let (_d, cfg) = write_config(&three_fixtures());
    let plan = json!([
        {"op": "list_resources"},
        {"op": "list_resource_templates"},
        {"op": "read_resource", "uri": "fixture://b/doc/1"},
        {"op": "read_resource", "uri": "fixture://c/item/42"},
        {"op": "read_resource", "uri": "hidden://c/secret"},
        {"op": "read_resource", "uri": "shared://doc"},
        {"op": "read_resource", "uri": "nobody://x"},
        {"op": "subscribe", "uri": "fixture://c/item/9"},
        {"op": "call", "name": "b_touch", "arguments": {"uri": "fixture://c/item/9"}},
        {"op": "unsubscribe", "uri": "fixture://c/item/9"},
        {"op": "subscribe", "uri": "nobody://x"},
        {"op": "call", "name": "add_resource", "arguments": {}},
        {"op": "wait", "seconds": 0.5},
        {"op": "list_resources"},
        {"op": "complete", "ref": {"type": "ref/resource", "uri": "fixture://b/item/{id}"}, "argument": {"name": "id", "value": ""}},
        {"op": "list_resource_templates", "cursor": "2"}
    ]);
    let r = sdk_session(&cfg, &plan, &[]);
    let s = &r["steps"];
    let uris = names_of(&s[0]["resources"], "uri");
    // a's 4 items come over two pages; shared://doc only once (from a, the first in config order).
    assert_eq!(
        uris,
        [
            "fixture://a/doc/0",
            "fixture://a/doc/1",
            "fixture://a/doc/2",
            "shared://doc",
            "fixture://b/doc/0",
            "fixture://b/doc/1",
            "fixture://b/doc/2",
            "fixture://c/doc/0",
            "fixture://c/doc/1",
            "fixture://c/doc/2",
        ]
    );
    assert_eq!(s[0]["resources"][3]["name"], "shared-a");
    assert_eq!(
        names_of(&s[1]["resourceTemplates"], "uriTemplate"),
        [
            "fixture://a/item/{id}",
            "fixture://b/item/{id}",
            "fixture://c/item/{id}"
        ]
    );
    let read_text = |i: usize| {
        s[i]["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{}", s[i]))
            .to_owned()
    };
    assert_eq!(read_text(2), "doc 1 of b");
    assert_eq!(read_text(3), "item 42 of c");
    // Neither listed nor templated: found by asking each server in turn.
    assert_eq!(read_text(4), "secret of c");
    assert_eq!(read_text(5), "shared doc of a");
    assert_eq!(s[6]["error"]["code"], -32002);
    assert_eq!(s[7], json!({}));
    let updated = notes(&r, "notifications/resources/updated");
    assert_eq!(updated.len(), 1, "{}", r["notifications"]);
    assert_eq!(updated[0]["params"], json!({"uri": "fixture://c/item/9"}));
    assert_eq!(s[9], json!({}));
    assert_eq!(s[10]["error"]["code"], -32002);
    // list_changed from a server is forwarded, and the new resource is listed.
    assert_eq!(notes(&r, "notifications/resources/list_changed").len(), 1);
    assert!(names_of(&s[13]["resources"], "uri").contains(&"fixture://a/doc/3".to_owned()));
    assert_eq!(s[14]["completion"]["values"], json!(["b-1", "b-2"]));
    assert_eq!(s[15]["error"]["code"], -32602);
}

/// A client that reads or subscribes to a URI without listing first (a URI from a
/// `resource_link`, or an earlier session) reaches the server that lists it, not the first
/// server in config order that would accept any URI.
#[test]
fn a_uri_read_before_any_listing_goes_to_the_server_that_lists_it() {
    let greedy = fixture_server("a", &["--features"], "env = { FIXTURE_READ_ANY = \"1\" }");
    let (_d, cfg) = write_config(&(greedy + &fixture_server("b", &["--features"], "")));
    let plan = json!([
        {"op": "read_resource", "uri": "fixture://b/doc/1"},
        {"op": "read_resource", "uri": "fixture://b/item/5"},
        {"op": "subscribe", "uri": "fixture://b/item/9"},
        {"op": "read_resource", "uri": "hidden://a/subscriptions"},
        {"op": "read_resource", "uri": "nobody://x"}
    ]);
    let r = sdk_session(&cfg, &plan, &[]);
    let s = &r["steps"];
    let text = |i: usize| s[i]["contents"][0]["text"].clone();
    assert_eq!(text(0), "doc 1 of b", "{s}");
    assert_eq!(text(1), "item 5 of b", "{s}");
    // The subscription went to b: a (which would accept it too) holds none.
    assert_eq!(s[2], json!({}), "{s}");
    assert_eq!(text(3), "subscribed: ", "{s}");
    // A URI nobody lists still goes to the first server that accepts it.
    assert_eq!(text(4), "any URI of a", "{s}");
}

/// A subscription goes only to a server that declares subscriptions: to a URI whose lister
/// declares none it is refused (-32601 naming that server), not made at another server that
/// accepts any URI and would never send an update.
#[test]
fn a_subscription_never_goes_to_a_server_that_does_not_list_the_uri() {
    let greedy = fixture_server("a", &["--features"], "env = { FIXTURE_READ_ANY = \"1\" }");
    let b = fixture_server(
        "b",
        &["--features"],
        "env = { FIXTURE_NO_SUBSCRIBE = \"1\" }",
    );
    let (_d, cfg) = write_config(&(greedy + &b));
    let plan = json!([
        {"op": "subscribe", "uri": "fixture://b/doc/1"},
        {"op": "read_resource", "uri": "hidden://a/subscriptions"},
        {"op": "read_resource", "uri": "fixture://b/doc/1"}
    ]);
    let r = sdk_session(&cfg, &plan, &[]);
    let s = &r["steps"];
    assert_eq!(s[0]["error"]["code"], -32601, "{s}");
    let message = s[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("server 'b'"), "{s}");
    assert_eq!(s[1]["contents"][0]["text"], "subscribed: ", "{s}");
    assert_eq!(s[2]["contents"][0]["text"], "doc 1 of b", "{s}");
}

/// A server that restarts is subscribed again to what the client holds at it: after a crash,
/// its new process holds the subscription without the client asking again.
#[test]
fn a_restarted_server_is_subscribed_again() {
    let (_d, cfg) = write_config(&fixture_server("fx", &["--features"], ""));
    let plan = json!([
        {"op": "subscribe", "uri": "fixture://fx/doc/1"},
        {"op": "call", "name": "crash", "arguments": {}},
        {"op": "wait", "seconds": 6},
        {"op": "read_resource", "uri": "hidden://fx/subscriptions"}
    ]);
    let r = sdk_session(&cfg, &plan, &[]);
    let s = &r["steps"];
    assert_eq!(s[0], json!({}), "{s}");
    let held = &s[3]["contents"][0]["text"];
    assert_eq!(held, "subscribed: fixture://fx/doc/1", "{s}");
}

#[test]
fn fixture_prompts_follow_tool_naming_and_completion_logging_route() {
    let (_d, cfg) = write_config(&three_fixtures());
    let plan = json!([
        {"op": "list_prompts"},
        {"op": "get_prompt", "name": "a__greet", "arguments": {"name": "Ann"}},
        {"op": "get_prompt", "name": "c__greet", "arguments": {"name": "Ann"}},
        {"op": "get_prompt", "name": "b_greet", "arguments": {"name": "Bo"}},
        {"op": "get_prompt", "name": "secret"},
        {"op": "get_prompt", "name": "greet"},
        {"op": "complete", "ref": {"type": "ref/prompt", "name": "c__greet"}, "argument": {"name": "name", "value": "al"}},
        {"op": "complete", "ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "name", "value": "al"}},
        {"op": "set_level", "level": "warning"},
        {"op": "call", "name": "log_level", "arguments": {}},
        {"op": "call", "name": "b_log_level", "arguments": {}},
        {"op": "call", "name": "log", "arguments": {}},
        {"op": "call", "name": "log_named", "arguments": {}},
        {"op": "call", "name": "add_prompt", "arguments": {}},
        {"op": "wait", "seconds": 0.5},
        {"op": "list_prompts"},
        {"op": "list_prompts", "cursor": "0"}
    ]);
    let r = sdk_session(&cfg, &plan, &[]);
    let s = &r["steps"];
    assert_eq!(
        names_of(&s[0]["prompts"], "name"),
        ["a__greet", "only_a", "b_greet", "b_only_b", "b_secret", "c__greet"]
    );
    assert_eq!(s[0]["prompts"][0]["arguments"][0]["name"], "name");
    assert_eq!(text_of_prompt(&s[1]), "Hello, Ann from a");
    assert_eq!(text_of_prompt(&s[2]), "Hello, Ann from c");
    assert_eq!(text_of_prompt(&s[3]), "Hello, Bo from b");
    assert_eq!(
        s[4]["error"]["code"], -32602,
        "hidden by disabled_prompts: {}",
        s[4]
    );
    assert_eq!(
        s[5]["error"]["code"], -32602,
        "renamed on collision: {}",
        s[5]
    );
    assert_eq!(s[6]["completion"]["values"], json!(["alice@c", "albert@c"]));
    assert_eq!(s[7]["error"]["code"], -32602);
    assert_eq!(s[8], json!({}));
    // setLevel reached every server.
    assert_eq!(envelope_of(&json!({"result": s[9]}))["content"], "warning");
    assert_eq!(envelope_of(&json!({"result": s[10]}))["content"], "warning");
    let messages = notes(&r, "notifications/message");
    let loggers: Vec<&Value> = messages.iter().map(|m| &m["params"]["logger"]).collect();
    // The fixture's `log` sends at `info` whatever the level; the client asked for `warning`
    // and up, so only the `warning` of `log_named` reaches it.
    assert_eq!(loggers, [&json!("custom")], "{messages:?}");
    assert_eq!(notes(&r, "notifications/prompts/list_changed").len(), 1);
    assert!(names_of(&s[15]["prompts"], "name").contains(&"new_a".to_owned()));
    assert_eq!(s[16]["error"]["code"], -32602);
}

#[test]
fn unusual_tool_results_are_mapped_honestly_and_meta_is_kept() {
    let (_d, cfg) = write_config(&fixture_server("a", &["--features"], "char_budget = 20"));
    let fifty: Vec<String> = (0..50).map(|i| format!("line {i}")).collect();
    let plan = json!([
        {"op": "call", "name": "with_meta", "arguments": {}},
        {"op": "call", "name": "input_required", "arguments": {}},
        {"op": "call", "name": "task", "arguments": {}},
        {"op": "call", "name": "url_elicitation", "arguments": {}},
        {"op": "call", "name": "envelope", "arguments": {"status": "truncated", "content": fifty.join("\n"), "omitted": 3, "retryable": false}},
        {"op": "call", "name": "envelope", "arguments": {"status": "error", "content": "rate_limit: slow down", "omitted": 0, "retryable": true}},
        {"op": "list_tools"}
    ]);
    let r = sdk_session(&cfg, &plan, &[]);
    let s = &r["steps"];
    let env = |i: usize| envelope_of(&json!({"result": s[i]}));
    assert_eq!(s[0]["_meta"], json!({"fixture/trace": "t-a"}));
    assert_eq!(env(0)["content"], "meta");
    let e = env(1);
    assert_eq!(e["retryable"], false);
    assert!(
        e["content"]
            .as_str()
            .unwrap()
            .starts_with("input_required: "),
        "{e}"
    );
    let e = env(2);
    assert_eq!(e["retryable"], false);
    assert!(
        e["content"].as_str().unwrap().starts_with("unsupported: "),
        "{e}"
    );
    // -32042 reaches the client as the JSON-RPC error, data included.
    assert_eq!(s[3]["error"]["code"], -32042, "{}", s[3]);
    assert_eq!(
        s[3]["error"]["data"]["elicitations"][0]["url"],
        "https://example.invalid/auth"
    );
    let e = env(4);
    assert_eq!(e["content"], "line 0\nline 1\nline 2");
    assert_eq!(e["omitted"], 47 + 3);
    assert_eq!(e["status"], "truncated");
    let e = env(5);
    assert_eq!(
        (e["status"].as_str(), e["retryable"].as_bool()),
        (Some("error"), Some(true))
    );
    assert_eq!(e["content"], "rate_limit: slow down");
    let tools = names_of(&s[6], "name");
    assert!(
        tools.contains(&"with_meta".to_owned()) && !tools.contains(&"task_only".to_owned()),
        "{tools:?}"
    );
}

#[test]
fn an_envelope_behind_an_envelope_keeps_status_and_refills_content() {
    let (inner_dir, inner) = write_config(&fixture_server("fx", &[], "char_budget = 100000"));
    let outer = format!(
        "[mcp_servers.inner]\ncommand = {:?}\nargs = [\"serve\", \"--config\", {:?}]\nchar_budget = 20\n",
        bin().display().to_string(),
        inner.display().to_string()
    );
    let (_d, cfg) = write_config(&outer);
    let plan = json!([
        {"op": "call", "name": "lines", "arguments": {"n": 50}},
        {"op": "call", "name": "rate_limited", "arguments": {}},
        {"op": "call", "name": "rows", "arguments": {"n": 3}}
    ]);
    let r = sdk_session(&cfg, &plan, &[]);
    let s = &r["steps"];
    let env = |i: usize| envelope_of(&json!({"result": s[i]}));
    let e = env(0);
    assert_eq!(e["content"], "line 0\nline 1\nline 2", "{e}");
    assert_eq!(e["omitted"], 47);
    assert_eq!(e["status"], "truncated");
    assert_eq!(e["tool"], "lines");
    let e = env(1);
    assert_eq!(e["status"], "error");
    assert_eq!(e["retryable"], true, "{e}");
    assert!(
        e["content"].as_str().unwrap().starts_with("rate_limit: "),
        "{e}"
    );
    let e = env(2);
    assert_eq!(e["content"], "i=0,name=row-0", "{e}");
    assert_eq!(e["omitted"], 2);
    drop(inner_dir);
}

#[test]
fn nothing_is_declared_or_forwarded_that_no_server_offers() {
    let (_d, cfg) = write_config(&fixture_server("plain", &[], ""));
    let plan = json!([
        {"op": "list_resources"},
        {"op": "list_prompts"},
        {"op": "set_level", "level": "info"},
        {"op": "call", "name": "log", "arguments": {}}
    ]);
    let r = sdk_session(&cfg, &plan, &[]);
    let caps = &r["initialize"]["capabilities"];
    assert_eq!(caps, &json!({"tools": {"listChanged": true}}), "{caps}");
    assert!(!r["initialize"]["instructions"]
        .as_str()
        .unwrap()
        .contains("\n## "));
    let s = &r["steps"];
    for i in 0..3 {
        assert_eq!(s[i]["error"]["code"], -32601, "{}", s[i]);
    }
    assert_eq!(envelope_of(&json!({"result": s[3]}))["content"], "logged");
    assert!(
        notes(&r, "notifications/message").is_empty(),
        "{}",
        r["notifications"]
    );
}

#[test]
fn check_lists_prompts_resources_and_templates_per_server() {
    let config = [
        fixture_server(
            "a",
            &["--features", "--page-size", "2"],
            "disabled_prompts = [\"secret\"]\nenabled_tools = [\"echo\", \"task_only\"]",
        ),
        fixture_server(
            "b",
            &["--features"],
            "tool_prefix = \"b_\"\nenabled_tools = [\"echo\"]",
        ),
        real_server("everything", "enabled_tools = [\"echo\"]"),
    ]
    .concat();
    let (_d, cfg) = write_config(&config);
    let out = std::process::Command::new(bin())
        .args(["check", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "  prompt: greet\n  prompt: only_a\n  resource: fixture://a/doc/0\n",
        "  resource: shared://doc\n  template: fixture://a/item/{id}\n",
        "  warning: tool 'task_only' requires task-augmented execution, which is not proxied; not listed\n",
        "  b_echo ",
        "  prompt: b_greet\n  prompt: b_only_b\n  prompt: b_secret\n",
        "  prompt: completable-prompt\n",
        "  resource: demo://resource/static/document/architecture.md\n",
        "  template: demo://resource/dynamic/text/{resourceId}\n",
        "3 of 3 enabled server(s) ready, 3 tool(s), 9 prompt(s), 15 resource(s), 4 resource template(s)\n",
    ] {
        assert!(text.contains(line), "{line:?} missing from\n{text}");
    }
    assert!(!text.contains("prompt: secret"), "{text}");
}

#[test]
fn a_restarted_server_gets_the_logging_level_again_and_the_client_hears_of_its_lists() {
    let (_d, cfg) = write_config(&fixture_server("a", &["--features"], ""));
    let plan = json!([
        {"op": "set_level", "level": "error"},
        {"op": "call", "name": "log_level", "arguments": {}},
        {"op": "call", "name": "crash", "arguments": {}},
        {"op": "wait", "seconds": 3},
        {"op": "call", "name": "log_level", "arguments": {}},
        {"op": "list_prompts"}
    ]);
    let r = sdk_session(&cfg, &plan, &[]);
    let s = &r["steps"];
    let env = |i: usize| envelope_of(&json!({"result": s[i]}));
    assert_eq!(env(1)["content"], "error");
    assert!(
        env(2)["content"]
            .as_str()
            .unwrap()
            .starts_with("server_error: "),
        "{}",
        env(2)
    );
    // The new process starts with no level; the proxy sent the client's again.
    assert_eq!(env(4)["content"], "error", "{}", env(4));
    assert_eq!(
        notes(&r, "notifications/resources/list_changed").len(),
        1,
        "{}",
        r["notifications"]
    );
    assert_eq!(
        notes(&r, "notifications/prompts/list_changed").len(),
        1,
        "{}",
        r["notifications"]
    );
    assert_eq!(
        names_of(&s[5]["prompts"], "name"),
        ["greet", "only_a", "secret"]
    );
}

/// Right after a crash, before the client ever listed prompts or resources, a prompt, a
/// resource and a prompt completion of the restarting server are answered once it is ready
/// again: the proxy waits for it (up to its tool timeout) instead of answering "unknown".
/// Each request runs in its own session, so that the server is restarting when it arrives.
#[test]
fn a_restarting_servers_prompts_and_resources_are_waited_for() {
    let (_d, cfg) = write_config(&fixture_server("fx", &["--features"], ""));
    let crash = json!({"op": "call", "name": "crash", "arguments": {}});
    let requests = [
        json!({"op": "get_prompt", "name": "greet", "arguments": {"name": "Ann"}}),
        json!({"op": "read_resource", "uri": "fixture://fx/doc/1"}),
        json!({"op": "complete", "ref": {"type": "ref/prompt", "name": "greet"},
               "argument": {"name": "name", "value": "al"}}),
    ];
    let mut answers = Vec::new();
    for request in requests {
        let r = sdk_session(&cfg, &json!([crash, request]), &[]);
        answers.push(r["steps"][1].clone());
    }
    assert_eq!(
        text_of_prompt(&answers[0]),
        "Hello, Ann from fx",
        "{answers:?}"
    );
    assert_eq!(
        answers[1]["contents"][0]["text"], "doc 1 of fx",
        "{answers:?}"
    );
    let values = &answers[2]["completion"]["values"];
    assert_eq!(values, &json!(["alice@fx", "albert@fx"]), "{answers:?}");
}

/// A server that gives up (`max_restarts = 0`, then a crash) takes its prompts and resources
/// with it: the client is told both lists changed, and the next lists no longer name them.
#[test]
fn a_server_that_gives_up_is_left_out_of_the_lists_and_the_client_is_told() {
    let (_d, cfg) = write_config(
        &[
            fixture_server("a", &["--features"], "max_restarts = 0"),
            fixture_server("b", &["--features"], "tool_prefix = \"b_\""),
        ]
        .concat(),
    );
    let plan = json!([
        {"op": "list_prompts"},
        {"op": "list_resources"},
        {"op": "call", "name": "crash", "arguments": {}},
        {"op": "wait", "seconds": 2},
        {"op": "list_prompts"},
        {"op": "list_resources"}
    ]);
    let r = sdk_session(&cfg, &plan, &[]);
    let s = &r["steps"];
    assert!(
        names_of(&s[0]["prompts"], "name").contains(&"only_a".to_owned()),
        "{s}"
    );
    assert!(names_of(&s[1]["resources"], "uri").contains(&"fixture://a/doc/0".to_owned()));
    for method in ["prompts", "resources"] {
        let changed = notes(&r, &format!("notifications/{method}/list_changed"));
        assert_eq!(changed.len(), 1, "{method}: {}", r["notifications"]);
    }
    let prompts = names_of(&s[4]["prompts"], "name");
    assert!(!prompts.contains(&"only_a".to_owned()), "{prompts:?}");
    assert!(prompts.contains(&"b_only_b".to_owned()), "{prompts:?}");
    let uris = names_of(&s[5]["resources"], "uri");
    assert!(
        !uris.iter().any(|u| u.starts_with("fixture://a/")),
        "{uris:?}"
    );
    assert!(uris.contains(&"fixture://b/doc/0".to_owned()), "{uris:?}");
}
