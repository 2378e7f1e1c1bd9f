//! The committed JSON Schema of the config (`config/mcp-envelope.schema.json`) is exactly what
//! `mcp-envelope config-schema` prints, and `config/example.toml` validates against it (issue 7).
use crate::common;
use common::*;
use serde_json::Value;

fn schema_from_binary() -> String {
    let out = std::process::Command::new(bin())
        .arg("config-schema")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn toml_as_json(text: &str) -> Value {
    let table: toml::Table = toml::from_str(text).unwrap();
    serde_json::to_value(table).unwrap()
}

#[test]
fn committed_schema_is_current() {
    let committed =
        std::fs::read_to_string(root().join("config/mcp-envelope.schema.json")).unwrap();
    assert_eq!(
        committed,
        schema_from_binary(),
        "config/mcp-envelope.schema.json is stale: run `mcp-envelope config-schema > config/mcp-envelope.schema.json`"
    );
}

#[test]
fn example_config_validates_and_bad_keys_do_not() {
    let schema: Value = serde_json::from_str(&schema_from_binary()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let example = std::fs::read_to_string(root().join("config/example.toml")).unwrap();
    assert!(
        example.starts_with("#:schema ./mcp-envelope.schema.json\n"),
        "example.toml's first line points editors at the schema"
    );
    let instance = toml_as_json(&example);
    let errors: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");

    for bad in [
        "[defaults]\nchar_budgt = 1\n",
        "[mcp_servers.a]\nargs = []\n",
        "[mcp_servers.a]\ncommand = \"x\"\nmedia = \"inline\"\n",
        "[mcp_servers.a]\ncommand = \"x\"\ntool_timeout_sec = 0\n",
        "[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.a.tools.t]\nchar_budget = -1\n",
    ] {
        assert!(!validator.is_valid(&toml_as_json(bad)), "accepted: {bad}");
    }
    // Every key of the example appears in the schema with a description.
    let text = serde_json::to_string(&schema).unwrap();
    for key in [
        "char_budget",
        "tool_timeout_sec",
        "startup_timeout_sec",
        "max_restarts",
        "max_message_bytes",
        "media",
        "command",
        "args",
        "env",
        "cwd",
        "enabled",
        "enabled_tools",
        "disabled_tools",
        "tool_prefix",
        "tools",
        "path",
        "redact_keys",
    ] {
        assert!(
            text.contains(&format!("\"{key}\":{{\"description\"")),
            "{key}"
        );
    }
}

/// A reader that stops reading (`mcp-envelope config-schema | head`) is not an error: exit 0,
/// nothing on stderr. The read end of our stdout is closed before the command starts, so its
/// first write fails with EPIPE.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills the two descriptors; each is then owned exactly once.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read_end);
    let out = std::process::Command::new(bin())
        .arg("config-schema")
        .stdout(std::process::Stdio::from(write_end))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(out.status.code(), Some(0));
}
