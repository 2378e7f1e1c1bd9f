//! Unit tests of the JSON import (`import.rs`).
use super::*;

#[test]
fn odd_server_names_stay_valid_toml_keys() {
    for name in ["new\nline", "quote\"d", "sp ace", "é"] {
        let key = toml_key(name);
        let doc = format!("[mcp_servers.{key}]\ncommand = \"x\"\n");
        let parsed: toml::Table = toml::from_str(&doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
        assert!(
            parsed["mcp_servers"].as_table().unwrap().contains_key(name),
            "{doc}"
        );
    }
}

#[test]
fn jsonc_comments_and_trailing_commas_are_removed() {
    let text = "{\n  // servers\n  \"servers\": { /* one */ \"a\": {\"command\": \"x//y\", \"args\": [\"/*k*/\", \"q\\\"//\",],},\n  },\n}\n";
    let plain = strip_jsonc(text);
    let v: Value = serde_json::from_str(&plain).unwrap();
    assert_eq!(v["servers"]["a"]["command"], "x//y");
    assert_eq!(
        v["servers"]["a"]["args"],
        serde_json::json!(["/*k*/", "q\"//"])
    );
    assert_eq!(plain.lines().count(), text.lines().count());
    let plain_json = "{\"a\": [1, 2]}";
    assert_eq!(strip_jsonc(plain_json), plain_json);
}
use crate::config::Config;
use serde_json::json;
use std::path::Path;

/// Converts and parses with an environment that defines every variable.
fn convert(doc: Value) -> (String, Config) {
    let text = import_client_config(&doc, "test.json").unwrap();
    let config = Config::parse(&text, Path::new("/cfg/x.toml"), &|_| Some("v".into()))
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    (text, config)
}

#[test]
fn claude_desktop() {
    let (text, config) = convert(json!({"mcpServers": {
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]},
        "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"GIT_PAGER": "cat", "N": 3}}
    }}));
    assert!(
        text.contains("[mcp_servers.filesystem]\ncommand = \"npx\"\n"),
        "{text}"
    );
    let fs = config.server("filesystem").unwrap();
    assert_eq!(fs.args[2], "/Users/me/Desktop");
    assert!(fs.enabled);
    let git = config.server("git").unwrap();
    assert_eq!(
        git.env,
        [("GIT_PAGER".into(), "cat".into()), ("N".into(), "3".into())]
    );
}

#[test]
fn cursor_and_claude_code_with_type_disabled_and_env_vars() {
    let (text, config) = convert(json!({"mcpServers": {
        "gh": {"type": "stdio", "command": "/opt/gh-mcp", "args": ["--token=${env:GITHUB_TOKEN}"],
               "env": {"HOME_DIR": "${userHome}"}, "disabled": true, "autoApprove": ["x"]},
        "weird name": {"command": "x\"y", "cwd": "/srv/a b"}
    }}));
    let gh = config.server("gh").unwrap();
    assert!(!gh.enabled);
    assert_eq!(gh.args, ["--token=v"]);
    assert!(text.contains("--token=${GITHUB_TOKEN}"), "{text}");
    assert!(text.contains("${HOME}"), "{text}");
    assert!(text.contains("# ignored keys: autoApprove"), "{text}");
    assert!(text.contains("variables in the proxy's environment: GITHUB_TOKEN, HOME"));
    let w = config.server("weird name").unwrap();
    assert_eq!(w.command, "x\"y");
    assert_eq!(w.cwd.as_deref(), Some(Path::new("/srv/a b")));
}

#[test]
fn vscode_servers_inputs_and_env_file() {
    let (text, config) = convert(json!({
        "inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": true}],
        "servers": {
            "fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"],
                      "env": {"KEY": "${input:api-key}"}, "envFile": "${workspaceFolder}/.env"}
        }
    }));
    assert!(text.contains("api-key -> ${API_KEY}: API key"), "{text}");
    assert!(
        text.contains("`envFile` \"${workspaceFolder}/.env\" is not read"),
        "{text}"
    );
    assert!(text.contains("KEY = \"${API_KEY}\""), "{text}");
    assert_eq!(config.server("fetch").unwrap().args, ["mcp-server-fetch"]);
}

