//! Config errors: position, key path and message for each kind of mistake; paths resolved
//! against the config's directory.

use super::*;

#[test]
fn negative_integers_are_spanned_errors() {
    assert_error(
        &format!("{GIT}char_budget = -5\n"),
        3,
        15,
        "mcp_servers.git.char_budget",
        "invalid value: integer `-5`, expected a whole number of at least 1",
    );
    assert_error(
        &format!("{GIT}max_restarts = -1\n"),
        3,
        16,
        "mcp_servers.git.max_restarts",
        "integer `-1`, expected a whole number of at least 0, at most 4294967295",
    );
    assert_error(
        "[defaults]\nmax_message_bytes = -3\n",
        2,
        21,
        "defaults.max_message_bytes",
        "integer `-3`",
    );
    assert_error(
        &format!("{GIT}[mcp_servers.git.tools.t]\nchar_budget = -1\n"),
        4,
        15,
        "mcp_servers.git.tools.t.char_budget",
        "expected a whole number of at least 1",
    );
    // The exact example message from the brief.
    let err = parse(&format!("{GIT}char_budget = -5\n")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "/cfg/x.toml:3:15: mcp_servers.git.char_budget: invalid value: integer `-5`, expected a whole number of at least 1"
    );
}

#[test]
fn unknown_keys_anywhere() {
    assert_error(
        "bogus = 1\n",
        1,
        1,
        "bogus",
        "unknown key `bogus` (known keys: `defaults`,",
    );
    assert_error(
        "[defaults]\n  chars = 1\n",
        2,
        3,
        "defaults.chars",
        "unknown key `chars` (known keys: `char_budget`,",
    );
    assert_error(
        "[transcript]\nfile = \"x\"\n",
        2,
        1,
        "transcript.file",
        "unknown key",
    );
    assert_error(
        &format!("{GIT}bogus = 1\n"),
        3,
        1,
        "mcp_servers.git.bogus",
        "unknown key",
    );
    assert_error(
        &format!("{GIT}[mcp_servers.git.tools.t]\nchar_budgt = 1\n"),
        4,
        1,
        "mcp_servers.git.tools.t.char_budgt",
        "unknown key `char_budgt`; did you mean `char_budget`?",
    );
}

#[test]
fn unknown_keys_name_the_closest_key_instead_of_every_key() {
    let err = parse("[mcp_server.git]\ncommand = \"x\"\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "/cfg/x.toml:1:2: mcp_server: unknown key `mcp_server`; did you mean `mcp_servers`?"
    );
    let err = parse(&format!("{GIT}disabled_tool = [\"a\"]\n")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "/cfg/x.toml:3:1: mcp_servers.git.disabled_tool: unknown key `disabled_tool`; did you mean `disabled_tools`?"
    );
    // Nothing close: the table's keys, so the right one can be picked.
    let err = parse(&format!("{GIT}zzzz = 5\n")).unwrap_err();
    assert!(
        err.message
            .starts_with("unknown key `zzzz` (known keys: `char_budget`, "),
        "{err}"
    );
    assert!(err.message.contains("`command`"), "{err}");
    let err = parse(&format!("{GIT}budget = 5\n")).unwrap_err();
    assert_eq!(
        err.message,
        "unknown key `budget`; did you mean `char_budget` or `token_budget`?"
    );
}

#[test]
fn wrong_types() {
    assert_error(
        "[mcp_servers.git]\ncommand = 3\n",
        2,
        11,
        "mcp_servers.git.command",
        "invalid type: integer, expected a string",
    );
    assert_error(
        &format!("{GIT}args = [\"a\", 2]\n"),
        3,
        14,
        "mcp_servers.git.args[1]",
        "invalid type",
    );
    assert_error(
        &format!("{GIT}enabled = \"yes\"\n"),
        3,
        11,
        "mcp_servers.git.enabled",
        "expected a boolean",
    );
    assert_error(
        "[transcript]\nredact_keys = [1]\n",
        2,
        16,
        "transcript.redact_keys[0]",
        "expected a string",
    );
    assert_error(
        "[defaults]\ntool_timeout_sec = \"60\"\n",
        2,
        20,
        "defaults.tool_timeout_sec",
        "expected a positive number of seconds, at most 1000000000",
    );
    assert_error("mcp_servers = 1\n", 1, 15, "mcp_servers", "invalid type");
    assert_error(
        "[mcp_servers.git]\nargs = []\n",
        1,
        1,
        "mcp_servers.git",
        "missing field `command`",
    );
}

