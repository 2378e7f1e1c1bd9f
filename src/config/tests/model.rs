//! Resolution of settings, the validated form of whole files, the example config.

use super::*;

/// A [`Setting`] literal.
fn setting<T>(value: T, source: Source) -> Setting<T> {
    Setting { value, source }
}

#[test]
fn typos_in_lists_and_tool_tables_are_reported() {
    let cfg = Config::parse(
        "[mcp_servers.git]\ncommand = \"x\"\nenabled_tools = [\"git_log\", \"git_lgo\"]\ndisabled_tools = [\"git_comit\"]\n[mcp_servers.git.tools.git_log]\nchar_budget = 5\n",
        Path::new("/c.toml"),
        &|_| None,
    )
    .unwrap();
    let server = cfg.server("git").unwrap();
    assert_eq!(
        server.unknown_tool_names(&["git_log", "git_commit"]),
        vec![
            ("enabled_tools", "git_lgo"),
            ("disabled_tools", "git_comit")
        ]
    );
    assert_eq!(
        server.unknown_tool_names(&["git_status"]),
        vec![
            ("enabled_tools", "git_log"),
            ("enabled_tools", "git_lgo"),
            ("disabled_tools", "git_comit"),
            ("tools", "git_log")
        ]
    );
}

#[test]
fn typo_messages_name_server_entry_and_the_tool_meant() {
    let cfg = Config::parse(
        "[mcp_servers.git]\ncommand = \"x\"\ntool_prefix = \"g_\"\ndisabled_tools = [\"git_comit\", \"g_git_add\", \"push\"]\n[mcp_servers.git.tools.git_lgo]\nchar_budget = 5\n",
        Path::new("/c.toml"),
        &|_| None,
    )
    .unwrap();
    let server = cfg.server("git").unwrap();
    assert_eq!(
        server.unknown_tool_messages(&["git_log", "git_commit", "git_add"]),
        vec![
            "mcp_servers.git.disabled_tools names \"git_comit\", which server 'git' does not offer; did you mean \"git_commit\"?",
            "mcp_servers.git.disabled_tools names \"g_git_add\", which server 'git' does not offer; did you mean \"git_add\"? (tool names here are the server's own, without tool_prefix \"g_\")",
            "mcp_servers.git.disabled_tools names \"push\", which server 'git' does not offer",
            "[mcp_servers.git.tools.git_lgo] is for \"git_lgo\", which server 'git' does not offer; did you mean \"git_log\"?",
        ]
    );
}
#[test]
fn full_example_parses() {
    let config = parse(FULL).unwrap();
    assert_eq!(config.path, Path::new("/cfg/x.toml"));
    assert_eq!(config.base_dir, Path::new("/cfg"));
    assert_eq!(
        config.defaults,
        Defaults {
            char_budget: Some(2000),
            tool_timeout: Some(Duration::from_secs(60)),
            startup_timeout: Some(Duration::from_secs(20)),
            max_restarts: Some(5),
            max_message_bytes: Some(64 * 1024 * 1024),
            media: Some(MediaMode::Passthrough),
            budget_keys: BudgetKeys::default(),
        }
    );
    assert_eq!(
        config.transcript,
        TranscriptConfig {
            path: Some(PathBuf::from("/cfg/calls.jsonl")),
            redact_keys: ["password", "token", "secret", "api_key", "authorization"]
                .iter()
                .map(|k| k.to_string())
                .collect(),
        }
    );
    let mut tools = BTreeMap::new();
    tools.insert(
        "git_log".to_string(),
        ToolOverride {
            char_budget: Some(800),
            tool_timeout: Some(Duration::from_secs(10)),
            media: Some(MediaMode::Passthrough),
            budget_keys: BudgetKeys::default(),
        },
    );
    assert_eq!(
        config.servers,
        vec![ServerConfig {
            name: "git".into(),
            command: "uvx".into(),
            program: PathBuf::from("uvx"),
            args: vec!["mcp-server-git".into(), "--repository".into(), ".".into()],
            env: vec![("GIT_PAGER".into(), "cat".into())],
            cwd: Some(PathBuf::from("/cfg")),
            enabled: true,
            char_budget: Some(1500),
            tool_timeout: Some(Duration::from_secs(30)),
            startup_timeout: Some(Duration::from_secs(20)),
            max_restarts: Some(5),
            media: Some(MediaMode::Describe),
            budget_keys: BudgetKeys::default(),
            enabled_tools: Some(vec!["git_log".into(), "git_status".into()]),
            disabled_tools: vec!["git_commit".into()],
            tool_prefix: "git_".into(),
            enabled_prompts: None,
            disabled_prompts: vec![],
            tools,
            remote: None,
        }]
    );
    let git = config.server("git").unwrap();
    assert!(git.exposes("git_log"));
    assert!(!git.exposes("git_commit"));
    assert!(!git.exposes("git_diff"));
    assert!(config.server("nope").is_none());
    assert_eq!(config.enabled_servers().count(), 1);
}

