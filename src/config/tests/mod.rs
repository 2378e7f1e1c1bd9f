//! Unit tests of the config module, by stage; the helpers here are shared.

mod findings;
mod load;
mod model;
mod secrets;
mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::load::expand_vars;
use super::validate::line_column;
use super::*;
use crate::settings::{BudgetKeys, BudgetRules};

const FULL: &str = r#"
[defaults]
char_budget = 2000
tool_timeout_sec = 60
startup_timeout_sec = 20
max_restarts = 5
max_message_bytes = 67108864
media = "passthrough"

[transcript]
path = "calls.jsonl"
redact_keys = ["password", "token", "secret", "api_key", "authorization"]

[mcp_servers.git]
command = "uvx"
args = ["mcp-server-git", "--repository", "."]
env = { GIT_PAGER = "cat" }
cwd = "."
enabled = true
char_budget = 1500
tool_timeout_sec = 30
startup_timeout_sec = 20
max_restarts = 5
media = "describe"
enabled_tools = ["git_log", "git_status"]
disabled_tools = ["git_commit"]
tool_prefix = "git_"

[mcp_servers.git.tools.git_log]
char_budget = 800
tool_timeout_sec = 10
media = "passthrough"
"#;

fn no_env(_: &str) -> Option<String> {
    None
}

fn test_env(name: &str) -> Option<String> {
    match name {
        "HOME" => Some("/home/u".into()),
        "TOKEN" => Some("s3cr3t".into()),
        "EMPTY" => Some(String::new()),
        _ => None,
    }
}

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("/cfg/x.toml"), &test_env)
}

/// Parses `text`, expects an error, and checks its position, key path and message part.
fn assert_error(text: &str, line: usize, column: usize, key: &str, needle: &str) {
    let err = parse(text).expect_err("expected a config error");
    assert_eq!(
        (err.line, err.column, err.key.as_deref()),
        (Some(line), Some(column), Some(key)),
        "{err}"
    );
    assert!(err.message.contains(needle), "{err}");
    let shown = err.to_string();
    assert!(
        shown.starts_with(&format!("/cfg/x.toml:{line}:{column}: {key}: ")),
        "{shown}"
    );
}

const GIT: &str = "[mcp_servers.git]\ncommand = \"x\"\n";