#[test]
fn remote_entries_become_remote_tables_with_secrets_moved_out() {
    let (text, config) = convert(json!({"mcpServers": {
        "local": {"command": "srv"},
        "figma": {"url": "https://mcp.figma.invalid/mcp", "headers": {
            "Authorization": "Bearer lit-s3cret", "X-Team": "t-1", "X-Api-Key": "k3y-v4lue"}},
        "gh": {"type": "http", "url": "https://api.example.invalid/mcp/", "headers": {
            "Authorization": "Bearer ${env:GITHUB_PAT}", "X-Key": "${input:gh-key}"}},
        "sse": {"type": "sse", "url": "https://example.invalid/sse?api_key=q-s3cret"},
        "bare": {"type": "http"}
    }}));
    assert!(
        !text.contains("s3cret") && !text.contains("k3y-v4lue"),
        "{text}"
    );
    assert!(text.contains("set FIGMA_TOKEN in the proxy's environment to the bearer token that was written in headers.Authorization"), "{text}");
    assert!(
        text.contains("set FIGMA_X_API_KEY in the proxy's environment"),
        "{text}"
    );
    assert!(
        text.contains("\"bare\" is a remote server without a `url`"),
        "{text}"
    );
    let figma = config.server("figma").unwrap().remote.clone().unwrap();
    assert_eq!(figma.url, "https://mcp.figma.invalid/mcp");
    assert_eq!(figma.bearer_token_env_var.as_deref(), Some("FIGMA_TOKEN"));
    assert_eq!(figma.http_headers, [("X-Team".into(), "t-1".into())]);
    assert_eq!(
        figma.env_http_headers,
        [("X-Api-Key".into(), "FIGMA_X_API_KEY".into())]
    );
    let gh = config.server("gh").unwrap().remote.clone().unwrap();
    assert_eq!(gh.bearer_token_env_var.as_deref(), Some("GITHUB_PAT"));
    assert_eq!(gh.env_http_headers, [("X-Key".into(), "GH_KEY".into())]);
    assert!(
        text.contains("needs these variables in the proxy's environment: GH_KEY, GITHUB_PAT"),
        "{text}"
    );
    // The test environment gives every variable the value "v".
    let sse = config.server("sse").unwrap().remote.clone().unwrap();
    assert_eq!(sse.url, "https://example.invalid/sse?api_key=v");
    assert!(
        text.contains("url = \"https://example.invalid/sse?api_key=${SSE_API_KEY}\""),
        "{text}"
    );
    assert!(config.server("local").unwrap().remote.is_none());
}

#[test]
fn claude_json_user_and_project_scopes() {
    let (text, config) = convert(json!({
        "numStartups": 3,
        "mcpServers": {"time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "env": {}}},
        "projects": {
            "/home/me/app": {"allowedTools": [], "mcpServers": {
                "git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git"]},
                "time": {"command": "other-time"}
            }},
            "/home/me/empty": {"mcpServers": {}}
        }
    }));
    assert!(
        text.contains("# Claude Code local-scope servers of project \"/home/me/app\":"),
        "{text}"
    );
    assert!(!text.contains("/home/me/empty"), "{text}");
    let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["time", "git", "time_2"]);
    assert_eq!(config.server("time_2").unwrap().command, "other-time");
}

#[test]
fn gemini_keys_are_mapped() {
    let (text, config) = convert(json!({"theme": "x", "mcpServers": {
        "py": {"command": "python", "args": ["srv.py"], "cwd": "/srv", "timeout": 30000,
               "trust": true, "includeTools": ["a", "b"], "excludeTools": ["b"], "description": "d"},
        "slow": {"command": "s", "timeout": 1500},
        "remote": {"httpUrl": "https://example.invalid/mcp", "headers": {"A": "b"}}
    }}));
    let py = config.server("py").unwrap();
    assert_eq!(py.tool_timeout, Some(std::time::Duration::from_secs(30)));
    assert!(py.exposes("a") && !py.exposes("b") && !py.exposes("c"));
    assert!(text.contains("`trust`"), "{text}");
    assert!(text.contains("ignored keys: description"), "{text}");
    assert_eq!(
        config.server("slow").unwrap().tool_timeout,
        Some(std::time::Duration::from_millis(1500))
    );
    let remote = config.server("remote").unwrap().remote.clone().unwrap();
    assert_eq!(remote.url, "https://example.invalid/mcp");
    assert_eq!(remote.http_headers, [("A".into(), "b".into())]);
    let err = import_client_config(
        &json!({"mcpServers": {"x": {"command": "x", "timeout": "soon"}}}),
        "f",
    )
    .unwrap_err();
    assert!(err.0.contains("mcpServers.x.timeout"), "{err}");
}

#[test]
fn names_with_double_underscore_are_renamed() {
    let (text, config) =
        convert(json!({"mcpServers": {"a__b": {"command": "x"}, "a_b": {"command": "y"}}}));
    assert!(text.contains("renamed from \"a__b\""), "{text}");
    let names: Vec<_> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a_b", "a_b_2"]);
}

#[test]
fn entry_without_command_is_noted() {
    let (text, config) = convert(json!({"mcpServers": {"x": {"args": []}}}));
    assert!(config.servers.is_empty());
    assert!(text.contains("\"x\" has no `command`"), "{text}");
}