#[test]
fn minimal_and_empty_configs() {
    let config = parse("").unwrap();
    assert!(config.servers.is_empty());
    assert_eq!(config.defaults, Defaults::default());
    assert_eq!(config.transcript, TranscriptConfig::default());
    assert_eq!(config.max_message_bytes(), DEFAULT_MAX_MESSAGE_BYTES);
    assert!(parse("[mcp_servers]\n").unwrap().servers.is_empty());

    let config = parse(GIT).unwrap();
    let git = config.server("git").unwrap();
    assert!(git.enabled && git.args.is_empty() && git.env.is_empty() && git.cwd.is_none());
    assert!(git.exposes("anything"));
    assert_eq!(git.tool_prefix, "");
}

#[test]
fn servers_in_file_order_and_enabled_filter() {
    let text = "[mcp_servers.b]\ncommand = \"b\"\n[mcp_servers.a]\ncommand = \"a\"\nenabled = false\n[mcp_servers.c]\ncommand = \"c\"\n";
    let config = parse(text).unwrap();
    let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["b", "a", "c"]);
    let enabled: Vec<_> = config.enabled_servers().map(|s| s.name.as_str()).collect();
    assert_eq!(enabled, ["b", "c"]);
    assert_eq!(config.server("a").unwrap().command, "a");
}

#[test]
fn resolution_from_each_source() {
    let text = r#"
[defaults]
char_budget = 1000
startup_timeout_sec = 7
media = "describe"

[mcp_servers.s]
command = "x"
char_budget = 500
tool_timeout_sec = 2.5
max_restarts = 9

[mcp_servers.s.tools.t]
char_budget = 100

[mcp_servers.bare]
command = "y"
"#;
    let config = parse(text).unwrap();
    let t = config.tool_settings("s", "t");
    assert_eq!(t.char_budget, setting(100, Source::Tool));
    assert_eq!(
        t.tool_timeout,
        setting(Duration::from_millis(2500), Source::Server)
    );
    assert_eq!(t.media, setting(MediaMode::Describe, Source::Defaults));

    let u = config.tool_settings("s", "u");
    assert_eq!(u.char_budget, setting(500, Source::Server));

    let bare = config.tool_settings("bare", "t");
    assert_eq!(bare.char_budget, setting(1000, Source::Defaults));
    assert_eq!(
        bare.tool_timeout,
        setting(DEFAULT_TOOL_TIMEOUT, Source::BuiltIn)
    );

    assert_eq!(
        config.startup_timeout("s"),
        setting(Duration::from_secs(7), Source::Defaults)
    );
    assert_eq!(config.max_restarts("s"), setting(9, Source::Server));
    assert_eq!(
        config.max_restarts("bare"),
        setting(DEFAULT_MAX_RESTARTS, Source::BuiltIn)
    );

    let empty = parse("").unwrap();
    let none = empty.tool_settings("missing", "t");
    assert_eq!(
        none,
        ToolSettings {
            char_budget: setting(DEFAULT_CHAR_BUDGET, Source::BuiltIn),
            tool_timeout: setting(DEFAULT_TOOL_TIMEOUT, Source::BuiltIn),
            media: setting(MediaMode::Passthrough, Source::BuiltIn),
            budget_rules: BudgetRules::default(),
        }
    );
    assert_eq!(
        empty.startup_timeout("missing"),
        setting(DEFAULT_STARTUP_TIMEOUT, Source::BuiltIn)
    );
    let startup = parse("[mcp_servers.s]\ncommand = \"x\"\nstartup_timeout_sec = 3\n")
        .unwrap()
        .startup_timeout("s");
    assert_eq!(startup, setting(Duration::from_secs(3), Source::Server));
    let bytes = parse("[defaults]\nmax_message_bytes = 1024\n").unwrap();
    assert_eq!(bytes.max_message_bytes(), 1024);
}

