//! Unit tests of install / uninstall planning: every client, idempotence, reversal.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::*;
use crate::config::Config;

fn launcher() -> Launcher {
    Launcher {
        program: "/opt/bin/mcp-envelope".into(),
        config: "/home/u/.config/mcp-envelope/config.toml".into(),
    }
}

fn input<'a>(
    client: Client,
    client_text: Option<&'a str>,
    envelope_text: Option<&'a str>,
    launcher: &'a Launcher,
    previous: Option<&'a Record>,
) -> InstallInput<'a> {
    InstallInput {
        client,
        project: None,
        client_path: PathBuf::from("/home/u/client.json"),
        client_text,
        envelope_text,
        launcher,
        previous,
    }
}

/// Uninstall with no other install using the proxy's servers.
fn undo(
    record: &Record,
    now: Option<&str>,
    backup: Option<&str>,
    envelope: Option<&str>,
) -> UninstallPlan {
    plan_uninstall(record, now, backup, envelope, &BTreeSet::new()).unwrap()
}

fn parse_config(text: &str) -> Config {
    Config::parse(text, Path::new("/c/x.toml"), &|_| Some("v".into()))
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Installs, installs again (no change), uninstalls: the original bytes come back and the
/// proxy's config created by install is deleted. Returns the plan of the first install.
fn round_trip(client: Client, original: &str) -> InstallPlan {
    let l = launcher();
    let plan = plan_install(&input(client, Some(original), None, &l, None)).unwrap();
    let again = plan_install(&input(
        client,
        Some(&plan.client_after),
        Some(&plan.envelope_after),
        &l,
        Some(&plan.record),
    ))
    .unwrap();
    assert_eq!(
        again.client_after, plan.client_after,
        "install twice = once"
    );
    assert_eq!(again.envelope_after, plan.envelope_after);
    assert!(again.moved.is_empty() && again.added.is_empty());
    let un = undo(
        &plan.record,
        Some(&plan.client_after),
        Some(original),
        Some(&plan.envelope_after),
    );
    assert!(un.exact);
    assert_eq!(un.client_after.as_deref(), Some(original));
    assert_eq!(un.envelope_after, None, "{:?}", un.envelope_after);
    plan
}

/// Claude Code's install into `project` after the user-scope install `user`.
fn in_project<'a>(user: &'a InstallPlan, l: &'a Launcher, project: &'a str) -> InstallInput<'a> {
    let mut input = input(
        Client::ClaudeCode,
        Some(&user.client_after),
        Some(&user.envelope_after),
        l,
        None,
    );
    input.project = Some(project);
    input
}

const CLAUDE_DESKTOP: &str = "{\n  \"globalShortcut\": \"Ctrl+Space\",\n  \"mcpServers\": {\n    \"filesystem\": {\n      \"command\": \"npx\",\n      \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/home/u\"]\n    },\n    \"remote\": {\n      \"url\": \"https://example.invalid/mcp\"\n    },\n    \"git\": {\n      \"command\": \"uvx\",\n      \"args\": [\"mcp-server-git\"],\n      \"env\": {\"GIT_PAGER\": \"cat\"}\n    }\n  },\n  \"zzz\": [1, 2]\n}\n";

#[test]
fn claude_desktop_moves_stdio_servers_and_keeps_the_rest() {
    let plan = round_trip(Client::ClaudeDesktop, CLAUDE_DESKTOP);
    assert_eq!(plan.moved, ["filesystem", "git"]);
    assert_eq!(
        plan.left,
        ["remote: a remote (url) server stays in the client; `mcp-envelope import` converts it"]
    );
    let doc: Value = serde_json::from_str(&plan.client_after).unwrap();
    let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["globalShortcut", "mcpServers", "zzz"],
        "key order kept"
    );
    let servers: Vec<&String> = doc["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(servers, ["remote", "mcp-envelope"]);
    assert_eq!(
        doc["mcpServers"]["mcp-envelope"],
        json!({"command": "/opt/bin/mcp-envelope", "args": ["--config", "/home/u/.config/mcp-envelope/config.toml"]})
    );
    assert!(plan.client_after.ends_with("}\n") && plan.client_after.contains("\n  \"zzz\""));
    let config = parse_config(&plan.envelope_after);
    assert_eq!(
        config.server("git").unwrap().env,
        [("GIT_PAGER".into(), "cat".into())]
    );
    assert_eq!(config.server("filesystem").unwrap().args[2], "/home/u");
}

