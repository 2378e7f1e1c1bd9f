//! The `check` table: layout, failures, warnings, offered items.

use super::*;

fn tool(name: &str, budget: (usize, Source), timeout: (f64, Source)) -> ToolReport {
    ToolReport {
        name: name.into(),
        char_budget: Setting {
            value: budget.0,
            source: budget.1,
        },
        budget_rules: BudgetRules::default(),
        tool_timeout: Setting {
            value: Duration::from_secs_f64(timeout.0),
            source: timeout.1,
        },
    }
}

fn sample() -> CheckReport {
    CheckReport {
        servers: vec![
            ServerReport {
                stderr_tail: (1..=7).map(|i| format!("line {i}")).collect(),
                ..ServerReport::bare(
                    "broken",
                    ServerStatus::Failed {
                        reason: "restarting (attempt 1): exited".into(),
                    },
                )
            },
            ServerReport {
                name: "fx".into(),
                status: ServerStatus::Ready,
                startup: Some(Duration::from_millis(412)),
                protocol: Some("2026-07-28 (modern)".into()),
                offered: Default::default(),
                stderr_tail: vec!["noise".into()],
                tools: vec![
                    tool("rows", (40, Source::Defaults), (60.0, Source::BuiltIn)),
                    tool("fx_echo", (500, Source::Tool), (0.0005, Source::Server)),
                    ToolReport {
                        budget_rules: BudgetRules {
                            token_budget: Some(Setting {
                                value: 300,
                                source: Source::Tool,
                            }),
                            tokenizer: Setting {
                                value: crate::budget::Tokenizer::Cl100kBase,
                                source: Source::Server,
                            },
                            ..BudgetRules::default()
                        },
                        ..tool(
                            "fx_tokens",
                            (2000, Source::BuiltIn),
                            (60.0, Source::BuiltIn),
                        )
                    },
                ],
                warnings: vec!["tool \"t\" dropped: `inputSchema` is not a JSON object".into()],
                errors: vec![
                    "mcp_servers.fx.disabled_tools names \"ehco\", which server 'fx' does not offer; did you mean \"echo\"?".into(),
                ],
            },
            ServerReport::bare("old", ServerStatus::Disabled),
        ],
        warnings: vec![],
        config_errors: vec![],
    }
}

#[test]
fn renders_aligned_table() {
    let mut report = sample();
    report.warnings = vec![
        "tool name 'echo' is offered by more than one server; server 'fx' exposes it as 'fx__echo'"
            .into(),
    ];
    let text = render(&report);
    let expected = "\
SERVER / TOOL  STATE     PROTOCOL             STARTUP  CHAR_BUDGET    TOKEN_BUDGET            TIMEOUT
broken         failed                         -
  reason: restarting (attempt 1): exited
  stderr: line 3
  stderr: line 4
  stderr: line 5
  stderr: line 6
  stderr: line 7
fx             ready     2026-07-28 (modern)  412 ms
  rows                                                 40 (defaults)  -                       60s (built-in)
  fx_echo                                              500 (tool)     -                       0.5ms (server)
  fx_tokens                                            -              300 cl100k_base (tool)  60s (built-in)
  error: mcp_servers.fx.disabled_tools names \"ehco\", which server 'fx' does not offer; did you mean \"echo\"?
  warning: tool \"t\" dropped: `inputSchema` is not a JSON object
old            disabled
warning: tool name 'echo' is offered by more than one server; server 'fx' exposes it as 'fx__echo'

1 of 2 enabled server(s) ready, 3 tool(s); 1 config entry naming tools the server does not offer
";
    assert_eq!(text, expected, "\n{text}");
}

