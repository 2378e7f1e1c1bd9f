//! `mcp-envelope check` through the binary with the fixture server (issue 7).
use crate::common;
use common::*;
use std::time::{Duration, Instant};

#[test]
fn good_config_lists_ready_server_and_tools_with_sources() {
    let (_dir, config) = write_config(&format!(
        "[defaults]\nchar_budget = 40\n{}\n[mcp_servers.fx.tools.echo]\ntool_timeout_sec = 2.5\n{}",
        fixture_server("fx", &[], "tool_prefix = \"fx_\"\ntool_timeout_sec = 30"),
        fixture_server("off", &[], "enabled = false")
    ));
    let out = check(&config);
    let text = ok_stdout(&out);
    let line = |start: &str| table_row(&text, start);
    assert!(line("fx ").starts_with("fx ready "), "{text}");
    assert!(line("fx ").ends_with(" ms"), "{text}");
    assert_eq!(line("  fx_rows "), "fx_rows 40 (defaults) - 30s (server)");
    assert_eq!(line("  fx_echo "), "fx_echo 40 (defaults) - 2.5s (tool)");
    assert_eq!(line("off "), "off disabled");
    assert!(text.contains("1 of 1 enabled server(s) ready"), "{text}");
    // Quiet by default: a healthy check logs nothing (no INFO lines, no shutdown noise).
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[test]
fn server_failing_at_start_exits_1_with_reason_and_stderr() {
    let (_dir, config) = write_config(&format!(
        "{}{}",
        fixture_server("ok", &[], ""),
        fixture_server("bad", &["--exit-at-start", "3"], "startup_timeout_sec = 2")
    ));
    let started = Instant::now();
    let out = check(&config);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("bad ") && l.contains("failed")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("ok ") && l.contains("ready")),
        "{text}"
    );
    let reason = text
        .lines()
        .find(|l| l.starts_with("  reason: "))
        .expect(&text);
    assert!(reason.contains("exit status: 3"), "{reason}");
    assert!(
        text.contains("  stderr: ") && text.contains("--exit-at-start: exiting with code 3"),
        "{text}"
    );
    assert!(text.contains("1 of 2 enabled server(s) ready"), "{text}");
}

#[test]
fn bad_key_exits_2_with_position() {
    let (_dir, config) = write_config("[defaults]\nchar_budget = 10\nchar_budgt = 5\n");
    let out = check(&config);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:3:1: defaults.char_budgt", config.display())),
        "{err}"
    );
    assert!(
        err.contains("unknown key `char_budgt`; did you mean `char_budget`?"),
        "{err}"
    );
    assert!(
        !err.contains("known keys"),
        "no list beside a suggestion: {err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn tool_names_the_server_does_not_offer_are_flagged() {
    // A typo in disabled_tools would leave the tool exposed: check says so.
    let (_dir, config) = write_config(&fixture_server("fx", &[], "disabled_tools = [\"ehco\"]"));
    let out = check(&config);
    let text = String::from_utf8_lossy(&out.stdout);
    // The config's intent (echo hidden) is not carried out: exit 1, naming server, entry and
    // the tool meant.
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("  error: mcp_servers.fx.disabled_tools names \"ehco\", which server 'fx' does not offer; did you mean \"echo\"?\n"),
        "{text}"
    );
    assert!(
        text.ends_with("; 1 config entry naming tools the server does not offer\n"),
        "{text}"
    );
    // Said once: in the table, not in the log too.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("ehco"), "{err}");
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("echo ")),
        "echo stays exposed:\n{text}"
    );
}

#[test]
fn missing_program_fails_at_once_without_restarts() {
    let (_dir, config) = write_config(&format!(
        "{}[mcp_servers.gone]\ncommand = \"mcp-server-that-does-not-exist\"\n",
        fixture_server("ok", &[], "")
    ));
    let started = Instant::now();
    let out = check(&config);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        text.contains("reason: unavailable: cannot start `mcp-server-that-does-not-exist`"),
        "{text}"
    );
    assert!(text.contains("1 of 2 enabled server(s) ready"), "{text}");
}