#[test]
fn cursor_one_line_file_and_vscode_tabs_keep_their_style() {
    let cursor = r#"{"mcpServers":{"time":{"command":"uvx","args":["mcp-server-time"]}}}"#;
    let plan = round_trip(Client::Cursor, cursor);
    assert!(!plan.client_after.contains('\n'), "{}", plan.client_after);
    let vscode = "{\n\t\"inputs\": [{\"type\": \"promptString\", \"id\": \"key\"}],\n\t\"servers\": {\n\t\t\"fetch\": {\"type\": \"stdio\", \"command\": \"uvx\", \"args\": [\"mcp-server-fetch\"], \"env\": {\"KEY\": \"${input:key}\"}}\n\t}\n}";
    let plan = round_trip(Client::Vscode, vscode);
    assert!(
        plan.client_after
            .contains("\n\t\"servers\": {\n\t\t\"mcp-envelope\": {\n\t\t\t\"type\": \"stdio\""),
        "{}",
        plan.client_after
    );
    assert!(!plan.client_after.ends_with('\n'));
    assert!(
        plan.envelope_after.contains("KEY = \"${key}\""),
        "{}",
        plan.envelope_after
    );
    assert!(
        plan.envelope_after.contains("inputs"),
        "{}",
        plan.envelope_after
    );
}

#[test]
fn gemini_entry_takes_timeout_and_trust() {
    let gemini = r#"{
  "theme": "Default",
  "mcpServers": {
    "a": {"command": "a", "timeout": 30000, "trust": true, "excludeTools": ["x"]},
    "b": {"command": "b", "timeout": 90000, "trust": true},
    "h": {"httpUrl": "https://example.invalid/mcp"}
  }
}"#;
    let plan = round_trip(Client::Gemini, gemini);
    let doc: Value = serde_json::from_str(&plan.client_after).unwrap();
    let entry = &doc["mcpServers"]["mcp-envelope"];
    assert_eq!(entry["timeout"], 90000);
    assert_eq!(entry["trust"], true);
    assert!(doc["mcpServers"]["h"].is_object());
    let config = parse_config(&plan.envelope_after);
    assert!(!config.server("a").unwrap().exposes("x"));
}

#[test]
fn claude_code_user_scope_and_a_project() {
    let text = r#"{
  "numStartups": 2,
  "mcpServers": {"time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "env": {}}},
  "projects": {"/src/app": {"allowedTools": [], "mcpServers": {"git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git"], "env": {}}}}}
}"#;
    let l = launcher();
    let user = plan_install(&input(Client::ClaudeCode, Some(text), None, &l, None)).unwrap();
    assert_eq!(user.moved, ["time"]);
    let mut project = in_project(&user, &l, "/src/app");
    let proj = plan_install(&project).unwrap();
    assert_eq!(proj.moved, ["git"]);
    let doc: Value = serde_json::from_str(&proj.client_after).unwrap();
    assert_eq!(
        doc["projects"]["/src/app"]["mcpServers"]["mcp-envelope"]["type"],
        "stdio"
    );
    assert_eq!(
        doc["mcpServers"]["mcp-envelope"]["command"],
        "/opt/bin/mcp-envelope"
    );
    assert_eq!(parse_config(&proj.envelope_after).servers.len(), 2);
    // A project that Claude Code does not know is an error, not a new project.
    project.project = Some("/elsewhere");
    let err = plan_install(&project).unwrap_err();
    assert!(err.0.contains("no project \"/elsewhere\""), "{err}");
}

