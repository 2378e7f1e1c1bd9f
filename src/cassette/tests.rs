use std::path::Path;

use serde_json::json;

use super::*;
use crate::transcript::parse_transcript;

/// A transcript line of a call of `tool` on `server` with `arguments` whose result text is
/// `text`; `seq` keeps lines distinct.
fn call_line(seq: u64, server: &str, tool: &str, arguments: Value, text: &str) -> String {
    json!({
        "v": 1, "started_at": format!("2026-12-01T00:00:00.{seq:03}Z"), "seq": seq,
        "call_id": seq.to_string(), "tool": tool, "server": server, "server_tool": tool,
        "arguments": arguments, "char_budget": 100, "timeout_ms": 1000,
        "outcome": {"kind": "result", "result": {"content": [{"type": "text", "text": text}]}},
        "envelope": {"call_id": seq.to_string(), "tool": tool, "status": "ok", "content": text,
                     "omitted": 0, "retryable": false},
        "duration_ms": 1
    })
    .to_string()
}

fn cassette(lines: &[String], ignored: &[&str]) -> Cassette {
    let text = lines.join("\n") + "\n";
    let t = parse_transcript(&text, Path::new("calls.jsonl")).unwrap();
    Cassette::new(&t, ignored.iter().map(|s| s.to_string()).collect())
}

