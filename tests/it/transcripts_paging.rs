//! `replay --live` of a transcript with calls of the page tool (`envelope_next_page`), against
//! the real git server: each page is made again after the live re-run of the call it pages,
//! so an unchanged repository gives `same` for every page, new commits make the pages drift,
//! and a page of a call the transcript does not hold is skipped, never passed.
use crate::common;
use crate::transcripts::{cli, s, stderr, stdout, LONG};
use common::*;
use serde_json::json;
use std::path::Path;
use std::process::Output;

/// Records into `path`: `git_log` (id "g1", truncated at 300 characters), pages of it until
/// the page tool answers `not_found` (one past the end), then a page of a call id no call of
/// the transcript has. Returns the number of page calls of "g1".
fn record_paged_session(cfg: &Path, path: &Path, repo: &Path) -> usize {
    let mut p = RawProxy::start(cfg, &["--transcript", s(path)]);
    p.initialize("2025-06-18");
    let args = json!({"repo_path": repo.display().to_string(), "max_count": 20});
    let first = envelope_of(&p.call(json!("g1"), "git_log", args, LONG));
    assert_eq!(first["status"], "truncated", "{first}");
    let mut pages = 0;
    loop {
        let page = json!({"call_id": "g1"});
        let env = envelope_of(&p.call(json!(100 + pages), "envelope_next_page", page, LONG));
        pages += 1;
        if env["status"] == "error" {
            assert!(env["content"].as_str().unwrap().starts_with("not_found: "));
            break;
        }
        assert!(pages < 20, "paging never ended: {env}");
    }
    assert!(pages >= 3, "at least two pages and one past the end");
    let orphan = json!({"call_id": "zz"});
    envelope_of(&p.call(json!("o1"), "envelope_next_page", orphan, LONG));
    finish_session(p);
    pages
}

/// A recorded paged session of `git_log` (budget 300 characters) over a ten-commit
/// repository; the temporary folders live as long as this.
struct PagedSession {
    _dir: tempfile::TempDir,
    _cfg_dir: tempfile::TempDir,
    path: std::path::PathBuf,
    cfg: std::path::PathBuf,
    repo: tempfile::TempDir,
    pages: usize,
}

impl PagedSession {
    fn record() -> PagedSession {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.jsonl");
        let repo = git_repo(10);
        let (cfg_dir, cfg) = write_config(&git_server(
            repo.path(),
            "[mcp_servers.git.tools.git_log]\nchar_budget = 300",
        ));
        let pages = record_paged_session(&cfg, &path, repo.path());
        PagedSession {
            _dir: dir,
            _cfg_dir: cfg_dir,
            path,
            cfg,
            repo,
            pages,
        }
    }
}

/// The report's lines (without the summary) and its summary line.
fn report(out: &Output) -> (Vec<String>, String) {
    let o = stdout(out);
    let mut lines: Vec<String> = o.lines().map(str::to_owned).collect();
    let summary = lines.pop().unwrap_or_default();
    (lines, summary)
}

/// The report's verdict lines (those that start a record), without the indented details.
fn verdicts(lines: &[String]) -> Vec<&str> {
    lines
        .iter()
        .filter(|l| !l.starts_with(' '))
        .map(String::as_str)
        .collect()
}

#[test]
fn replay_live_pages_against_the_live_call_they_page() {
    let session = PagedSession::record();
    let (path, cfg, repo, pages) = (&session.path, &session.cfg, &session.repo, session.pages);
    let live = |extra: &[&str]| {
        let mut args = vec!["replay", "--live", s(path), "--config", s(cfg)];
        args.extend_from_slice(extra);
        cli(&args)
    };
    // Plain replay finds every page's call in the transcript.
    let out = cli(&["replay", s(path), "--config", s(cfg)]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );

    for extra in [&[][..], &["--ignore-content"][..]] {
        let out = live(extra);
        let (lines, summary) = report(&out);
        let shown = format!("{extra:?}\n{}{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{shown}");
        assert_eq!(
            summary,
            format!("{} passed, 0 failed, 1 skipped", 1 + pages),
            "{shown}"
        );
        let v = verdicts(&lines);
        assert_eq!(v.len(), pages + 2, "{shown}");
        assert!(v[0].starts_with("same    git_log "), "{shown}");
        for line in &v[1..=pages] {
            assert!(
                line.starts_with("same    envelope_next_page {\"call_id\":\"g1\"}"),
                "{shown}"
            );
        }
        assert_eq!(
            v[pages + 1],
            "skipped envelope_next_page {\"call_id\":\"zz\"} (call_id=o1): the call it pages (call_id 'zz') is not in this transcript",
            "{shown}"
        );
    }

    // Five newer commits: the call and its first page now show other commits; the last page
    // recorded as `ok` still has rows after it.
    git_commits(repo.path(), "later commit", 5);
    let out = live(&[]);
    let (lines, summary) = report(&out);
    let shown = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{shown}");
    let v = verdicts(&lines);
    assert!(v[0].starts_with("drift   git_log "), "{shown}");
    assert!(v[1].starts_with("drift   envelope_next_page "), "{shown}");
    assert!(summary.ends_with(" failed, 1 skipped"), "{shown}");
    let first_page = lines.iter().position(|l| l == v[1]).unwrap();
    assert!(
        lines[first_page + 1..]
            .iter()
            .take_while(|l| l.starts_with(' '))
            .any(|l| l.starts_with("    + ") && l.contains("later commit")),
        "the first page's diff shows the new commits: {shown}"
    );
    let out = live(&["--ignore-content"]);
    let shown = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("  status: ok -> truncated") || shown.contains("  status: error -> "),
        "a page that ended now has rows after it: {shown}"
    );
}

/// `stats` over a session with pages: one row per tool name (the page tool's pages and its
/// errors together, answered by the proxy: no server), no negative saving, and the page row's
/// raw sizes are not counted again (the rows a page returns are in the paged call's raw result).
#[test]
fn stats_gives_the_page_tool_one_row() {
    let session = PagedSession::record();
    let (path, pages) = (&session.path, session.pages);
    let out = cli(&["stats", s(path), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let tools = doc["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["tool"].as_str().unwrap()).collect();
    assert_eq!(names, ["envelope_next_page", "git_log"], "{doc:#}");
    let page = &tools[0];
    assert_eq!(page["calls"], pages + 1, "{page}");
    assert_eq!(
        page["errors"]["not_found"], 2,
        "one past the end, one orphan: {page}"
    );
    assert_eq!(page["server"], "", "{page}");
    assert_eq!(
        (page["raw_chars"].as_u64(), page["raw_tokens"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(page["envelope_tokens"].as_u64().unwrap() > 0, "{page}");
    assert_eq!(
        (page["pages"].as_bool(), tools[1]["pages"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(tools[1]["server"], "git", "{doc:#}");
    let table = stdout(&cli(&["stats", s(path)]));
    assert_eq!(table.matches("envelope_next_page").count(), 1, "{table}");
    let negative = |c: &str| c.starts_with('-') && c.len() > 1;
    assert!(!table.split_whitespace().any(negative), "{table}");
}