#[test]
fn errors_name_the_key() {
    let err = |doc: Value| import_client_config(&doc, "f").unwrap_err().0;
    assert!(err(json!([])).contains("not an object"));
    assert!(err(json!({"other": {}})).contains("no `mcpServers`"));
    assert_eq!(
        err(json!({"mcpServers": []})),
        "mcpServers: expected an object of servers, found an array"
    );
    assert_eq!(
        err(json!({"mcpServers": {"g": {"command": "x", "args": ["a", null]}}})),
        "mcpServers.g.args[1]: expected a string, found null"
    );
    assert_eq!(
        err(json!({"mcpServers": {"g": {"command": "x", "args": [["a"]]}}})),
        "mcpServers.g.args[0]: expected a string, found an array"
    );
    assert_eq!(
        err(json!({"mcpServers": {"g": {"command": "x", "env": {"P": null}}}})),
        "mcpServers.g.env.P: expected a string, found null"
    );
    assert_eq!(
        err(json!({"mcpServers": {"r": {"url": "https://x.invalid", "headers": {"H": {}}}}})),
        "mcpServers.r.headers.H: expected a string, found an object"
    );
    assert_eq!(
        err(json!({"servers": {"g": {"command": 1}}})),
        "servers.g.command: expected a string, found a number"
    );
    assert!(
        err(json!({"servers": {"g": {"command": "x", "env": {"A": []}}}}))
            .contains("servers.g.env.A")
    );
}

/// Numbers and booleans in `args`, `env` and `headers` are written as strings with a note
/// naming the server and key (they failed in `args` and `headers`, and were converted without a
/// word in `env`); the note never carries the value, and a secret still moves to a variable.
#[test]
fn numbers_and_booleans_become_strings_with_a_note_naming_the_key() {
    let doc = json!({"mcpServers": {
        "web": {"command": "srv", "args": ["--port", 8080, "--tls", true, "--token", 5550123],
                "env": {"WORKERS": 4, "DEBUG": false, "API_TOKEN": 918273645}},
        "api": {"url": "https://api.invalid/mcp", "headers": {"X-Version": 2, "X-Api-Key": 7654321}}
    }});
    let (text, config) = convert(doc.clone());
    let web = config.server("web").unwrap();
    assert_eq!(
        web.args,
        ["--port", "8080", "--tls", "true", "--token", "v"],
        "{text}"
    );
    let env: Vec<(&str, &str)> = web
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        env,
        [("API_TOKEN", "v"), ("DEBUG", "false"), ("WORKERS", "4")],
        "{text}"
    );
    let api = config.server("api").unwrap().remote.clone().unwrap();
    assert_eq!(api.http_headers, [("X-Version".into(), "2".into())]);
    for (key, what, why) in [
        ("web.args[1]", "a number", "a process argument"),
        ("web.args[3]", "a boolean", "a process argument"),
        ("web.args[5]", "a number", "a process argument"),
        ("web.env.WORKERS", "a number", "an environment value"),
        ("web.env.DEBUG", "a boolean", "an environment value"),
        ("web.env.API_TOKEN", "a number", "an environment value"),
        ("api.headers.X-Version", "a number", "an HTTP header value"),
        ("api.headers.X-Api-Key", "a number", "an HTTP header value"),
    ] {
        let note =
            format!("# converted mcpServers.{key} ({what}) to a string: {why} is a string\n");
        assert!(text.contains(&note), "{note}\n{text}");
    }
    for secret in ["5550123", "918273645", "7654321"] {
        assert!(!text.contains(secret), "{secret}:\n{text}");
    }
    // `install` keeps a stdio entry's secrets in the file, but not in its notes.
    let installed = convert_servers(&doc).unwrap();
    assert!(
        installed.contains("API_TOKEN = \"918273645\""),
        "{installed}"
    );
    let comments: String = installed.lines().filter(|l| l.starts_with('#')).collect();
    assert!(
        comments.contains("web.env.API_TOKEN (a number)"),
        "{installed}"
    );
    assert!(
        !comments.contains("918273645") && !comments.contains("5550123"),
        "{comments}"
    );
}

#[test]
fn var_conversion() {
    let mut vars = BTreeSet::new();
    assert_eq!(convert_vars("a${HOME}b", &mut vars), "a${HOME}b");
    assert_eq!(convert_vars("${env:X_Y}", &mut vars), "${X_Y}");
    assert_eq!(convert_vars("${input:my.key}", &mut vars), "${MY_KEY}");
    assert_eq!(
        convert_vars("${workspaceFolder}/x", &mut vars),
        "${workspaceFolder}/x"
    );
    assert_eq!(convert_vars("$HOME ${", &mut vars), "$HOME ${");
    assert_eq!(
        convert_vars("--key=${API_KEY:-default}", &mut vars),
        "--key=${API_KEY}"
    );
    assert_eq!(sanitize_var("1abc"), "_1ABC");
    assert_eq!(
        vars.into_iter().collect::<Vec<_>>(),
        ["API_KEY", "HOME", "MY_KEY", "X_Y", "workspaceFolder"]
    );
}

/// A Codex file with a syntax error is refused with the line and column, without quoting the
/// line (the parser's own message shows it, and it may hold a token).
#[test]
fn a_toml_syntax_error_names_the_place_without_the_line() {
    let text = "[mcp_servers.a]\ncommand = \"x\"\nbearer_token = \"ghp_SECRETsecret123456789\n";
    let err = codex::import_codex_config(text, "c.toml").unwrap_err().0;
    assert_eq!(
        err,
        "not valid TOML: line 3, column 42: invalid basic string"
    );
}