#[test]
fn prompts_resources_and_templates_are_listed_under_their_server() {
    let mut r = sample();
    r.servers[1].errors.clear();
    let offered = Offered {
        prompts: vec!["fx_greet".into()],
        resources: vec!["fixture://fx/doc/0".into(), "shared://doc".into()],
        templates: vec!["fixture://fx/item/{id}".into()],
        errors: vec!["prompts/list failed: boom".into()],
    };
    add_offered(&mut r, HashMap::from([("fx".to_owned(), offered)]));
    let text = render(&r);
    assert!(
        text.contains(
            "  fx_tokens                                            -              300 cl100k_base (tool)  60s (built-in)\n  prompt: fx_greet\n  resource: fixture://fx/doc/0\n  resource: shared://doc\n  template: fixture://fx/item/{id}\n  warning: prompts/list failed: boom\n"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("1 of 2 enabled server(s) ready, 3 tool(s), 1 prompt(s), 2 resource(s), 1 resource template(s)\n"),
        "{text}"
    );
}

#[test]
fn ready_only_when_every_enabled_server_is() {
    let mut r = sample();
    assert!(!r.all_ready());
    r.servers.remove(0);
    assert!(r.all_ready(), "disabled servers do not count");
    assert!(
        !r.passed(),
        "a tool name the server does not offer fails the check"
    );
    r.servers[0].errors.clear();
    assert!(r.passed(), "warnings do not fail it");
    r.servers.clear();
    assert!(r.all_ready());
    assert!(render(&r).contains("(no servers configured)"));
}

#[test]
fn empty_stderr_and_no_tools_are_said() {
    let r = CheckReport {
        servers: vec![
            ServerReport {
                startup: Some(Duration::from_millis(5)),
                ..ServerReport::bare("a", ServerStatus::Failed { reason: "x".into() })
            },
            ServerReport {
                startup: Some(Duration::from_millis(5)),
                ..ServerReport::bare("b", ServerStatus::Ready)
            },
        ],
        warnings: vec![],
        config_errors: vec![],
    };
    let text = render(&r);
    assert!(text.contains("  stderr: (none)\n"), "{text}");
    assert!(text.contains("  (no tools exposed)\n"), "{text}");
    assert!(text.contains("failed            5 ms"), "{text}");
}

#[test]
fn stderr_is_said_once_not_in_the_reason_too() {
    let failed = |reason: &str, stderr_tail: Vec<String>| ServerReport {
        stderr_tail,
        ..ServerReport::bare(
            "a",
            ServerStatus::Failed {
                reason: reason.into(),
            },
        )
    };
    let r = CheckReport {
        servers: vec![
            failed(
                "restarting (attempt 1): server 'a' exited (exit status: 1); last stderr: (no stderr output)",
                vec![],
            ),
            failed("unavailable: gave up: x; last stderr: boom | bang", vec!["boom".into(), "bang".into()]),
        ],
        warnings: vec![],
        config_errors: vec![],
    };
    let text = render(&r);
    assert_eq!(text.matches("stderr").count(), 3, "{text}");
    assert!(text.contains("  reason: restarting (attempt 1): server 'a' exited (exit status: 1)\n  stderr: (none)\n"), "{text}");
    assert!(
        text.contains("  reason: unavailable: gave up: x\n  stderr: boom\n  stderr: bang\n"),
        "{text}"
    );
}

#[test]
fn failure_reasons_name_the_state() {
    assert_eq!(
        failure_reason(&ServerState::Restarting {
            attempt: 2,
            reason: "boom".into()
        })
        .unwrap(),
        "restarting (attempt 2): boom"
    );
    assert_eq!(
        failure_reason(&ServerState::Unavailable {
            reason: "gave up".into()
        })
        .unwrap(),
        "unavailable: gave up"
    );
    assert!(failure_reason(&ServerState::Starting)
        .unwrap()
        .contains("startup_timeout_sec"));
}

/// The check of a config at `file` whose only table is `[transcript] path = "<transcript>"`.
fn transcript_report(file: &std::path::Path, transcript: &str) -> CheckReport {
    let text = format!("[transcript]\npath = \"{transcript}\"\n");
    let config = Config::parse(&text, file, &|_| None).unwrap();
    let mut report = CheckReport {
        servers: vec![],
        warnings: vec![],
        config_errors: vec![],
    };
    check_transcript_dir(&mut report, &config);
    report
}

/// A `[transcript] path` in a directory that does not exist (or is a file) is an error naming
/// the file, line, column and key, and the check fails; it was not reported, and the proxy
/// then recorded nothing.
#[test]
fn a_transcript_path_in_a_missing_directory_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(dir.path().join("plain"), "").unwrap();
    let report_for = |transcript: &str| transcript_report(&file, transcript);
    let missing = report_for("missing/calls.jsonl");
    let want = format!(
        "{}:2:8: transcript.path: the transcript's directory {:?} does not exist, so no \
         transcript can be recorded there; create the directory or change the path",
        file.display(),
        dir.path().join("missing")
    );
    assert_eq!(missing.config_errors, std::slice::from_ref(&want));
    assert!(!missing.passed());
    assert!(
        render(&missing).contains(&format!("\nerror: {want}\n")),
        "{}",
        render(&missing)
    );
    let not_a_dir = report_for("plain/calls.jsonl");
    assert!(
        not_a_dir.config_errors[0].contains("is not a directory"),
        "{:?}",
        not_a_dir.config_errors
    );
    assert!(report_for("calls.jsonl").passed());
}