/// A `command` written with its arguments (a mistake: they go in `args`) cannot be started;
/// the reason quotes it without the secret among them, in `check` and in its log.
#[test]
fn a_secret_written_into_a_command_is_not_shown() {
    let (_dir, config) = write_config(
        "[mcp_servers.gone]\ncommand = \"/nonexistent/bin --token=tokArgValue1234\"\n",
    );
    let out = check(&config);
    let text = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("cannot start `/nonexistent/bin --token=[redacted]`"),
        "{text}"
    );
    assert!(
        !text.contains("tokArgValue1234") && !log.contains("tokArgValue1234"),
        "{text}{log}"
    );
}

#[test]
fn malformed_tool_definitions_are_flagged_and_not_listed() {
    let bad = r#"[{"name": "bad_schema", "inputSchema": "not-an-object"}]"#;
    let args = serde_json::to_string(&[
        root()
            .join("tests/fixtures/hostile_server.py")
            .display()
            .to_string(),
        "--tools-json".into(),
        bad.into(),
    ])
    .unwrap();
    let (_dir, config) = write_config(&format!(
        "[mcp_servers.h]\ncommand = \"python3\"\nargs = {args}\n"
    ));
    let out = check(&config);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("  warning: tool \"bad_schema\" dropped: `inputSchema` is not a JSON object"),
        "{text}"
    );
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with("bad_schema ")),
        "{text}"
    );
}

/// A server whose `initialize` answer is not an object, or names a protocol version the proxy
/// does not speak, is not ready.
#[test]
fn bad_initialize_answers_are_not_ready() {
    let server = |name: &str, result: &str| {
        let args = serde_json::to_string(&[
            root()
                .join("tests/fixtures/hostile_server.py")
                .display()
                .to_string(),
            "--init-result".into(),
            result.into(),
        ])
        .unwrap();
        format!("[mcp_servers.{name}]\ncommand = \"python3\"\nargs = {args}\nmax_restarts = 0\n")
    };
    let (_dir, config) = write_config(&format!(
        "{}{}",
        server("notobj", r#""not an object""#),
        server(
            "oldver",
            r#"{"protocolVersion": "1999-01-01", "capabilities": {}, "serverInfo": {"name": "x", "version": "1"}}"#
        )
    ));
    let out = check(&config);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("initialize result is not a JSON object"),
        "{text}"
    );
    assert!(text.contains("protocolVersion \"1999-01-01\""), "{text}");
    assert!(text.contains("0 of 2 enabled server(s) ready"), "{text}");
}

#[test]
fn a_server_failing_without_stderr_says_so_once() {
    let (_dir, config) =
        write_config("[mcp_servers.quiet]\ncommand = \"false\"\nstartup_timeout_sec = 2\n");
    let out = check(&config);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let reason = table_row(&text, "  reason: ");
    assert!(reason.contains("exit status: 1"), "{text}");
    let said: Vec<&str> = text.lines().filter(|l| l.contains("stderr")).collect();
    assert_eq!(said, ["  stderr: (none)"], "{text}");
}

#[test]
fn a_task_only_tool_is_a_check_warning_and_not_logged_on_every_call() {
    let (_dir, config) = write_config(&fixture_server("fx", &["--features"], ""));
    let text = ok_stdout(&check(&config));
    let warning = "  warning: tool 'task_only' requires task-augmented execution, which is not proxied; not listed\n";
    assert_eq!(text.matches(warning).count(), 1, "{text}");
    for text in ["one", "two"] {
        let out = std::process::Command::new(bin())
            .args(["call", "--config"])
            .arg(&config)
            .args(["echo", &format!("{{\"text\":\"{text}\"}}")])
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{log}");
        assert!(String::from_utf8_lossy(&out.stdout).contains(text));
        assert!(
            !log.contains("task"),
            "a call does not log the task-only tool: {log}"
        );
    }
}

#[test]
fn collisions_are_warned_about_once_in_the_table() {
    let (_dir, config) = write_config(&format!(
        "{}{}",
        fixture_server("a", &[], ""),
        fixture_server("b", &[], "")
    ));
    let out = check(&config);
    let text = ok_stdout(&out);
    let warning = "warning: tool name 'echo' is offered by more than one server; server 'a' \
                   exposes it as 'a__echo', server 'b' exposes it as 'b__echo'\n";
    assert_eq!(text.matches(warning).count(), 1, "{text}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "said in the table only"
    );
}