#[test]
fn source_display_and_serde() {
    let shown: Vec<_> = [
        Source::Tool,
        Source::Server,
        Source::Defaults,
        Source::BuiltIn,
    ]
    .iter()
    .map(|s| (s.to_string(), serde_json::to_string(s).unwrap()))
    .collect();
    assert_eq!(
        shown,
        [
            ("tool".to_string(), "\"tool\"".to_string()),
            ("server".into(), "\"server\"".into()),
            ("defaults".into(), "\"defaults\"".into()),
            ("built-in".into(), "\"built-in\"".into()),
        ]
    );
    assert_eq!(
        serde_json::to_string(&MediaMode::Describe).unwrap(),
        "\"describe\""
    );
}

#[test]
fn transcript_defaults() {
    let config = parse("[transcript]\n").unwrap();
    assert_eq!(config.transcript, TranscriptConfig::default());
    assert_eq!(config.transcript.redact_keys, DEFAULT_REDACT_KEYS);
    let config = parse("[transcript]\nredact_keys = []\n").unwrap();
    assert!(config.transcript.redact_keys.is_empty());
    assert_eq!(config.transcript.path, None);
}

#[test]
fn example_config_parses() {
    let text = include_str!("../../../config/example.toml");
    let config = Config::parse(text, Path::new("/repo/config/example.toml"), &no_env).unwrap();
    let names: Vec<_> = config.enabled_servers().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["everything", "time", "git"]);
    assert_eq!(config.transcript, TranscriptConfig::default());

    let everything = config.server("everything").unwrap();
    assert_eq!(
        everything.program,
        Path::new("/repo/config/../.tools/npm/node_modules/.bin/mcp-server-everything")
    );
    assert_eq!(everything.args, ["stdio"]);
    // get-env would hand the model every variable of the proxy's environment.
    assert!(!everything.exposes("get-env") && everything.exposes("echo"));
    assert_eq!(
        config
            .tool_settings("everything", "get-tiny-image")
            .media
            .value,
        MediaMode::Describe
    );
    assert_eq!(
        config.tool_settings("everything", "echo").char_budget.value,
        500
    );

    let time = config.server("time").unwrap();
    assert_eq!(
        time.program,
        Path::new("/repo/config/../.tools/venv/bin/mcp-server-time")
    );
    assert!(time.exposes("get_current_time") && time.exposes("convert_time"));

    let git = config.server("git").unwrap();
    assert_eq!(
        git.program,
        Path::new("/repo/config/../.tools/venv/bin/mcp-server-git")
    );
    assert_eq!(git.args, ["--repository", "."]);
    assert_eq!(git.cwd.as_deref(), Some(Path::new("/repo/config/..")));
    assert_eq!(git.tool_prefix, "");
    for tool in [
        "git_commit",
        "git_add",
        "git_reset",
        "git_create_branch",
        "git_checkout",
    ] {
        assert!(!git.exposes(tool), "{tool}");
    }
    assert!(git.exposes("git_log") && git.exposes("git_status") && git.exposes("git_diff"));
    let log = config.tool_settings("git", "git_log");
    assert_eq!(log.char_budget, setting(1500, Source::Server));
    // One row per commit (two blank lines end each), so `omitted` counts commits.
    assert_eq!(
        log.budget_rules.text_rows,
        setting(crate::budget::TextRows::Blocks, Source::Tool)
    );
    assert_eq!(
        config.tool_settings("git", "git_status").char_budget,
        setting(1500, Source::Server)
    );
}