/// Two installs into `~/.claude.json` (user scope, then a project), uninstalled in either
/// order: the original bytes come back, the install order by the first uninstall handing its
/// backup to the later install.
#[test]
fn two_installs_into_one_file_come_back_byte_for_byte_in_either_order() {
    let text = "{\n  \"mcpServers\": {\"time\": {\"command\": \"uvx\", \"args\": [\"mcp-server-time\"]}},\n  \"projects\": {\"/src/app\": {\"mcpServers\": {\"git\": {\"command\": \"uvx\"}}}}\n}\n";
    let l = launcher();
    let user = plan_install(&input(Client::ClaudeCode, Some(text), None, &l, None)).unwrap();
    let proj = plan_install(&in_project(&user, &l, "/src/app")).unwrap();
    let both = proj.client_after.as_str();
    // Reverse order: the project's backup is the file after the user install.
    let first = undo(&proj.record, Some(both), Some(&user.client_after), None);
    assert!(first.exact);
    let last = undo(
        &user.record,
        first.client_after.as_deref(),
        Some(text),
        None,
    );
    assert_eq!(last.client_after.as_deref(), Some(text));
    // Install order: the user install's uninstall is not exact, and hands its backup over.
    let first = undo(&user.record, Some(both), Some(text), None);
    assert!(!first.exact);
    let handed = handed_over_backup(&user.record, Some(text), &user.client_after);
    assert_eq!(handed.as_deref(), Some(text));
    let last = undo(
        &proj.record,
        first.client_after.as_deref(),
        handed.as_deref(),
        None,
    );
    assert!(last.exact);
    assert_eq!(last.client_after.as_deref(), Some(text), "byte for byte");
    // Nothing to hand to an install made before (its backup lacks the user install's entry).
    assert_eq!(
        handed_over_backup(&proj.record, Some(&user.client_after), text),
        None
    );
}

