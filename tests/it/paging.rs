//! The page tool end to end, model-free: a `git_log` of a 500-commit repository (real
//! mcp-server-git) paged through to the end with `envelope_next_page` reassembles exactly the
//! full output, in characters and in tokens, lines and blocks; bad page calls get clear
//! errors; page calls are recorded and replay.

use crate::common;

use std::time::Duration;

use common::{envelope_of, git_repo, git_server, write_config, RawProxy};
use mcp_envelope::budget::Tokenizer;
use serde_json::{json, Value};

const T: Duration = Duration::from_secs(60);
const PAGE_TOOL: &str = "envelope_next_page";

fn proxy(config: &str) -> (tempfile::TempDir, RawProxy) {
    let (dir, cfg) = write_config(config);
    let mut p = RawProxy::start(&cfg, &[]);
    p.initialize("2025-06-18");
    (dir, p)
}

/// Calls `git_log` for all 500 commits, then pages to the end; returns every envelope.
fn page_through(p: &mut RawProxy, repo: &str) -> Vec<Value> {
    let args = json!({"repo_path": repo, "max_count": 500});
    let first = envelope_of(&p.call(json!(1), "git_log", args, T));
    assert_eq!(first["status"], "truncated", "{first}");
    let call_id = first["call_id"].as_str().unwrap().to_owned();
    let mut envelopes = vec![first];
    for id in 2..2000 {
        let page = envelope_of(&p.call(json!(id), PAGE_TOOL, json!({"call_id": call_id}), T));
        assert_eq!(page["call_id"], id.to_string());
        assert_eq!(page["tool"], PAGE_TOOL);
        assert_ne!(page["status"], "error", "{page}");
        let done = page["status"] == "ok";
        envelopes.push(page);
        if done {
            return envelopes;
        }
    }
    panic!("paging did not end");
}

/// The full output as one envelope's content, with a budget large enough for all of it.
fn full_output(repo: &std::path::Path, extra: &str) -> String {
    let (_d, mut p) = proxy(&git_server(
        repo,
        &format!("char_budget = 100000000\n{extra}"),
    ));
    let args = json!({"repo_path": repo.display().to_string(), "max_count": 500});
    let env = envelope_of(&p.call(json!(1), "git_log", args, T));
    assert_eq!(env["status"], "ok");
    env["content"].as_str().unwrap().to_owned()
}

fn contents(envelopes: &[Value]) -> Vec<&str> {
    envelopes
        .iter()
        .map(|e| e["content"].as_str().unwrap())
        .collect()
}

/// No gaps and no duplicates: each page's rows are exactly the `omitted` of the one before
/// minus the `omitted` after it, and no page is empty.
fn assert_counts_consistent(envelopes: &[Value], rows_of: impl Fn(&str) -> u64) {
    for pair in envelopes.windows(2) {
        let (before, page) = (&pair[0], &pair[1]);
        let content = page["content"].as_str().unwrap();
        assert!(!content.is_empty(), "an empty page: {page}");
        let rows = rows_of(content);
        assert_eq!(
            before["omitted"].as_u64().unwrap() - page["omitted"].as_u64().unwrap(),
            rows,
            "{page}"
        );
    }
    assert_eq!(envelopes.last().unwrap()["omitted"], 0);
}

#[test]
fn git_log_of_500_commits_pages_to_exactly_the_full_output() {
    let repo = git_repo(500);
    let path = repo.path().display().to_string();
    let full = full_output(repo.path(), "");
    assert!(full.matches("commit number").count() == 500);

    let (_d, mut p) = proxy(&git_server(repo.path(), "char_budget = 2000\n"));
    let envelopes = page_through(&mut p, &path);
    assert!(envelopes.len() > 20, "{} pages", envelopes.len());
    for e in &envelopes {
        assert!(e["content"].as_str().unwrap().chars().count() <= 2000);
    }
    // Line rows: pages join with the line separator.
    assert_eq!(contents(&envelopes).join("\n"), full);
    assert_counts_consistent(&envelopes, |c| c.split('\n').count() as u64);
    common::finish_session(p);
}