/// `mcp-envelope call --config CONFIG TOOL ARGS`, run to its end.
fn call(config: &std::path::Path, tool: &str, args: &str) -> std::process::Output {
    std::process::Command::new(bin())
        .args(["call", "--config"])
        .arg(config)
        .args([tool, args])
        .output()
        .unwrap()
}

/// `call` over three servers offering the same tools says each collision once, naming the
/// three servers' names for it; it said each one three times, once per server.
#[test]
fn call_says_each_collision_once_for_all_servers() {
    let (_dir, config) = write_config(&format!(
        "{}{}{}",
        fixture_server("a", &[], ""),
        fixture_server("b", &[], ""),
        fixture_server("c", &[], "")
    ));
    let out = call(&config, "b__echo", r#"{"text":"hi"}"#);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert_eq!(
        log.matches("tool name 'echo' is offered").count(),
        1,
        "{log}"
    );
    assert!(
        log.contains(
            "tool name 'echo' is offered by more than one server; server 'a' exposes it as \
             'a__echo', server 'b' exposes it as 'b__echo', server 'c' exposes it as 'c__echo'"
        ),
        "{log}"
    );
}

/// `[paging] tool_name` equal to a server's exposed tool name: the page tool takes the name, and
/// `check` says which server tool is hidden and how to get it back.
#[test]
fn a_server_tool_under_the_page_tools_name_is_warned_about() {
    let (_dir, config) = write_config(&format!(
        "[paging]\ntool_name = \"echo\"\n{}",
        fixture_server("fx", &[], "")
    ));
    let text = ok_stdout(&check(&config));
    let warning = "warning: server `fx` offers tool `echo` as `echo`, the page tool's name: the \
                   page tool answers that name and the server's tool is not offered; change \
                   [paging] tool_name or the server's tool_prefix to offer it\n";
    assert_eq!(text.matches(warning).count(), 1, "{text}");
    // The hidden tool is neither listed nor counted; the others are.
    assert!(!text.contains("\n  echo "), "{text}");
    assert!(text.contains("\n  add "), "{text}");
}

#[test]
fn call_logs_warnings_only_unless_asked() {
    let (_dir, config) = write_config(&fixture_server("fx", &[], "disabled_tools = [\"ehco\"]"));
    let call = |level: Option<&str>| call_echo(&config, level);
    let quiet = call(None);
    assert!(!quiet.contains("INFO"), "{quiet}");
    // A warning still shows, once.
    assert_eq!(quiet.lines().count(), 1, "{quiet}");
    assert!(
        quiet.contains("WARN") && quiet.contains("did you mean \"echo\"?"),
        "{quiet}"
    );
    let verbose = call(Some("info"));
    assert!(
        verbose.contains("INFO") && verbose.contains("tools/call"),
        "{verbose}"
    );
}

#[test]
fn call_starts_only_the_server_the_allowlists_name() {
    let config_with = |gone_extra: &str| {
        write_config(&format!(
            "{}[mcp_servers.gone]\ncommand = \"mcp-server-that-does-not-exist\"\n{gone_extra}\n",
            fixture_server("fx", &[], "enabled_tools = [\"echo\"]"),
        ))
    };
    let call = |config: &std::path::Path| call_echo(config, None);
    // Every server lists its tools in the config: only fx is started.
    let (_d1, decided) = config_with("enabled_tools = [\"other\"]");
    let log = call(&decided);
    assert!(!log.contains("gone"), "{log}");
    // gone could offer any tool: it is started too (and warned about).
    let (_d2, open) = config_with("");
    let log = call(&open);
    assert!(log.contains("gone"), "{log}");
}