#[test]
fn bad_timeouts() {
    for (value, needle) in [
        ("0", "integer `0`"),
        ("-1", "integer `-1`"),
        ("0.0", "floating point `0.0`"),
        ("-0.5", "floating point `-0.5`"),
        ("nan", "NaN"),
        ("inf", "floating point `inf`"),
        ("1e300", "floating point `1e300`, expected"),
        ("1e-300", "floating point"),
        ("1e19", "floating point `10000000000000000000.0`"),
        ("1000000001", "integer `1000000001`"),
    ] {
        assert_error(
            &format!("{GIT}tool_timeout_sec = {value}\n"),
            3,
            20,
            "mcp_servers.git.tool_timeout_sec",
            needle,
        );
    }
    assert_error(
        "[defaults]\nstartup_timeout_sec = 0\n",
        2,
        23,
        "defaults.startup_timeout_sec",
        "expected a positive number of seconds, at most 1000000000",
    );
    assert_error(
        &format!("{GIT}[mcp_servers.git.tools.t]\ntool_timeout_sec = -2\n"),
        4,
        20,
        "mcp_servers.git.tools.t.tool_timeout_sec",
        "integer `-2`",
    );
    let ok = parse(&format!("{GIT}tool_timeout_sec = 0.25\n")).unwrap();
    assert_eq!(ok.servers[0].tool_timeout, Some(Duration::from_millis(250)));
}

/// `tool_timeout_sec = 1e-10` is positive, yet the error said it expected "a positive number
/// of seconds": a value below the smallest timeout (1 nanosecond) is told that bound, under
/// its file, line and key; 1 nanosecond itself is taken.
#[test]
fn a_timeout_below_one_nanosecond_names_the_bound() {
    let bound = "expected a positive number of seconds of at least 0.000000001 (1 nanosecond";
    for (table, key) in [
        ("[defaults]\n", "defaults"),
        (GIT, "mcp_servers.git"),
        (
            &format!("{GIT}[mcp_servers.git.tools.t]\n") as &str,
            "mcp_servers.git.tools.t",
        ),
    ] {
        let line = table.lines().count() + 1;
        for (value, shown) in [("1e-10", "`0.0000000001`"), ("5e-10", "`0.0000000005`")] {
            assert_error(
                &format!("{table}tool_timeout_sec = {value}\n"),
                line,
                20,
                &format!("{key}.tool_timeout_sec"),
                &format!("invalid value: floating point {shown}, {bound}"),
            );
        }
    }
    assert_error(
        "[defaults]\nstartup_timeout_sec = 1e-12\n",
        2,
        23,
        "defaults.startup_timeout_sec",
        bound,
    );
    let ok = parse(&format!("{GIT}tool_timeout_sec = 1e-9\n")).unwrap();
    assert_eq!(ok.servers[0].tool_timeout, Some(Duration::from_nanos(1)));
}

#[test]
fn zero_max_message_bytes() {
    assert_error(
        "[defaults]\nmax_message_bytes = 0\n",
        2,
        21,
        "defaults.max_message_bytes",
        "integer `0`",
    );
}

#[test]
fn empty_command() {
    assert_error(
        "[mcp_servers.git]\ncommand = \"\"\n",
        2,
        11,
        "mcp_servers.git.command",
        "command is empty",
    );
    assert_error(
        "[mcp_servers.git]\ncommand = \"  \"\n",
        2,
        11,
        "mcp_servers.git.command",
        "empty",
    );
}