#[test]
fn token_budget_and_blocks_page_to_exactly_the_full_output() {
    let repo = git_repo(500);
    let path = repo.path().display().to_string();
    let shape = "text_rows = \"blocks\"\n";
    let full = full_output(repo.path(), shape);
    let config = git_server(repo.path(), &format!("token_budget = 300\n{shape}"));
    let (_d, mut p) = proxy(&config);
    let envelopes = page_through(&mut p, &path);
    for e in &envelopes {
        let content = e["content"].as_str().unwrap();
        assert!(Tokenizer::O200kBase.count(content) <= 300, "{e}");
    }
    // Block rows (one commit each): pages join with a blank line.
    assert_eq!(contents(&envelopes).join("\n\n"), full);
    assert_counts_consistent(&envelopes, |c| c.split("\n\n").count() as u64);
    // `omitted` counts commits: the first answer's rows plus its omitted is every block.
    let first = &envelopes[0];
    let first_rows = first["content"].as_str().unwrap().split("\n\n").count() as u64;
    assert_eq!(first_rows + first["omitted"].as_u64().unwrap(), 500);
    common::finish_session(p);
}

#[test]
fn skip_unknown_and_bad_page_calls() {
    let repo = git_repo(30);
    let path = repo.path().display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("calls.jsonl");
    let config = format!(
        "[transcript]\npath = {:?}\n{}",
        transcript.display().to_string(),
        git_server(repo.path(), "char_budget = 300\n")
    );
    let (_d, mut p) = proxy(&config);
    // The page tool is listed, with its description.
    p.send(&json!({"jsonrpc": "2.0", "id": "l", "method": "tools/list"}));
    let (list, _) = p.response(&json!("l"), T);
    let tool = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == PAGE_TOOL)
        .expect("the page tool is listed")
        .clone();
    assert!(tool["description"].as_str().unwrap().contains("call_id"));

    let first = envelope_of(&p.call(json!(1), "git_log", json!({"repo_path": path}), T));
    assert_eq!(first["status"], "truncated");
    let page = envelope_of(&p.call(json!(2), PAGE_TOOL, json!({"call_id": "1"}), T));
    let skipped = envelope_of(&p.call(json!(3), PAGE_TOOL, json!({"call_id": "1", "skip": 2}), T));
    // Two rows were left out between the pages.
    assert_eq!(
        page["omitted"].as_u64().unwrap() - skipped["omitted"].as_u64().unwrap(),
        2 + skipped["content"].as_str().unwrap().split('\n').count() as u64
    );
    for (id, args, error) in [
        (
            4,
            json!({"call_id": "nope"}),
            "not_found: no rows kept for call_id 'nope'",
        ),
        (5, json!({}), "invalid_argument: `call_id` is required"),
        (
            6,
            json!({"call_id": "1", "skip": -1}),
            "invalid_argument: `skip` must be a whole number",
        ),
        (
            7,
            json!({"call_id": "1", "skip": 100000}),
            "invalid_argument: `skip` 100000 is past the end of call_id '1'",
        ),
    ] {
        let env = envelope_of(&p.call(json!(id), PAGE_TOOL, args, T));
        assert_eq!(env["status"], "error");
        assert!(env["content"].as_str().unwrap().starts_with(error), "{env}");
        assert_eq!(env["retryable"], false);
    }
    skip_past_the_end_drops_nothing(&mut p, skipped["omitted"].as_u64().unwrap());
    common::finish_session(p);

    // Page calls are recorded like any call, and replay recomputes them from the paged call.
    let out = std::process::Command::new(common::bin())
        .args(["replay", transcript.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("9 passed, 0 failed"), "{stdout}");
    assert_eq!(stdout.matches(PAGE_TOOL).count(), 8, "{stdout}");
}

/// A page call of call_id "1" (with `left` rows still to come) whose skip is past the end says
/// how many rows remain, and the next page call still gets all of them.
fn skip_past_the_end_drops_nothing(p: &mut RawProxy, left: u64) {
    let env = envelope_of(&p.call(
        json!(17),
        PAGE_TOOL,
        json!({"call_id": "1", "skip": left + 1}),
        T,
    ));
    assert!(
        env["content"]
            .as_str()
            .unwrap()
            .contains(&format!(": {left} row(s) remain")),
        "{env}"
    );
    let next = envelope_of(&p.call(json!(18), PAGE_TOOL, json!({"call_id": "1"}), T));
    assert_ne!(next["status"], "error", "{next}");
    assert_eq!(
        next["content"].as_str().unwrap().split('\n').count() as u64
            + next["omitted"].as_u64().unwrap(),
        left
    );
}