fn text_of(outcome: Outcome) -> String {
    match outcome {
        Outcome::Result { result } => result["content"][0]["text"].as_str().unwrap().to_owned(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn canonical_json_sorts_keys_at_every_depth_and_drops_ignored_keys() {
    let v = json!({"b": 1, "a": {"d": [{"z": 1, "y": 2}], "c": 3, "nonce": 9}});
    assert_eq!(
        canonical_json(&v, &["nonce".to_owned()]),
        r#"{"a":{"c":3,"d":[{"y":2,"z":1}]},"b":1}"#
    );
}

#[test]
fn repeated_calls_are_answered_in_recorded_order_then_refused() {
    let mut c = cassette(
        &[
            call_line(0, "git", "git_log", json!({"n": 1}), "first"),
            call_line(1, "git", "git_log", json!({"n": 1}), "second"),
        ],
        &[],
    );
    // Key order does not matter.
    let answer = |c: &mut Cassette| c.answer("git", "git_log", "git_log", &json!({"n": 1}));
    assert_eq!(text_of(answer(&mut c).unwrap()), "first");
    assert_eq!(text_of(answer(&mut c).unwrap()), "second");
    let miss = answer(&mut c).unwrap_err();
    assert!(miss.message.contains("2 answer(s)"), "{}", miss.message);
}

/// A call recorded as cancelled (old transcripts have no such line; the kind is new) has no
/// answer to play: the same call later in the recording answers, and its tool is offered.
#[test]
fn a_cancelled_call_is_not_played_back() {
    let mut cancelled: Value =
        serde_json::from_str(&call_line(0, "fx", "sleep", json!({}), "")).unwrap();
    cancelled["outcome"] = json!({"kind": "cancelled"});
    let lines = [
        cancelled.to_string(),
        call_line(1, "fx", "sleep", json!({}), "slept"),
    ];
    let mut c = cassette(&lines, &[]);
    let answer = |c: &mut Cassette| c.answer("fx", "sleep", "sleep", &json!({}));
    assert_eq!(text_of(answer(&mut c).unwrap()), "slept");
    assert!(answer(&mut c).is_err(), "one answer recorded, not two");
    let alone = cassette(&lines[..1], &[]);
    assert!(alone.tools("fx").is_some_and(|t| t[0]["name"] == "sleep"));
}

#[test]
fn unmatched_calls_name_the_closest_recorded_call() {
    let mut c = cassette(
        &[
            call_line(
                0,
                "time",
                "get_current_time",
                json!({"timezone": "Europe/Warsaw"}),
                "w",
            ),
            call_line(
                1,
                "time",
                "get_current_time",
                json!({"timezone": "Asia/Tokyo"}),
                "t",
            ),
        ],
        &[],
    );
    let miss = c
        .answer(
            "time",
            "get_current_time",
            "get_current_time",
            &json!({"timezone": "Europe/Warsa"}),
        )
        .unwrap_err();
    assert!(
        miss.message
            .ends_with(r#"closest recorded call is get_current_time {"timezone":"Europe/Warsaw"}"#),
        "{}",
        miss.message
    );
    let miss = c
        .answer("time", "get_time", "get_time", &json!({}))
        .unwrap_err();
    assert!(
        miss.message
            .contains("closest recorded call is get_current_time"),
        "{}",
        miss.message
    );
}

#[test]
fn ignored_keys_and_redacted_values_match_anything() {
    let mut c = cassette(
        &[call_line(
            0,
            "api",
            "fetch",
            json!({"url": "u", "token": "[redacted]", "nonce": 1}),
            "ok",
        )],
        &["nonce"],
    );
    let args = json!({"nonce": 42, "token": "sk-real", "url": "u"});
    assert_eq!(
        text_of(c.answer("api", "fetch", "fetch", &args).unwrap()),
        "ok"
    );
}

#[test]
fn tools_come_from_recorded_lists_or_from_the_calls_of_older_transcripts() {
    let list = json!({"v": 1, "kind": "tools", "recorded_at": "2026-12-01T00:00:00.000Z",
        "server": "time", "tools": [{"name": "get_current_time", "inputSchema": {"type": "object", "properties": {"timezone": {"type": "string"}}}}]});
    let c = cassette(
        &[
            list.to_string(),
            call_line(0, "git", "git_log", json!({}), "x"),
            call_line(1, "time", "get_current_time", json!({}), "y"),
        ],
        &[],
    );
    assert_eq!(c.servers().collect::<Vec<_>>(), ["time", "git"]);
    assert_eq!(
        c.tools("time").unwrap()[0]["inputSchema"]["properties"]["timezone"]["type"],
        "string"
    );
    assert_eq!(
        c.tools("git").unwrap(),
        [json!({"name": "git_log", "inputSchema": {"type": "object"}})]
    );
    assert!(c.tools("nope").is_none());
}

#[test]
fn bad_transcripts_are_refused_with_their_line_numbers() {
    let ok = call_line(0, "git", "git_log", json!({}), "x");
    let parse =
        |lines: &[String]| parse_transcript(&(lines.join("\n") + "\n"), Path::new("c.jsonl"));
    let dup = parse(&[ok.clone(), String::new(), ok.clone()])
        .unwrap_err()
        .to_string();
    assert!(dup.contains("c.jsonl:3") && dup.contains("line 1"), "{dup}");
    let mut not_object: Value = serde_json::from_str(&ok).unwrap();
    not_object["arguments"] = json!([1, 2]);
    let e = parse(&[not_object.to_string()]).unwrap_err().to_string();
    assert!(
        e.contains("c.jsonl:1") && e.contains("must be an object, not an array"),
        "{e}"
    );
    let mut old: Value = serde_json::from_str(&ok).unwrap();
    old["v"] = json!(0);
    let e = parse(&[old.to_string(), ok.clone()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("c.jsonl:1") && e.contains("version 0"), "{e}");
}

/// A call the proxy refused itself (outcome `refused`, its arguments as sent: perhaps no
/// object) reads back, and is no answer of the server to play: the same arguments reach the
/// recorded answer of the server, not the proxy's refusal. A record of another kind still
/// needs object arguments; an older transcript's refusal (`rpc_error`, `arguments: {}`) reads.
#[test]
fn a_refused_call_reads_back_but_is_not_played() {
    let error = json!({"code": -32602, "message": "`arguments` must be an object"});
    let refused = |seq: u64, arguments: Value| {
        let mut line: Value =
            serde_json::from_str(&call_line(seq, "git", "git_log", arguments, "")).unwrap();
        line["outcome"] = json!({"kind": "refused", "error": error});
        line.to_string()
    };
    let mut c = cassette(
        &[
            refused(0, json!([1])),
            refused(1, json!({"n": 1})),
            call_line(2, "git", "git_log", json!({"n": 1}), "answer"),
        ],
        &[],
    );
    let answer = c.answer("git", "git_log", "git_log", &json!({"n": 1}));
    assert_eq!(text_of(answer.unwrap()), "answer");
    let old = refused(0, json!({})).replace("\"refused\"", "\"rpc_error\"");
    assert!(parse_transcript(&(old + "\n"), Path::new("c.jsonl")).is_ok());
    let not_refused = refused(0, json!([1])).replace("\"refused\"", "\"rpc_error\"");
    let e = parse_transcript(&(not_refused + "\n"), Path::new("c.jsonl")).unwrap_err();
    assert!(e.to_string().contains("must be an object"), "{e}");
}