#[test]
fn claude_code_keeps_the_rest_of_its_file_byte_for_byte() {
    let projects = r#"{"/src/app":{"allowedTools":[],"history":[{"display":"fix it","pastedContents":{}}],"mcpServers":{}},"/tmp":{"allowedTools":[]}}"#;
    let head = "{\n  \"numStartups\": 7,\n  \"projects\": ";
    let tail = ",\n  \"userID\": \"abc\"\n}\n";
    let servers = "  \"mcpServers\": {\n    \"time\": {\n      \"type\": \"stdio\",\n      \"command\": \"uvx\",\n      \"args\": [\"mcp-server-time\"],\n      \"env\": {}\n    }\n  }";
    let text = format!("{head}{projects},\n{servers}{tail}");
    let l = launcher();
    let user = plan_install(&input(Client::ClaudeCode, Some(&text), None, &l, None)).unwrap();
    let entry = "  \"mcpServers\": {\n    \"mcp-envelope\": {\n      \"type\": \"stdio\",\n      \"command\": \"/opt/bin/mcp-envelope\",\n      \"args\": [\n        \"--config\",\n        \"/home/u/.config/mcp-envelope/config.toml\"\n      ]\n    }\n  }";
    assert_eq!(
        user.client_after,
        format!("{head}{projects},\n{entry}{tail}")
    );
    // A project's servers: only its `mcpServers` changes, in the compact layout around it.
    let project = in_project(&user, &l, "/src/app");
    let proj = plan_install(&project).unwrap();
    let compact = r#""mcpServers":{"mcp-envelope":{"type":"stdio","command":"/opt/bin/mcp-envelope","args":["--config","/home/u/.config/mcp-envelope/config.toml"]}}"#;
    let projects_after = projects.replacen(r#""mcpServers":{}"#, compact, 1);
    assert_eq!(
        proj.client_after,
        format!("{head}{projects_after},\n{entry}{tail}")
    );
    let un = undo(&proj.record, Some(&proj.client_after), None, None);
    assert_eq!(un.client_after.as_deref(), Some(user.client_after.as_str()));
}

const CODEX: &str = "model = \"o4-mini\" # mine\n\n# git, slow to start\n[mcp_servers.git]\ncommand = \"uvx\"\nargs = [\"mcp-server-git\"]\nenv_vars = [\"GIT_TOKEN\", { name = \"OTHER\" }]\nstartup_timeout_ms = 45000\ntool_timeout_sec = 120\n\n[mcp_servers.git.env]\nGIT_PAGER = \"cat\"\n\n[mcp_servers.figma]\nurl = \"https://example.invalid/mcp\"\n\n[profiles.x]\nmodel = \"y\"\n";

#[test]
fn codex_moves_tables_with_comments_and_sets_timeouts_and_env_vars() {
    let plan = round_trip(Client::Codex, CODEX);
    assert_eq!(plan.moved, ["git"]);
    let after = &plan.client_after;
    assert!(after.starts_with("model = \"o4-mini\" # mine\n"), "{after}");
    assert!(!after.contains("git, slow"), "{after}");
    assert!(after.contains("[profiles.x]\nmodel = \"y\""), "{after}");
    let doc: toml::Table = after.parse().unwrap();
    let entry = doc["mcp_servers"]["mcp-envelope"].as_table().unwrap();
    assert_eq!(entry["command"].as_str(), Some("/opt/bin/mcp-envelope"));
    assert_eq!(entry["startup_timeout_sec"].as_integer(), Some(55));
    assert_eq!(entry["tool_timeout_sec"].as_integer(), Some(120));
    assert_eq!(
        entry["env_vars"],
        toml::Value::Array(vec!["GIT_TOKEN".into(), "OTHER".into()])
    );
    assert!(doc["mcp_servers"].get("figma").is_some());
    // The entry sits where the moved table was, before figma.
    assert!(after.find("mcp-envelope").unwrap() < after.find("figma").unwrap());
    assert!(plan
        .envelope_after
        .contains("# git, slow to start\n[mcp_servers.git]"));
    let config = parse_config(&plan.envelope_after);
    assert_eq!(
        config.server("git").unwrap().env,
        [("GIT_PAGER".into(), "cat".into())]
    );
}

#[test]
fn a_missing_client_file_is_created_and_deleted_again() {
    let l = launcher();
    for client in [Client::Cursor, Client::Codex] {
        let plan = plan_install(&input(client, None, None, &l, None)).unwrap();
        assert!(plan.client_after.contains("/opt/bin/mcp-envelope"));
        assert!(plan.record.original_absent);
        let un = undo(
            &plan.record,
            Some(&plan.client_after),
            None,
            Some(&plan.envelope_after),
        );
        assert_eq!(un.client_after, None, "{client:?}");
        assert!(un.exact);
    }
}

#[test]
fn edits_after_install_survive_uninstall() {
    let l = launcher();
    let plan = plan_install(&input(
        Client::ClaudeDesktop,
        Some(CLAUDE_DESKTOP),
        None,
        &l,
        None,
    ))
    .unwrap();
    // The user adds a server and a setting after installing.
    let mut doc: Value = serde_json::from_str(&plan.client_after).unwrap();
    doc["mcpServers"]["new"] = json!({"url": "https://new.invalid"});
    doc["theme"] = json!("dark");
    let edited = serde_json::to_string_pretty(&doc).unwrap() + "\n";
    let un = undo(
        &plan.record,
        Some(&edited),
        Some(CLAUDE_DESKTOP),
        Some(&plan.envelope_after),
    );
    assert!(!un.exact);
    let back: Value = serde_json::from_str(un.client_after.as_deref().unwrap()).unwrap();
    let servers: Vec<&String> = back["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(
        servers,
        ["filesystem", "remote", "git", "new"],
        "old order, new ones after"
    );
    assert_eq!(back["theme"], "dark");
    // A second install after new stdio servers appeared moves only those.
    let mut doc: Value = serde_json::from_str(&plan.client_after).unwrap();
    doc["mcpServers"]["later"] = json!({"command": "later"});
    let edited = serde_json::to_string_pretty(&doc).unwrap() + "\n";
    let second = plan_install(&input(
        Client::ClaudeDesktop,
        Some(&edited),
        Some(&plan.envelope_after),
        &l,
        Some(&plan.record),
    ))
    .unwrap();
    assert_eq!(second.moved, ["later"]);
    assert_eq!(second.record.added, ["filesystem", "git", "later"]);
    let un = undo(
        &second.record,
        Some(&second.client_after),
        Some(CLAUDE_DESKTOP),
        Some(&second.envelope_after),
    );
    assert!(!un.exact, "the file has a server it did not have before");
    assert!(un.client_after.unwrap().contains("\"later\""));
}

#[test]
fn servers_shared_with_another_install_stay_in_the_proxy_config() {
    let l = launcher();
    let cursor = r#"{"mcpServers":{"git":{"command":"uvx","args":["mcp-server-git"]}}}"#;
    let first = plan_install(&input(Client::Cursor, Some(cursor), None, &l, None)).unwrap();
    let second = plan_install(&input(
        Client::ClaudeDesktop,
        Some(cursor),
        Some(&first.envelope_after),
        &l,
        None,
    ))
    .unwrap();
    assert!(
        second.added.is_empty(),
        "the same server is not added twice"
    );
    assert_eq!(second.record.uses, ["git"]);
    let others: BTreeSet<String> = second.record.uses.iter().cloned().collect();
    let un = plan_uninstall(
        &first.record,
        Some(&first.client_after),
        Some(cursor),
        Some(&second.envelope_after),
        &others,
    )
    .unwrap();
    assert!(un.removed.is_empty());
    assert!(un.envelope_after.unwrap().contains("[mcp_servers.git]"));
}

#[test]
fn jsonc_and_bad_files_are_refused_with_a_reason() {
    let l = launcher();
    let jsonc = "{\n  // my servers\n  \"mcpServers\": {\"a\": {\"command\": \"a\"}}\n}\n";
    let refused = |client, text| {
        plan_install(&input(client, Some(text), None, &l, None))
            .unwrap_err()
            .0
    };
    let err = refused(Client::Vscode, jsonc);
    assert!(err.contains("has comments or trailing commas"), "{err}");
    let err = refused(Client::Cursor, "{\"mcpServers\": 3}");
    assert!(err.contains("expected an object of servers"), "{err}");
    let err = refused(Client::Codex, "[mcp_servers\n");
    assert!(err.contains("is not valid TOML"), "{err}");
    let err = plan_install(&input(Client::Cursor, Some("{}"), Some("[x"), &l, None)).unwrap_err();
    assert!(
        err.0.contains("mcp-envelope config is not valid TOML"),
        "{err}"
    );
}

#[test]
fn entries_that_start_mcp_envelope_are_never_moved() {
    let l = launcher();
    let text = r#"{"mcpServers":{"envelope":{"command":"/usr/local/bin/mcp-envelope","args":["--config","/x.toml"]}}}"#;
    let plan = plan_install(&input(Client::Cursor, Some(text), None, &l, None)).unwrap();
    assert!(plan.moved.is_empty());
    assert_eq!(plan.left, ["envelope: already starts mcp-envelope"]);
}

#[test]
fn default_paths_follow_the_environment() {
    let env = |k: &str| match k {
        "HOME" => Some("/home/u".to_string()),
        "CODEX_HOME" => Some("/codex".to_string()),
        _ => None,
    };
    let path = |c: Client| c.default_config_path(&env).unwrap();
    assert_eq!(path(Client::Codex), Path::new("/codex/config.toml"));
    assert_eq!(path(Client::ClaudeCode), Path::new("/home/u/.claude.json"));
    assert_eq!(path(Client::Cursor), Path::new("/home/u/.cursor/mcp.json"));
    assert_eq!(
        path(Client::Gemini),
        Path::new("/home/u/.gemini/settings.json")
    );
    if cfg!(target_os = "linux") {
        assert_eq!(
            path(Client::Vscode),
            Path::new("/home/u/.config/Code/User/mcp.json")
        );
        assert_eq!(
            path(Client::ClaudeDesktop),
            Path::new("/home/u/.config/Claude/claude_desktop_config.json")
        );
    }
    assert!(Client::Cursor.default_config_path(&|_| None).is_err());
}

/// A client file with CRLF line endings (written on Windows, or by an editor set so) stays
/// CRLF: install wrote the lines it added with LF, leaving the file with mixed line endings.
/// Its proxy config, when it has CRLF, too; uninstall gives the original bytes back.
#[test]
fn a_crlf_file_keeps_crlf_line_endings() {
    let lone_lf = |text: &str| text.replace("\r\n", "").contains('\n');
    for (client, original) in [
        (Client::ClaudeDesktop, CLAUDE_DESKTOP),
        (Client::Codex, CODEX),
    ] {
        let crlf = original.replace('\n', "\r\n");
        let plan = round_trip(client, &crlf);
        assert!(!plan.moved.is_empty(), "{client:?}");
        assert!(plan.client_after.contains("\r\n"), "{client:?}");
        assert!(
            !lone_lf(&plan.client_after),
            "{client:?}: {:?}",
            plan.client_after
        );
        let existing = "# mine\r\n[defaults]\r\nchar_budget = 900\r\n";
        let l = launcher();
        let merged = plan_install(&input(client, Some(&crlf), Some(existing), &l, None)).unwrap();
        assert!(merged.envelope_after.starts_with(existing), "{client:?}");
        assert!(
            !lone_lf(&merged.envelope_after),
            "{:?}",
            merged.envelope_after
        );
    }
    // A file with LF keeps LF.
    let plan = round_trip(Client::ClaudeDesktop, CLAUDE_DESKTOP);
    assert!(!plan.client_after.contains('\r'));
}

/// Claude Code's file with servers in projects only (local scope): the user-scope install
/// moves none, and said nothing of them (an empty proxy, no hint). It notes how many it found,
/// in which projects, and the `--project` command that moves each; once a project is
/// installed, it is no longer noted. Projects without servers to move are not named.
#[test]
fn local_scope_servers_left_by_a_user_scope_install_are_noted_with_the_command() {
    let git = r#"{"type": "stdio", "command": "uvx", "args": ["mcp-server-git"]}"#;
    let text = format!(
        r#"{{"projects": {{"/src/app": {{"mcpServers": {{"git": {git}, "t": {git}}}}}, "/src/my web": {{"mcpServers": {{"w": {git}, "r": {{"url": "https://x.invalid/mcp"}}}}}}, "/src/none": {{"mcpServers": {{}}}}}}}}"#
    );
    let l = launcher();
    let user = plan_install(&input(Client::ClaudeCode, Some(&text), None, &l, None)).unwrap();
    assert!(user.moved.is_empty());
    let config = "/home/u/.config/mcp-envelope/config.toml";
    assert_eq!(
        user.notes,
        [
            "note: found 3 local-scope server(s) in 2 Claude Code project(s), which an install \
             without --project leaves where they are; to move a project's servers behind the \
             proxy:"
                .to_owned(),
            format!("  /src/app (git, t): mcp-envelope install claude-code --project /src/app --config {config}"),
            format!("  /src/my web (w): mcp-envelope install claude-code --project '/src/my web' --config {config}"),
        ]
    );
    let mut project = in_project(&user, &l, "/src/app");
    project.previous = None;
    let app = plan_install(&project).unwrap();
    assert!(app.notes.is_empty(), "{:?}", app.notes);
    let after = input(Client::ClaudeCode, Some(&app.client_after), None, &l, None);
    let again = plan_install(&after).unwrap();
    assert_eq!(again.notes.len(), 2, "{:?}", again.notes);
    assert!(
        again.notes[1].contains("/src/my web (w)"),
        "{:?}",
        again.notes
    );
    // Other clients have no local scope.
    let desktop = input(Client::ClaudeDesktop, Some(&text), None, &l, None);
    assert!(plan_install(&desktop).unwrap().notes.is_empty());
}