/// The page tool answers from the proxy's own store, which a one-shot `call` never filled:
/// `call envelope_next_page` starts no server (a missing command would be logged) and
/// answers `not_found`, saying why a one-shot `call` has nothing to page.
#[test]
fn call_of_the_page_tool_starts_no_server() {
    let (_dir, config) = write_config(&format!(
        "{}[mcp_servers.gone]\ncommand = \"mcp-server-that-does-not-exist\"\n",
        fixture_server("fx", &[], ""),
    ));
    let out = std::process::Command::new(bin())
        .args(["--log-level", "debug", "call", "--config"])
        .arg(&config)
        .args(["envelope_next_page", "{\"call_id\":\"7\"}"])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let env: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let content = env["content"].as_str().unwrap();
    assert!(
        content.starts_with("not_found: no rows kept for call_id '7': a one-shot `call`"),
        "{env}"
    );
    assert!(!content.contains("expired or evicted"), "{env}");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        !log.contains("server=fx") && !log.contains("server=gone"),
        "{log}"
    );
}

#[test]
fn a_listed_tool_of_a_server_that_failed_to_start_is_unavailable() {
    let (_dir, config) = write_config(&format!(
        "{}[mcp_servers.gone]\ncommand = \"mcp-server-that-does-not-exist\"\nmax_restarts = 0\nenabled_tools = [\"lookup\"]\n",
        fixture_server("fx", &[], ""),
    ));
    let call = |tool: &str| {
        let out = std::process::Command::new(bin())
            .args(["call", "--config"])
            .arg(&config)
            .args([tool, "{}"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let line = String::from_utf8_lossy(&out.stdout).into_owned();
        serde_json::from_str::<serde_json::Value>(&line).unwrap()
    };
    // gone's allowlist says lookup is its tool: gone is named, not an unknown tool.
    let env = call("lookup");
    let content = env["content"].as_str().unwrap();
    assert!(
        content.starts_with("unavailable: server 'gone' is unavailable: "),
        "{env}"
    );
    assert_eq!(env["retryable"], false, "{env}");
    // A name no allowlist gives stays unknown.
    let env = call("nope");
    assert_eq!(env["content"], "not_found: no tool named 'nope'", "{env}");
}

/// `mcp-envelope [--log-level LEVEL] call echo {"text":"hi"}` with `config`: its stderr, after
/// checking it succeeded.
fn call_echo(config: &std::path::Path, level: Option<&str>) -> String {
    let mut cmd = std::process::Command::new(bin());
    if let Some(level) = level {
        cmd.args(["--log-level", level]);
    }
    let out = cmd
        .args(["call", "--config"])
        .arg(config)
        .args(["echo", "{\"text\":\"hi\"}"])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("hi"));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn call_starts_only_the_servers_a_name_two_allowlists_give_can_be_of() {
    let listed = |tools: &str| format!("enabled_tools = [{tools}]");
    let (_dir, config) = write_config(&format!(
        "{}{}{}",
        fixture_server("a", &[], &listed("\"echo\"")),
        fixture_server("b", &[], &listed("\"echo\"")),
        fixture_server("c", &[], &listed("\"sleep\"")),
    ));
    let call = |tool: &str| {
        let out = std::process::Command::new(bin())
            .args(["--log-level", "debug", "call", "--config"])
            .arg(&config)
            .args([tool, "{\"text\":\"hi\"}"])
            .env_remove("RUST_LOG")
            .output()
            .unwrap();
        let env: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let log = String::from_utf8_lossy(&out.stderr).into_owned();
        let started: Vec<bool> = ["server=a", "server=b", "server=c"]
            .iter()
            .map(|s| log.contains(s))
            .collect();
        (env, started)
    };
    // The collision rule names a's echo `a__echo`: a alone answers, under that name.
    let (env, started) = call("a__echo");
    assert_eq!(started, [true, false, false], "{env}");
    assert_eq!(
        (&env["tool"], &env["status"]),
        (&serde_json::json!("a__echo"), &serde_json::json!("ok"))
    );
    assert_eq!(env["content"], "hi", "{env}");
    // `echo` is exposed under neither plain name, whichever servers are up: no server
    // starts, and it is not_found pointing to the names, as in `serve`.
    let (env, started) = call("echo");
    assert_eq!(started, [false, false, false], "{env}");
    assert_eq!(
        env["content"],
        "not_found: no tool named 'echo': more than one server offers that name, so each one's \
         tool is named after its server; did you mean 'a__echo' or 'b__echo'?",
        "{env}"
    );
}

/// A prefix that recreates a collision's name: `c`'s `echo` under `tool_prefix = "a__"` is
/// `a__echo`, which `a`'s `echo` gets when `b` (no list) offers `echo` too. `call a__echo`
/// started `b` and `c` and answered a false `unavailable` for `a`; it starts `a` and answers
/// with `a`'s tool, as `serve` does.
#[test]
fn call_starts_the_server_a_collision_gives_a_prefixed_name_to() {
    let (_dir, config) = write_config(&format!(
        "{}{}{}",
        fixture_server("a", &[], "enabled_tools = [\"echo\"]"),
        fixture_server("b", &[], ""),
        fixture_server(
            "c",
            &[],
            "tool_prefix = \"a__\"\nenabled_tools = [\"echo\"]"
        ),
    ));
    let out = call(&config, "a__echo", r#"{"text":"from a"}"#);
    let log = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{log}");
    let envelope: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(envelope["status"], "ok", "{envelope}");
    assert_eq!(envelope["content"], "from a", "{envelope}");
}

/// A token budget under the most tokens one character takes cannot show some text, even
/// cut into pieces: `check` says so once per place it is set, naming the file, line and key
/// (a fresh-user tester got an empty first answer and no word why; then a `[defaults]` value
/// was said again for every tool).
#[test]
fn a_token_budget_too_small_for_a_character_is_a_check_warning() {
    let (_dir, config) = write_config(&format!(
        "[defaults]\ntoken_budget = 2\n{}\n[mcp_servers.fx.tools.echo]\ntoken_budget = 1\n[mcp_servers.fx.tools.rows]\ntoken_budget = 4\n",
        fixture_server("fx", &[], "")
    ));
    let out = check(&config);
    let text = ok_stdout(&out);
    let at = format!(
        "warning: {}:2:16: defaults.token_budget: token_budget 2 is under 4",
        config.display()
    );
    assert_eq!(
        text.matches("token_budget 2 is under 4").count(),
        1,
        "{text}"
    );
    assert!(text.contains(&at), "{text}");
    let echo = ": mcp_servers.fx.tools.echo.token_budget: token_budget 1 is under 4";
    assert_eq!(text.matches(echo).count(), 1, "{text}");
    assert!(!text.contains("token_budget 4 is under"), "{text}");
}

/// A `[transcript] path` whose directory does not exist is an error (exit 1: the proxy could
/// not record), and a tool in both `enabled_tools` and `disabled_tools` a warning, each naming
/// the file, line and key; neither was reported.
#[test]
fn a_missing_transcript_directory_and_a_tool_in_both_lists_are_reported() {
    let (dir, config) = write_config(&format!(
        "[transcript]\npath = \"nowhere/calls.jsonl\"\n{}",
        fixture_server(
            "fx",
            &[],
            "enabled_tools = [\"echo\", \"rows\"]\ndisabled_tools = [\"rows\"]"
        )
    ));
    let out = check(&config);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let file = config.display();
    let missing = dir.path().join("nowhere");
    let error = format!("\nerror: {file}:2:8: transcript.path: the transcript's directory {missing:?} does not exist");
    assert!(text.contains(&error), "{text}");
    let warning = format!("\nwarning: {file}:7:19: mcp_servers.fx.disabled_tools: \"rows\" is also listed in enabled_tools (line 6)");
    assert!(text.contains(&warning), "{text}");
}

/// A `[transcript] path` that is empty or an existing directory is an error naming the file,
/// line and key, and `check` exits 1 (the proxy could not record there); it exited 0 and said
/// nothing.
#[test]
fn an_empty_or_directory_transcript_path_is_reported() {
    let logs = tempfile::tempdir().unwrap();
    for (path, said) in [
        (String::new(), "the transcript path is empty".to_owned()),
        (
            logs.path().display().to_string(),
            format!("the transcript path {:?} is a directory", logs.path()),
        ),
    ] {
        let (_dir, config) = write_config(&format!(
            "[transcript]\npath = \"{path}\"\n{}",
            fixture_server("fx", &[], "")
        ));
        let out = check(&config);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{path:?}: {text}");
        let error = format!("\nerror: {}:2:8: transcript.path: {said}", config.display());
        assert!(text.contains(&error), "{text}");
    }
}