#[test]
fn paging_can_be_turned_off_and_renamed() {
    let repo = git_repo(3);
    let (_d, mut p) = proxy(&format!(
        "[paging]\nenabled = false\n{}",
        git_server(repo.path(), "")
    ));
    p.send(&json!({"jsonrpc": "2.0", "id": "l", "method": "tools/list"}));
    let (list, _) = p.response(&json!("l"), T);
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(!names.contains(&PAGE_TOOL), "{names:?}");
    let env = envelope_of(&p.call(json!(1), PAGE_TOOL, json!({"call_id": "1"}), T));
    assert!(env["content"]
        .as_str()
        .unwrap()
        .starts_with("not_found: no tool named"));
    common::finish_session(p);

    let (_d, mut p) = proxy(&format!(
        "[paging]\ntool_name = \"more_rows\"\n{}",
        git_server(repo.path(), "")
    ));
    p.send(&json!({"jsonrpc": "2.0", "id": "l", "method": "tools/list"}));
    let (list, _) = p.response(&json!("l"), T);
    assert!(list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "more_rows"));
    common::finish_session(p);
}

/// `[paging] max_bytes` counts what an entry holds: the fixture's `rows` result carries its rows
/// twice (`structuredContent` and a JSON copy in a text block, as the MCP SDKs do), and only the
/// structured rows are held, so 3 rows are kept under 500 bytes (393 counted; the old count,
/// the whole result plus 256, was 504). A result too large for the store is not kept, and its
/// answer says so at once in a text block after the envelope's; the page tool then says it was
/// never kept.
#[test]
fn max_bytes_counts_the_held_rows_and_a_result_not_kept_says_so() {
    let (_d, mut p) = proxy(&format!(
        "[defaults]\nchar_budget = 20\n[paging]\nmax_bytes = 500\n{}",
        common::fixture_server("fx", &[], "")
    ));
    let small = p.call(json!("s"), "rows", json!({"n": 3}), T);
    assert_eq!(envelope_of(&small)["status"], "truncated", "{small}");
    assert_eq!(small["result"]["content"].as_array().unwrap().len(), 1);
    let page = envelope_of(&p.call(json!("p1"), PAGE_TOOL, json!({"call_id": "s"}), T));
    assert_eq!(page["content"], "i=1,name=row-1", "{page}");

    let big = p.call(json!("b"), "rows", json!({"n": 40}), T);
    let env = envelope_of(&big);
    assert_eq!(
        (env["status"].as_str(), env["omitted"].as_u64()),
        (Some("truncated"), Some(39))
    );
    let blocks = big["result"]["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 2, "{big}");
    let notice = blocks[1]["text"].as_str().unwrap();
    assert!(
        notice.starts_with("The 39 row(s) left out of call_id 'b' are not kept, so envelope_next_page cannot return them: the result needs about "),
        "{notice}"
    );
    assert!(
        notice.ends_with("needs about 1308 bytes of the paging store, which holds 500 ([paging] max_bytes). Call the tool again with narrower arguments to see them."),
        "{notice}"
    );
    let page = envelope_of(&p.call(json!("p2"), PAGE_TOOL, json!({"call_id": "b"}), T));
    let content = page["content"].as_str().unwrap();
    assert!(
        content.contains("never kept (larger than the store)"),
        "{page}"
    );
    common::finish_session(p);
}

/// JSON-RPC ids 5 and "5" of one session: two truncated results under one call_id "5". Both
/// are kept (neither answer says its rows are not kept), and a page call for "5" answers an
/// `invalid_argument` error naming both ids instead of another result's rows.
#[test]
fn ids_5_and_string_5_share_a_call_id_and_paging_it_says_so() {
    let (_d, mut p) = proxy(&format!(
        "[defaults]\nchar_budget = 20\n{}",
        common::fixture_server("fx", &[], "")
    ));
    for (id, prefix) in [(json!(5), "num-"), (json!("5"), "str-")] {
        let args = json!({"n": 3, "prefix": prefix});
        let answer = p.call(id, "rows", args, T);
        let env = envelope_of(&answer);
        assert_eq!(
            (env["call_id"].as_str(), env["status"].as_str()),
            (Some("5"), Some("truncated"))
        );
        let blocks = answer["result"]["content"].as_array().unwrap();
        assert_eq!(blocks.len(), 1, "kept, no notice: {answer}");
    }
    let page = envelope_of(&p.call(json!("p"), PAGE_TOOL, json!({"call_id": "5"}), T));
    assert_eq!(page["status"], "error", "{page}");
    let content = page["content"].as_str().unwrap();
    assert!(
        content.starts_with("invalid_argument: call_id '5' names two truncated results of this session, those of the JSON-RPC requests with ids 5 (a number) and \"5\" (a string)"),
        "{page}"
    );
    common::finish_session(p);
}