/// A value in the wrong place (a token pasted under the wrong key) is not echoed: the
/// error names the key.
#[test]
fn errors_name_the_key_not_the_value() {
    for (text, key) in [
        (
            format!("{GIT}char_budget = \"sk-secret-1\"\n"),
            "mcp_servers.git.char_budget",
        ),
        (
            format!("{GIT}media = \"sk-secret-1\"\n"),
            "mcp_servers.git.media",
        ),
        (
            format!("{GIT}env = {{ T = \"sk-secret-1${{X\" }}\n"),
            "mcp_servers.git.env.T",
        ),
        (
            format!("{GIT}args = [\"--token=sk-secret-1${{\"]\n"),
            "mcp_servers.git.args[0]",
        ),
    ] {
        let err = parse(&text).expect_err("a config error");
        let shown = err.to_string();
        assert_eq!(err.key.as_deref(), Some(key), "{shown}");
        assert!(!shown.contains("sk-secret"), "{shown}");
    }
}

#[test]
fn bad_media() {
    assert_error(
        &format!("{GIT}media = \"inline\"\n"),
        3,
        9,
        "mcp_servers.git.media",
        "unknown variant, expected `passthrough` or `describe`",
    );
    assert_error(
        "[defaults]\nmedia = 1\n",
        2,
        9,
        "defaults.media",
        "wanted string",
    );
}

#[test]
fn bad_server_names() {
    assert_error(
        "[mcp_servers.a__b]\ncommand = \"x\"\n",
        1,
        1,
        "mcp_servers.a__b",
        "contains `__`",
    );
    assert_error(
        "[mcp_servers.\"\"]\ncommand = \"x\"\n",
        1,
        1,
        "mcp_servers.\"\"",
        "server name is empty",
    );
    // A name that is not a bare key is quoted in the key path.
    assert_error(
        "[mcp_servers.\"a b\"]\ncommand = \"x\"\nx = 1\n",
        3,
        1,
        "mcp_servers.\"a b\".x",
        "unknown key",
    );
}

#[test]
fn tool_tables_for_hidden_tools() {
    assert_error(
        &format!("{GIT}disabled_tools = [\"t\"]\n[mcp_servers.git.tools.t]\nchar_budget = 1\n"),
        4,
        1,
        "mcp_servers.git.tools.t",
        "is listed in disabled_tools",
    );
    assert_error(
        &format!("{GIT}enabled_tools = [\"a\"]\n\n[mcp_servers.git.tools.t]\nchar_budget = 1\n"),
        5,
        1,
        "mcp_servers.git.tools.t",
        "is not listed in enabled_tools",
    );
    // Inline tool tables are positioned at their value.
    assert_error(
        &format!("{GIT}disabled_tools = [\"t\"]\ntools = {{ t = {{ media = \"describe\" }} }}\n"),
        4,
        15,
        "mcp_servers.git.tools.t",
        "disabled_tools",
    );
    // Listed in both: the deny list wins.
    assert_error(
        &format!(
            "{GIT}enabled_tools = [\"t\"]\ndisabled_tools = [\"t\"]\n[mcp_servers.git.tools.t]\n"
        ),
        5,
        1,
        "mcp_servers.git.tools.t",
        "disabled_tools",
    );
    let ok = parse(&format!(
        "{GIT}enabled_tools = [\"t\"]\n[mcp_servers.git.tools.t]\n"
    ))
    .unwrap();
    assert_eq!(ok.servers[0].tools["t"], ToolOverride::default());
}

#[test]
fn syntax_error_has_position() {
    let err = parse("[defaults]\nchar_budget = = 3\n").unwrap_err();
    assert_eq!((err.line, err.column), (Some(2), Some(15)), "{err}");
    assert!(!err.message.contains('\n'), "{err}");
    let err = parse("[mcp_servers.git]\ncommand = \"x\"\n[mcp_servers.git]\ncommand = \"y\"\n")
        .unwrap_err();
    assert_eq!(err.line, Some(3), "{err}");
}

