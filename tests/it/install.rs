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

/// The compact `projects` object Claude Code writes into `~/.claude.json`: install leaves it
/// as it is.
const CLAUDE_PROJECTS: &str = r#"{"/w":{"allowedTools":[],"history":[{"display":"fix it","pastedContents":{}}],"mcpServers":{}}}"#;

/// Each client, where its config lives under HOME, and a config with the fixture server, a
/// remote server and other settings.
fn clients() -> Vec<(&'static str, &'static str, String)> {
    let (cmd, args) = fixture_json();
    let mcp = format!(
        "{{\n  \"other\": 1,\n  \"mcpServers\": {{\n    \"fx\": {{\n      \"command\": {cmd},\n      \"args\": {args}\n    }},\n    \"web\": {{\n      \"url\": \"https://example.invalid/mcp\"\n    }}\n  }}\n}}\n"
    );
    let claude_code = format!(
        "{{\n  \"numStartups\": 1,\n  \"mcpServers\": {{\n    \"fx\": {{\n      \"type\": \"stdio\",\n      \"command\": {cmd},\n      \"args\": {args},\n      \"env\": {{}}\n    }}\n  }},\n  \"projects\": {CLAUDE_PROJECTS}\n}}"
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
        // Strict JSON (any layout) is rewritten by install: no "refuses" note.
        assert!(
            !dry.contains("comments or trailing commas"),
            "{client}: {dry}"
        );
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
        if client == "claude-code" {
            let tail = format!("  }},\n  \"projects\": {CLAUDE_PROJECTS}\n}}");
            assert!(
                after.ends_with(&tail),
                "{client}: the rest changed: {after}"
            );
            assert!(after.starts_with("{\n  \"numStartups\": 1,\n  \"mcpServers\": {\n    \"mcp-envelope\": {\n      \"type\": \"stdio\",\n"), "{after}");
        }

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

/// A cursor config under `home` with a comment and a trailing comma; its path and text.
fn jsonc_cursor_config(home: &Path) -> (PathBuf, &'static str) {
    let file = home.join(".cursor/mcp.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let text = "{\n  // mine\n  \"mcpServers\": {\"a\": {\"command\": \"a\"},}\n}\n";
    std::fs::write(&file, text).unwrap();
    (file, text)
}

#[test]
fn a_jsonc_file_is_refused_and_left_alone() {
    let home = tempfile::tempdir().unwrap();
    let (file, text) = jsonc_cursor_config(home.path());
    let out = run(home.path(), &["install", "cursor"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has comments or trailing commas"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    assert!(!home.path().join(".config/mcp-envelope").exists());
}

/// A cursor config under `home` with the fixture server; its path and text.
fn cursor_config(home: &Path) -> (PathBuf, String) {
    let file = home.join(".cursor/mcp.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let (cmd, args) = fixture_json();
    let text =
        format!("{{\"mcpServers\": {{\"fx\": {{\"command\": {cmd}, \"args\": {args}}}}}}}\n");
    std::fs::write(&file, &text).unwrap();
    (file, text)
}

#[test]
fn the_printed_undo_command_works_from_anywhere_after_a_relative_config() {
    let home = tempfile::tempdir().unwrap();
    let (file, original) = cursor_config(home.path());
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out = bin_in_home(home.path())
        .current_dir(&work)
        .args(["--config", "rel.toml", "install", "cursor"])
        .output()
        .unwrap();
    let text = ok(&out);
    let undo = text
        .lines()
        .find_map(|l| l.strip_prefix("undo: "))
        .unwrap_or_else(|| panic!("no undo line: {text}"));
    let envelope = work.join("rel.toml");
    assert!(
        undo.contains(&format!("--config {}", envelope.display())),
        "{undo}"
    );
    let mut words = undo.split_whitespace();
    // The binary by its absolute path: it need not be on PATH (the README's route builds it
    // in target/release); the check line names it the same way.
    let program = std::path::Path::new(words.next().unwrap());
    assert!(program.is_absolute() && program.is_file(), "{undo}");
    assert!(
        text.contains(&format!("check: {} check --config", program.display())),
        "{text}"
    );
    let args: Vec<&str> = words.collect();
    // Run from another directory: the command finds the same install.
    let undone = ok(&bin_in_home(home.path())
        .current_dir(home.path())
        .args(&args)
        .output()
        .unwrap());
    assert!(undone.contains("restored byte for byte"), "{undone}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
}

#[test]
fn a_dry_run_shows_the_change_for_a_jsonc_file_and_writes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let (file, text) = jsonc_cursor_config(home.path());
    let out = run(home.path(), &["install", "cursor", "--dry-run"]);
    // Refused as the install itself is (exit status 2), after showing the change to make.
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("install refuses to rewrite it"), "{stderr}");
    let dry = String::from_utf8_lossy(&out.stdout);
    assert!(dry.contains("+    \"mcp-envelope\": {"), "{dry}");
    assert!(
        dry.contains("-  // mine"),
        "the diff shows the comment goes: {dry}"
    );
    assert!(dry.contains("has comments or trailing commas"), "{dry}");
    assert!(dry.contains("dry run: nothing written"), "{dry}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    assert!(!home.path().join(".config/mcp-envelope").exists());
}

#[test]
fn a_claude_code_project_folder_that_does_not_exist_is_still_installed() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("gone/project");
    let (cmd, args) = fixture_json();
    let original = format!(
        "{{\n  \"projects\": {{\n    {}: {{\n      \"mcpServers\": {{\"fx\": {{\"command\": {cmd}, \"args\": {args}}}}}\n    }}\n  }}\n}}\n",
        serde_json::json!(project.display().to_string())
    );
    let file = home.path().join(".claude.json");
    std::fs::write(&file, &original).unwrap();
    let dir = project.to_str().unwrap();
    let done = ok(&run(
        home.path(),
        &["install", "claude-code", "--project", dir],
    ));
    assert!(done.contains("moved 1 server(s)"), "{done}");
    assert!(done.contains(&format!("--project {dir}")), "{done}");
    let undone = ok(&run(
        home.path(),
        &["uninstall", "claude-code", "--project", dir],
    ));
    assert!(undone.contains("restored byte for byte"), "{undone}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
}

/// A client file that install created (none was there) is deleted by uninstall, which says so
/// rather than claiming a restore from a backup.
#[test]
fn uninstall_deletes_a_client_file_that_install_created_and_says_so() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join(".cursor/mcp.json");
    ok(&run(home.path(), &["install", "cursor"]));
    assert!(file.exists());
    let undone = ok(&run(home.path(), &["uninstall", "cursor"]));
    assert!(
        undone.contains("deleted: it did not exist before the install"),
        "{undone}"
    );
    assert!(!undone.contains("restored byte for byte"), "{undone}");
    assert!(!file.exists());
}

/// A dry run shows where secrets go but not their values: `env` values and headers of
/// secret-looking names, a secret argument and a URL's key, of moved and kept entries alike
/// (reported by a fresh user: the one-line JSON file was printed whole).
#[test]
fn a_dry_run_diff_shows_no_secret_values() {
    let home = tempfile::tempdir().unwrap();
    let (cmd, args) = fixture_json();
    let original = format!(
        r#"{{"mcpServers":{{"fx":{{"command":{cmd},"args":{args},"env":{{"API_TOKEN":"tok-claude-123456"}}}},"db":{{"command":"pg","args":["--password","hunter2hunter2"]}},"web":{{"url":"https://example.invalid/mcp?api_key=supersecretkey1","headers":{{"Authorization":"Bearer abcdefSECRET123"}}}}}},"prefs":{{"password":true,"token_limit":4096}}}}"#
    );
    std::fs::write(home.path().join(".claude.json"), &original).unwrap();
    let dry = ok(&run(home.path(), &["install", "claude-code", "--dry-run"]));
    assert!(dry.contains("dry run: nothing written"), "{dry}");
    assert!(dry.contains("API_TOKEN"), "the key is shown: {dry}");
    assert!(dry.contains("[redacted]"), "{dry}");
    for secret in [
        "tok-claude-123456",
        "hunter2hunter2",
        "supersecretkey1",
        "abcdefSECRET123",
    ] {
        assert!(!dry.contains(secret), "{secret} shown: {dry}");
    }
    // Only strings are secrets: a boolean or number under a secret-looking key is shown.
    assert!(dry.contains(r#""password":true"#), "{dry}");
    assert!(dry.contains(r#""token_limit":4096"#), "{dry}");
    let file = std::fs::read_to_string(home.path().join(".claude.json")).unwrap();
    assert_eq!(file, original, "the dry run wrote nothing");
}

/// `--config ./x.toml` put the backup of the client's file (its tokens) and the record in
/// `./installs/` beside it: they go to `~/.config/mcp-envelope/installs/` (0700), each file
/// 0600, and the undo command finds them.
#[test]
fn the_backup_goes_to_the_config_folder_private_whatever_config_names() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let (file, original) = cursor_config(home.path());
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let in_work = |args: &[&str]| {
        bin_in_home(home.path())
            .current_dir(&work)
            .args(args)
            .output()
            .unwrap()
    };
    let text = ok(&in_work(&["--config", "./x.toml", "install", "cursor"]));
    assert!(!work.join("installs").exists(), "{text}");
    let installs = home.path().join(".config/mcp-envelope/installs");
    let backup = text
        .lines()
        .find_map(|l| l.strip_prefix("backup: "))
        .unwrap_or_else(|| panic!("no backup line: {text}"));
    assert!(Path::new(backup).starts_with(&installs), "{text}");
    assert_eq!(std::fs::read_to_string(backup).unwrap(), original);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&installs), 0o700);
    for entry in std::fs::read_dir(&installs).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path), 0o600, "{}", path.display());
    }
    let undone = ok(&in_work(&["--config", "./x.toml", "uninstall", "cursor"]));
    assert!(undone.contains("restored byte for byte"), "{undone}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    assert!(!installs.exists(), "the emptied folder is removed");
}

/// The proxy's config takes the moved servers' secrets: one that others could read is made
/// 0600, and the install says so (found by a fresh-user tester: an existing 0644 config kept
/// its mode with a password and a token written into it).
#[test]
fn an_existing_config_readable_by_others_is_made_private_and_the_install_says_so() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    cursor_config(home.path());
    let work = home.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let config = work.join("x.toml");
    std::fs::write(&config, "# mine\n").unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = bin_in_home(home.path())
        .current_dir(&work)
        .args(["--config", "./x.toml", "install", "cursor"])
        .output()
        .unwrap();
    let text = ok(&out);
    let mode = std::fs::metadata(&config).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{text}");
    assert!(
        text.contains("was mode 0644, readable by others; it is 0600 now"),
        "{text}"
    );
}
