//! `mcp-envelope import FILE` through the binary: each client format, a remote entry, invalid
//! JSON (issue 7).
use crate::common;
use common::*;
use std::path::Path;
use std::process::Output;

fn import(json: &str) -> (Output, tempfile::TempDir) {
    import_named("mcp.json", json)
}

/// Writes `text` to a file called `name` in a temporary folder and imports it.
fn import_named(name: &str, text: &str) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(name);
    std::fs::write(&file, text).unwrap();
    let out = std::process::Command::new(bin())
        .arg("import")
        .arg(&file)
        .output()
        .unwrap();
    (out, dir)
}

/// Imports `json`, checks exit 0, and parses the TOML with the real config parser.
fn imported(json: &str) -> (String, mcp_envelope::config::Config) {
    let (text, config, _) = imported_reporting(json);
    (text, config)
}

/// [`imported`], also giving what the import printed on stderr (its report).
fn imported_reporting(json: &str) -> (String, mcp_envelope::config::Config, String) {
    let (out, _dir) = import(json);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let config =
        mcp_envelope::config::Config::parse(&text, Path::new("/c/x.toml"), &|_| Some("set".into()))
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (text, config, stderr)
}

#[test]
fn claude_desktop_and_cursor() {
    let (_, config) = imported(
        r#"{"mcpServers": {
            "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
            "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}, "disabled": true}
        }}"#,
    );
    let fs = config.server("filesystem").unwrap();
    assert_eq!(fs.command, "npx");
    assert_eq!(
        fs.args,
        ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
    );
    let time = config.server("time").unwrap();
    assert!(!time.enabled);
    assert_eq!(time.env, [("TZ".to_string(), "UTC".to_string())]);
}

#[test]
fn claude_code_mcp_json_with_type_and_env_vars() {
    let (text, config) = imported(
        r#"{"mcpServers": {"gh": {"type": "stdio", "command": "/usr/local/bin/gh-mcp",
            "args": ["--token", "${GITHUB_TOKEN}"], "env": {}}}}"#,
    );
    assert!(text.contains("\"${GITHUB_TOKEN}\""), "{text}");
    assert_eq!(config.server("gh").unwrap().args, ["--token", "set"]);
}

#[test]
fn vscode_servers() {
    let (text, config) = imported(
        r#"{"inputs": [{"type": "promptString", "id": "token", "description": "Token", "password": true}],
            "servers": {"fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"],
              "env": {"TOKEN": "${input:token}"}, "envFile": "${workspaceFolder}/.env", "cwd": "/srv"}}}"#,
    );
    assert!(text.contains("envFile"), "{text}");
    assert!(text.contains("token -> ${token}"), "{text}");
    let fetch = config.server("fetch").unwrap();
    assert_eq!(fetch.cwd.as_deref(), Some(Path::new("/srv")));
    assert_eq!(fetch.env, [("TOKEN".to_string(), "set".to_string())]);
}

#[test]
fn remote_entries_are_converted_without_their_secrets() {
    let (text, config) = imported(
        r#"{"servers": {"api": {"type": "http", "url": "https://example.invalid/mcp",
                                "headers": {"Authorization": "Bearer abc-very-secret"}},
                        "local": {"command": "srv"}}}"#,
    );
    assert_eq!(config.servers.len(), 2);
    assert!(!text.contains("abc-very-secret"), "{text}");
    assert!(
        text.contains("bearer_token_env_var = \"API_TOKEN\""),
        "{text}"
    );
    assert!(
        text.contains("# set API_TOKEN in the proxy's environment"),
        "{text}"
    );
    let api = config.server("api").unwrap().remote.clone().unwrap();
    assert_eq!(api.url, "https://example.invalid/mcp");
}

#[test]
fn invalid_json_and_missing_file_exit_2() {
    let (out, dir) = import("{\"mcpServers\": {");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mcp.json is not valid JSON"), "{err}");
    assert!(err.contains("EOF while parsing"), "{err}");
    assert!(out.stdout.is_empty());
    drop(dir);

    let (out, _dir) = import(r#"{"mcpServers": {"g": {"command": ["x"]}}}"#);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mcpServers.g.command: expected a string"),
        "{err}"
    );

    let out = std::process::Command::new(bin())
        .args(["import", "/nonexistent/mcp.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /nonexistent/mcp.json"));
}

fn import_file(name: &str, text: &str) -> (String, mcp_envelope::config::Config) {
    let (out, _dir) = import_named(name, text);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let config = mcp_envelope::config::Config::parse(&text, Path::new("/c/x.toml"), &|_| None)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    (text, config)
}

