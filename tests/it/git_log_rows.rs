//! `text_rows = "blocks"` on the real mcp-server-git: one row per commit, even when commit
//! messages have several paragraphs, so `omitted` counts commits and no page starts with a
//! blank line.

use crate::common;

use std::time::Duration;

use common::{envelope_of, git_commits, git_repo, git_server, write_config, RawProxy};
use serde_json::json;

const T: Duration = Duration::from_secs(60);

#[test]
fn omitted_counts_commits_of_several_paragraphs_and_pages_start_with_a_commit() {
    let repo = git_repo(0);
    let message = "Change\n\nWhy: a second paragraph.\n\nA third one";
    git_commits(repo.path(), message, 20);
    let (_dir, config) = write_config(&git_server(
        repo.path(),
        "[mcp_servers.git.tools.git_log]\ntext_rows = \"blocks\"\nchar_budget = 400\n",
    ));
    let mut p = RawProxy::start(&config, &[]);
    p.initialize("2025-11-25");
    let args = json!({"repo_path": repo.path().display().to_string(), "max_count": 20});
    let mut envelope = envelope_of(&p.call(json!(1), "git_log", args, T));
    assert_eq!(envelope["status"], "truncated", "{envelope}");
    let commits =
        |e: &serde_json::Value| e["content"].as_str().unwrap().matches("Commit: ").count();
    // Whole commits, and `omitted` counts the commits left out.
    let shown = commits(&envelope);
    assert!(shown >= 1, "{envelope}");
    assert_eq!(
        shown as u64 + envelope["omitted"].as_u64().unwrap(),
        20,
        "{envelope}"
    );
    let mut seen = shown;
    for id in 2..40 {
        if envelope["status"] == "ok" {
            break;
        }
        let before = envelope["omitted"].as_u64().unwrap();
        envelope =
            envelope_of(&p.call(json!(id), "envelope_next_page", json!({"call_id": "1"}), T));
        let content = envelope["content"].as_str().unwrap();
        assert!(content.starts_with("Commit: "), "{envelope}");
        assert!(
            content.contains("A third one"),
            "paragraphs stay with their commit: {envelope}"
        );
        let on_page = commits(&envelope) as u64;
        assert_eq!(
            before - envelope["omitted"].as_u64().unwrap(),
            on_page,
            "{envelope}"
        );
        seen += on_page as usize;
    }
    assert_eq!(envelope["status"], "ok");
    assert_eq!(seen, 20);
    common::finish_session(p);
}
