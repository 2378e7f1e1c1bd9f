//! `mcp-envelope install` / `uninstall` through the binary, for every client, in a temporary
//! HOME: the dry run writes nothing, install moves the fixture server (and `check` finds it
//! ready behind the proxy), installing again changes nothing, uninstall restores the client's
//! file byte for byte and removes the proxy config it created.
use crate::common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Output;

fn run(home: &Path, args: &[&str]) -> Output {
    bin_in_home(home).args(args).output().unwrap()
}

fn ok(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The fixture server's command and arguments as JSON.
fn fixture_json() -> (String, String) {
    let args = serde_json::json!([fixture().display().to_string(), "--name", "fx"]);
    ("\"python3\"".to_string(), args.to_string())
}

/// Each client, where its config lives under HOME, and a config with the fixture server, a
/// remote server and other settings.
fn clients() -> Vec<(&'static str, &'static str, String)> {
    let (cmd, args) = fixture_json();
    let mcp = format!(
        "{{\n  \"other\": 1,\n  \"mcpServers\": {{\n    \"fx\": {{\n      \"command\": {cmd},\n      \"args\": {args}\n    }},\n    \"web\": {{\n      \"url\": \"https://example.invalid/mcp\"\n    }}\n  }}\n}}\n"
    );
    let claude_code = format!(
        "{{\n  \"numStartups\": 1,\n  \"mcpServers\": {{\n    \"fx\": {{\n      \"type\": \"stdio\",\n      \"command\": {cmd},\n      \"args\": {args},\n      \"env\": {{}}\n    }}\n  }},\n  \"projects\": {{}}\n}}"
    );
    let vscode = format!(
        "{{\n\t\"servers\": {{\n\t\t\"fx\": {{\n\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": {cmd},\n\t\t\t\"args\": {args}\n\t\t}}\n\t}}\n}}\n"
    );
    let gemini = format!(
        "{{\n  \"security\": {{\"auth\": {{\"selectedType\": \"gemini-api-key\"}}}},\n  \"mcpServers\": {{\n    \"fx\": {{\"command\": {cmd}, \"args\": {args}, \"timeout\": 30000, \"trust\": true}}\n  }}\n}}\n"
    );
    let codex = format!(
        "model = \"o4-mini\" # my model\n\n# the fixture\n[mcp_servers.fx]\ncommand = {cmd}\nargs = {args}\n\n[mcp_servers.web]\nurl = \"https://example.invalid/mcp\"\n"
    );
    vec![
        ("claude-code", ".claude.json", claude_code),
        (
            "claude-desktop",
            ".config/Claude/claude_desktop_config.json",
            mcp.clone(),
        ),
        ("codex", ".codex/config.toml", codex),
        ("cursor", ".cursor/mcp.json", mcp),
        ("vscode", ".config/Code/User/mcp.json", vscode),
        ("gemini", ".gemini/settings.json", gemini),
    ]
}

#[test]
fn every_client_installs_checks_and_uninstalls_byte_for_byte() {
    for (client, rel, original) in clients() {
        let home = tempfile::tempdir().unwrap();
        let file: PathBuf = home.path().join(rel);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, &original).unwrap();
        let envelope = home.path().join(".config/mcp-envelope/config.toml");

        let dry = ok(&run(home.path(), &["install", client, "--dry-run"]));
        assert!(dry.contains("dry run: nothing written"), "{client}: {dry}");
        assert!(
            dry.contains("+++ ") && dry.contains("/dev/null"),
            "{client}: {dry}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
        assert!(!envelope.exists(), "{client}: dry run wrote the config");

        let done = ok(&run(home.path(), &["install", client]));
        assert!(done.contains("moved 1 server(s)"), "{client}: {done}");
        let after = std::fs::read_to_string(&file).unwrap();
        assert!(
            after.contains(&bin().canonicalize().unwrap().display().to_string()),
            "{client}: {after}"
        );
        assert!(
            after.contains(&envelope.display().to_string()),
            "{client}: {after}"
        );
        assert!(
            !after.contains("--name"),
            "{client}: the server moved: {after}"
        );

        let check = ok(&run(
            home.path(),
            &["check", "--config", envelope.to_str().unwrap()],
        ));
        assert!(
            check.contains("1 of 1 enabled server(s) ready"),
            "{client}: {check}"
        );
        assert!(check.contains("  echo "), "{client}: {check}");

        let again = ok(&run(home.path(), &["install", client]));
        assert!(again.contains("nothing to change"), "{client}: {again}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), after);

        let undone = ok(&run(home.path(), &["uninstall", client]));
        assert!(
            undone.contains("restored byte for byte"),
            "{client}: {undone}"
        );
        assert_eq!(
            std::fs::read(&file).unwrap(),
            original.as_bytes(),
            "{client}"
        );
        assert!(
            !envelope.exists(),
            "{client}: the created config is removed"
        );
        let none = run(home.path(), &["uninstall", client]);
        assert_eq!(none.status.code(), Some(2), "{client}");
    }
}

#[test]
fn install_merges_into_an_existing_config_and_client_config_overrides_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let envelope = dir.path().join("mine.toml");
    let existing = "# my settings\n[defaults]\nchar_budget = 300\n";
    std::fs::write(&envelope, existing).unwrap();
    let project = dir.path().join(".mcp.json");
    let (cmd, args) = fixture_json();
    let original =
        format!("{{\"mcpServers\": {{\"fx\": {{\"command\": {cmd}, \"args\": {args}}}}}}}");
    std::fs::write(&project, &original).unwrap();
    let p = project.to_str().unwrap();
    let e = envelope.to_str().unwrap();
    ok(&run(
        dir.path(),
        &[
            "--config",
            e,
            "install",
            "claude-code",
            "--client-config",
            p,
        ],
    ));
    let merged = std::fs::read_to_string(&envelope).unwrap();
    assert!(merged.starts_with(existing), "{merged}");
    assert!(merged.contains("[mcp_servers.fx]"), "{merged}");
    let check = ok(&run(dir.path(), &["check", "--config", e]));
    assert!(check.contains("300 (defaults)"), "{check}");
    ok(&run(
        dir.path(),
        &[
            "--config",
            e,
            "uninstall",
            "claude-code",
            "--client-config",
            p,
        ],
    ));
    assert_eq!(std::fs::read_to_string(&project).unwrap(), original);
    assert_eq!(std::fs::read_to_string(&envelope).unwrap(), existing);
}

#[test]
fn a_jsonc_file_is_refused_and_left_alone() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let text = "{\n  // mine\n  \"mcpServers\": {\"a\": {\"command\": \"a\"},}\n}\n";
    std::fs::write(&file, text).unwrap();
    let out = run(home.path(), &["install", "cursor"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has comments or trailing commas"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    assert!(!home.path().join(".config/mcp-envelope").exists());
}