/// The servers `call` starts for `exposed` under the config `text`; `None`: every server.
fn started(text: &str, exposed: &str) -> Option<Vec<String>> {
    let cfg = Config::parse(text, Path::new("/c.toml"), &|_| None).unwrap();
    cfg.servers_for_call(exposed)
}

fn names(list: &[&str]) -> Option<Vec<String>> {
    Some(list.iter().map(|s| s.to_string()).collect())
}

#[test]
fn a_tool_name_decides_its_server_only_when_every_allowlist_is_known() {
    let text = |b_tools: &str| {
        format!(
            "[mcp_servers.a]\ncommand = \"x\"\nenabled_tools = [\"echo\", \"rows\"]\ndisabled_tools = [\"rows\"]\n\
             [mcp_servers.b]\ncommand = \"x\"\ntool_prefix = \"b_\"\n{b_tools}\n\
             [mcp_servers.off]\ncommand = \"x\"\nenabled = false\nenabled_tools = [\"gone\"]\n"
        )
    };
    let listed = text("enabled_tools = [\"echo\"]");
    assert_eq!(started(&listed, "echo"), names(&["a"]));
    assert_eq!(started(&listed, "b_echo"), names(&["b"]));
    // No list gives these names (hidden by disabled_tools, a server not enabled, none): no
    // tool can have one, so no server is started (the call answers not_found).
    for name in ["rows", "gone", "nope"] {
        assert_eq!(started(&listed, name), names(&[]), "{name}");
    }
    // b offers whatever it lists: it is started with a's tool (its `echo` would rename a's),
    // and a name no list gives could be b's.
    let unlisted = text("");
    assert_eq!(started(&unlisted, "echo"), names(&["a", "b"]));
    assert_eq!(started(&unlisted, "b_echo"), None);
    assert_eq!(started(&unlisted, "nope"), None);
}

#[test]
fn a_name_two_allowlists_give_is_named_by_the_catalogs_collision_rule() {
    let text = "[mcp_servers.a]\ncommand = \"x\"\nenabled_tools = [\"echo\", \"only_a\"]\n\
         [mcp_servers.b]\ncommand = \"x\"\nenabled_tools = [\"echo\"]\n\
         [mcp_servers.c]\ncommand = \"x\"\nenabled_tools = [\"sum\"]\n";
    // Renamed `<server>__<tool>`: that server alone (b not started is named all the same).
    assert_eq!(started(text, "a__echo"), names(&["a"]));
    assert_eq!(started(text, "b__echo"), names(&["b"]));
    assert_eq!(started(text, "only_a"), names(&["a"]));
    // Exposed under neither plain name, whichever servers are up: not_found, no server.
    assert_eq!(started(text, "echo"), names(&[]));
    assert_eq!(started(text, "c__sum"), names(&[]));
}

/// `c`'s prefix `a__` makes its `echo` `a__echo`, the name `a`'s `echo` gets when it collides;
/// `b` has no list, and when up it offers `echo` too, so `a`'s `echo` is `a__echo` and `c`'s
/// `a__echo__2`. `call a__echo` started `b` and `c` only (the lists alone give `a__echo` to
/// `c`) and answered `unavailable: server 'a' ... not started`: `a` is started too.
#[test]
fn a_name_a_collision_may_give_another_listed_server_starts_it_too() {
    let text = "[mcp_servers.a]\ncommand = \"x\"\nenabled_tools = [\"echo\"]\n\
         [mcp_servers.b]\ncommand = \"x\"\n\
         [mcp_servers.c]\ncommand = \"x\"\ntool_prefix = \"a__\"\nenabled_tools = [\"echo\"]\n\
         [mcp_servers.d]\ncommand = \"x\"\nenabled_tools = [\"sum\"]\n";
    assert_eq!(started(text, "a__echo"), names(&["a", "b", "c"]));
    assert_eq!(started(text, "a__echo__2"), None);
    // d's names cannot be these: it is not started.
    assert_eq!(started(text, "sum"), names(&["b", "d"]));
    // With every list known the lists alone name the tools: `a__echo` is c's, a not started.
    let listed = text.replace("[mcp_servers.b]\ncommand = \"x\"\n", "");
    assert_eq!(started(&listed, "a__echo"), names(&["c"]));
}