/// A `[transcript] path` that is empty (it names the config's directory) or an existing
/// directory (written with a trailing `/` or not) is an error naming the file, line, column and
/// key, and the check fails; `check` passed both, and the proxy then recorded nothing.
#[test]
fn an_empty_transcript_path_or_a_directory_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    let report_for = |transcript: &str| transcript_report(&file, transcript);
    let empty = report_for("");
    let want = format!(
        "{}:2:8: transcript.path: the transcript path is empty, which names the config's \
         directory {:?}, not a file, so no transcript can be recorded; give a file's path, \
         such as \"calls.jsonl\", or remove the key",
        file.display(),
        dir.path()
    );
    assert_eq!(empty.config_errors, std::slice::from_ref(&want));
    assert!(!empty.passed());
    assert!(render(&empty).contains(&format!("\nerror: {want}\n")));
    let logs = dir.path().join("logs");
    let absolute = logs.display().to_string();
    for written in ["logs", "logs/", absolute.as_str()] {
        let report = report_for(written);
        let want = format!(
            "{}:2:8: transcript.path: the transcript path {logs:?} is a directory, not a file, \
             so no transcript can be recorded there; give a file's path, such as {:?}",
            file.display(),
            logs.join("calls.jsonl")
        );
        assert_eq!(report.config_errors, [want], "{written}");
        assert!(!report.passed());
    }
    assert!(report_for("logs/calls.jsonl").passed());
    assert!(report_for("new.jsonl").passed());
}

/// What `serve` refuses at start-up is what `check` reports: a symlink, a FIFO, a file or a
/// directory this user cannot write (the last two only when not root, who may write anything).
#[test]
fn a_transcript_serve_would_refuse_is_a_located_error() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    let report_for = |transcript: &str| transcript_report(&file, transcript);
    std::fs::write(dir.path().join("target"), "").unwrap();
    std::os::unix::fs::symlink(dir.path().join("target"), dir.path().join("link")).unwrap();
    let fifo = std::ffi::CString::new(dir.path().join("fifo").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    for (name, why) in [
        ("link", "is a symbolic link"),
        ("fifo", "is not a regular file"),
    ] {
        let report = report_for(name);
        assert!(!report.passed(), "{name}");
        let error = &report.config_errors[0];
        assert!(error.contains(why), "{error}");
        assert!(error.contains(":2:8: transcript.path: "), "{error}");
        assert!(error.contains("would refuse to start"), "{error}");
    }
    assert!(report_for("target").passed());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return;
    }
    std::fs::set_permissions(dir.path().join("target"), PermissionsExt::from_mode(0o400)).unwrap();
    assert!(report_for("target").config_errors[0].contains("cannot be written"));
    std::fs::create_dir(dir.path().join("ro")).unwrap();
    std::fs::set_permissions(dir.path().join("ro"), PermissionsExt::from_mode(0o500)).unwrap();
    assert!(report_for("ro/calls.jsonl").config_errors[0].contains("cannot be written"));
}