#[test]
fn codex_config_toml() {
    let (text, config) = import_file(
        "config.toml",
        "model = \"m\"\n\n# my git server\n[mcp_servers.git]\ncommand = \"uvx\"\nargs = [\"mcp-server-git\"]\nenv_vars = [\"GIT_TOKEN\"]\nstartup_timeout_ms = 20000\n\n[mcp_servers.web]\nurl = \"https://example.invalid/mcp\"\n",
    );
    assert!(
        text.contains("# my git server\n[mcp_servers.git]"),
        "{text}"
    );
    assert!(
        text.contains("[mcp_servers.web]\nurl = \"https://example.invalid/mcp\""),
        "{text}"
    );
    assert_eq!(config.servers.len(), 2);
    assert!(config.server("web").unwrap().remote.is_some());
    assert_eq!(
        config.server("git").unwrap().startup_timeout,
        Some(std::time::Duration::from_secs(20))
    );
}

#[test]
fn codex_numbers_in_args_and_env_become_strings_with_a_warning_naming_the_key() {
    let codex = "[mcp_servers.web]\ncommand = \"srv\"\nargs = [\"--port\", 8080, \"--tls\", true]\nenv = { WORKERS = 4 }\n";
    let (out, _dir) = import_named("config.toml", codex);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let config = mcp_envelope::config::Config::parse(&text, Path::new("/c/x.toml"), &|_| None)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let web = config.server("web").unwrap();
    assert_eq!(web.args, ["--port", "8080", "--tls", "true"]);
    assert_eq!(web.env, [("WORKERS".to_string(), "4".to_string())]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for key in [
        "args[1] (an integer)",
        "args[3] (a boolean)",
        "env.WORKERS (an integer)",
    ] {
        let line = format!("mcp-envelope import: converted mcp_servers.web.{key} to a string");
        assert!(stderr.contains(&line), "{key}:\n{stderr}");
    }
}

#[test]
fn json_numbers_in_args_and_env_become_strings_with_a_report_naming_the_key_not_the_secret() {
    let json = r#"{"mcpServers": {"web": {"command": "srv", "args": ["--port", 8080, "--tls", true],
        "env": {"WORKERS": 4, "API_TOKEN": 918273645}}}}"#;
    let (text, config, stderr) = imported_reporting(json);
    let web = config.server("web").unwrap();
    assert_eq!(web.args, ["--port", "8080", "--tls", "true"]);
    for key in [
        "args[1] (a number)",
        "args[3] (a boolean)",
        "env.WORKERS (a number)",
        "env.API_TOKEN (a number)",
    ] {
        let line = format!("mcp-envelope import: converted mcpServers.web.{key} to a string");
        assert!(stderr.contains(&line), "{key}:\n{stderr}");
    }
    assert!(
        !stderr.contains("918273645") && !text.contains("918273645"),
        "{stderr}\n{text}"
    );
    let (out, _dir) = import(r#"{"mcpServers": {"web": {"command": "srv", "args": [null]}}}"#);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mcpServers.web.args[0]: expected a string, found null"),
        "{stderr}"
    );
}

#[test]
fn claude_json_and_gemini_settings() {
    let (text, config) = import_file(
        ".claude.json",
        r#"{"mcpServers": {"a": {"type": "stdio", "command": "a"}},
            "projects": {"/p": {"mcpServers": {"b": {"type": "stdio", "command": "b", "args": []}}}}}"#,
    );
    assert!(text.contains("project \"/p\""), "{text}");
    assert_eq!(config.servers.len(), 2);
    let (_, config) = import_file(
        "settings.json",
        r#"{"mcpServers": {"g": {"command": "g", "timeout": 5000, "excludeTools": ["x"]}}}"#,
    );
    let g = config.server("g").unwrap();
    assert_eq!(g.tool_timeout, Some(std::time::Duration::from_secs(5)));
    assert!(!g.exposes("x"));
}