#[test]
fn column_counts_characters() {
    // "é" is two bytes but one column.
    assert_error(
        "[mcp_servers.\"é\"]\ncommand = \"x\"\nargs = [\"é\", \"${NOPE}\"]\n",
        3,
        14,
        "mcp_servers.\"é\".args[1]",
        "`NOPE` is not set",
    );
    assert_eq!(line_column("ab\ncdé€f", 9), (2, 4));
    assert_eq!(line_column("ab\ncdé€f", 100), (2, 6));
}

#[test]
fn relative_paths_resolve_against_config_dir() {
    let text = r#"
[transcript]
path = "logs/calls.jsonl"
[mcp_servers.a]
command = "./bin/server"
cwd = "work"
[mcp_servers.b]
command = "../tools/server"
cwd = "."
[mcp_servers.c]
command = "/usr/bin/server"
cwd = "/tmp"
[mcp_servers.d]
command = "server"
"#;
    let config = Config::parse(text, Path::new("/etc/app/conf.toml"), &no_env).unwrap();
    assert_eq!(config.base_dir, Path::new("/etc/app"));
    assert_eq!(
        config.transcript.path,
        Some(PathBuf::from("/etc/app/logs/calls.jsonl"))
    );
    let a = config.server("a").unwrap();
    assert_eq!(a.command, "./bin/server");
    assert_eq!(a.program, Path::new("/etc/app/bin/server"));
    assert_eq!(a.cwd.as_deref(), Some(Path::new("/etc/app/work")));
    let b = config.server("b").unwrap();
    assert_eq!(b.program, Path::new("/etc/app/../tools/server"));
    assert_eq!(b.cwd.as_deref(), Some(Path::new("/etc/app")));
    let c = config.server("c").unwrap();
    assert_eq!(c.program, Path::new("/usr/bin/server"));
    assert_eq!(c.cwd.as_deref(), Some(Path::new("/tmp")));
    let d = config.server("d").unwrap();
    assert_eq!(d.program, Path::new("server"));

    // A relative config path: base_dir is absolute, from the current directory.
    let cwd = std::env::current_dir().unwrap();
    let rel = Config::parse("", Path::new("sub/x.toml"), &no_env).unwrap();
    assert_eq!(rel.path, Path::new("sub/x.toml"));
    assert_eq!(rel.base_dir, cwd.join("sub"));
    let bare = Config::parse("", Path::new("x.toml"), &no_env).unwrap();
    assert_eq!(bare.base_dir, cwd);
}

#[test]
fn error_render_omits_unknown_parts() {
    let mut err = ConfigError {
        path: "a.toml".into(),
        line: Some(2),
        column: Some(3),
        key: Some("k".into()),
        message: "m".into(),
    };
    assert_eq!(err.to_string(), "a.toml:2:3: k: m");
    err.key = None;
    assert_eq!(err.to_string(), "a.toml:2:3: m");
    err.line = None;
    err.column = None;
    assert_eq!(err.to_string(), "a.toml: m");
}

#[test]
fn env_and_header_values_of_the_wrong_type_are_not_shown() {
    for (table, value, shown_as) in [
        ("env", "12345", "12345"),
        ("env", "12.5", "12.5"),
        ("env", "true", "true"),
        ("env", "1979-05-27", "1979"),
        ("http_headers", "4242", "4242"),
    ] {
        let text = format!("[mcp_servers.git]\nurl = \"https://x.invalid/mcp\"\n{table} = {{ SECRET = {value} }}\n");
        let text = if table == "env" {
            format!("{GIT}env = {{ SECRET = {value} }}\n")
        } else {
            text
        };
        let err = parse(&text).expect_err(&text).to_string();
        assert!(err.contains(&format!("{table}.SECRET")), "{err}");
        assert!(err.contains("invalid type"), "{err}");
        assert!(!err.contains(shown_as), "{table} value shown: {err}");
    }
    // Elsewhere numbers stay in the message: they help and are no secret.
    let err = parse(&format!("{GIT}char_budget = -5\n"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("-5"), "{err}");
}

/// What each numeric key expects: whole numbers, or seconds (which may have a fraction).
const WHOLE: &str = "expected a whole number of at least";
const SECONDS: &str = "expected a positive number of seconds";

/// Every numeric key: `(the table it is in, the key, its path, what it expects)`.
const NUMERIC_KEYS: [(&str, &str, &str, &str); 10] = [
    ("[defaults]\n", "char_budget", "defaults.char_budget", WHOLE),
    (
        "[defaults]\n",
        "token_budget",
        "defaults.token_budget",
        WHOLE,
    ),
    (
        "[defaults]\n",
        "max_restarts",
        "defaults.max_restarts",
        WHOLE,
    ),
    (
        "[defaults]\n",
        "max_message_bytes",
        "defaults.max_message_bytes",
        WHOLE,
    ),
    (
        "[defaults]\n",
        "tool_timeout_sec",
        "defaults.tool_timeout_sec",
        SECONDS,
    ),
    (
        "[defaults]\n",
        "startup_timeout_sec",
        "defaults.startup_timeout_sec",
        SECONDS,
    ),
    (GIT, "max_restarts", "mcp_servers.git.max_restarts", WHOLE),
    (
        GIT,
        "startup_timeout_ms",
        "mcp_servers.git.startup_timeout_ms",
        WHOLE,
    ),
    ("[paging]\n", "max_bytes", "paging.max_bytes", WHOLE),
    ("[paging]\n", "ttl_sec", "paging.ttl_sec", WHOLE),
];

/// Every numeric key says what it expects in words ("a whole number of at least ..."), never
/// a Rust type; a number TOML cannot hold (beyond 64 bits, or a float beyond f64) is reported
/// at its position under its key, and the number is not echoed.
#[test]
fn every_numeric_key_names_itself_and_what_it_expects() {
    let values = [
        "99999999999999999999",
        "-99999999999999999999",
        "1.5",
        "\"x\"",
    ];
    for (table, name, key, expected) in NUMERIC_KEYS {
        let line = table.lines().count() + 1;
        let column = name.chars().count() + 4;
        for value in values {
            if value.contains('.') && expected == SECONDS {
                continue; // a fraction of a second is a valid timeout
            }
            let text = format!("{table}{name} = {value}\n");
            let err = parse(&text).expect_err(&text);
            assert_eq!(
                (err.line, err.column, err.key.as_deref()),
                (Some(line), Some(column), Some(key)),
                "{err}"
            );
            assert!(err.message.contains(expected), "{err}");
            let rust_type = err.message.contains(" u32") || err.message.contains("usize");
            assert!(!rust_type, "{err}");
            let echoed = err.message.contains("9999999999");
            assert!(!echoed, "the number is not echoed: {err}");
        }
    }
}

/// A number TOML cannot hold under a secret's key is named by its key, never shown.
#[test]
fn an_unholdable_number_under_a_secret_key_is_not_shown() {
    let err = parse(&format!(
        "{GIT}env = {{ TOKEN = 12345678901234567890123 }}\n"
    ))
    .unwrap_err();
    assert_eq!(
        err.key.as_deref(),
        Some("mcp_servers.git.env.TOKEN"),
        "{err}"
    );
    assert!(!err.to_string().contains("123456789"), "{err}");
}

#[test]
fn a_tool_prefix_holds_only_tool_name_characters() {
    let table =
        |prefix: &str| format!("[mcp_servers.a]\ncommand = \"x\"\ntool_prefix = \"{prefix}\"\n");
    for ok in ["", "git_", "a.b-c_9"] {
        assert!(parse(&table(ok)).is_ok(), "{ok:?}");
    }
    let rule = "character 3 is not allowed in a tool name: use only ASCII letters, digits";
    assert_error(
        &table("my tools: "),
        3,
        15,
        "mcp_servers.a.tool_prefix",
        rule,
    );
    assert_error(
        &table("péché_"),
        3,
        15,
        "mcp_servers.a.tool_prefix",
        "character 2 is",
    );
    let long = "p".repeat(65);
    let too_long = "longer than 64 characters (a tool name has at most 128)";
    assert_error(&table(&long), 3, 15, "mcp_servers.a.tool_prefix", too_long);
}