#[test]
fn credentials_in_remote_urls_are_not_copied_from_either_format() {
    let json = r#"{"mcpServers": {
        "web": {"url": "https://alice:hunter2@mcp.example.com/mcp?token=tok123&x=1"},
        "gem": {"httpUrl": "https://ghp_secret@gem.example.com/mcp"}}}"#;
    let codex =
        "[mcp_servers.web]\nurl = \"https://alice:hunter2@mcp.example.com/mcp?token=tok123&x=1\"\n";
    for (name, text) in [("mcp.json", json), ("config.toml", codex)] {
        let (out, _dir) = import_named(name, text);
        let toml = ok_stdout(&out);
        for secret in ["hunter2", "tok123", "ghp_secret"] {
            assert!(!toml.contains(secret), "{name}: {secret} copied:\n{toml}");
        }
        assert!(
            toml.contains(
                "https://alice:${WEB_PASSWORD}@mcp.example.com/mcp?token=${WEB_TOKEN}&x=1"
            ),
            "{name}:\n{toml}"
        );
        assert!(
            toml.contains("set WEB_PASSWORD in the proxy's environment"),
            "{toml}"
        );
        // The result is a valid config once the variables are set.
        let parsed = mcp_envelope::config::Config::parse(&toml, Path::new("/c/x.toml"), &|_| {
            Some("v".into())
        });
        assert!(parsed.is_ok(), "{name}: {parsed:?}\n{toml}");
    }
}

/// Secrets written in stdio entries (JSON and Codex) are not copied: each moves to a variable
/// named in a comment and on stderr; the output still parses.
#[test]
fn stdio_secrets_move_to_variables() {
    let json = r#"{"mcpServers": {"pg": {"command": "pg-mcp",
        "args": ["postgres://admin:pwSecret1@db/x", "--token", "argSecret"],
        "env": {"PGPASSWORD": "envSecret", "PGHOST": "db"}}}}"#;
    let toml = "[mcp_servers.pg]\ncommand = \"pg-mcp\"\n\
        args = [\"postgres://admin:pwSecret1@db/x\", \"--token\", \"argSecret\"]\n\
        env = { PGPASSWORD = \"envSecret\", PGHOST = \"db\" }\n";
    for (name, text) in [("mcp.json", json), ("config.toml", toml)] {
        let (out, _dir) = import_named(name, text);
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        for secret in ["pwSecret1", "argSecret", "envSecret"] {
            assert!(
                !stdout.contains(secret) && !stderr.contains(secret),
                "{stdout}{stderr}"
            );
        }
        for var in ["PG_PASSWORD", "PG_TOKEN", "PG_PGPASSWORD"] {
            assert!(
                stderr.contains(&format!("set {var} in the proxy's environment")),
                "{stderr}"
            );
        }
        let env = |k: &str| Some(format!("<{k}>"));
        let config = mcp_envelope::config::Config::parse(&stdout, Path::new("/c/x.toml"), &env)
            .unwrap_or_else(|e| panic!("{e}\n{stdout}"));
        let pg = config.server("pg").unwrap();
        assert_eq!(
            pg.args,
            [
                "postgres://admin:<PG_PASSWORD>@db/x",
                "--token",
                "<PG_TOKEN>"
            ]
        );
        assert!(
            pg.env
                .contains(&("PGPASSWORD".into(), "<PG_PGPASSWORD>".into())),
            "{stdout}"
        );
        assert!(pg.env.contains(&("PGHOST".into(), "db".into())), "{stdout}");
    }
}

/// Secrets the import copied as written: a JSON object passed as one argument, a URL query
/// key written percent-encoded, and secrets holding `${` (which the proxy would have read as
/// a reference). Each moves to a variable; a secret written wholly as references stays.
#[test]
fn json_percent_encoded_and_dollar_brace_secrets_in_args_move_to_variables() {
    let json = r#"{"mcpServers": {"pg": {"command": "pg-mcp", "args": [
        "{\"password\":\"JsonPw1234\",\"apiKey\":\"JsonKey5678\"}",
        "https://h/mcp?api%5Fkey=PctSecret99",
        "--token=Lit${X}Eral42",
        "--token",
        "${PG_TOKEN_VAR}"]}}}"#;
    let (out, _dir) = import(json);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    for secret in ["JsonPw1234", "JsonKey5678", "PctSecret99", "Lit", "Eral42"] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{stdout}{stderr}"
        );
    }
    let env = |k: &str| Some(format!("<{k}>"));
    let config = mcp_envelope::config::Config::parse(&stdout, Path::new("/c/x.toml"), &env)
        .unwrap_or_else(|e| panic!("{e}\n{stdout}"));
    assert_eq!(
        config.server("pg").unwrap().args,
        [
            r#"{"password":"<PG_PASSWORD>","apiKey":"<PG_APIKEY>"}"#,
            "https://h/mcp?api%5Fkey=<PG_API_KEY>",
            "--token=<PG_TOKEN>",
            "--token",
            "<PG_TOKEN_VAR>",
        ]
    );
    assert!(
        stderr.contains("set PG_TOKEN in the proxy's environment to the secret that was written in args[2] (not copied here, with its variables filled in)"),
        "{stderr}"
    );
}
