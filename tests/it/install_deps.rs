//! `scripts/install-deps --run` (what `scripts/run` uses) installs only the servers of
//! `config/example.toml` and the MCP Inspector, not the test-only clients. The script runs from
//! a copy in a temporary folder (so its `.tools/` is there) with `npm` and `python3` replaced by
//! stand-ins that write down how they were called.
use crate::common::root;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// Writes an executable shell script `name` with `body` into `dir`.
fn stand_in(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn install_deps_for_the_run_installs_only_its_servers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("scripts")).unwrap();
    let script = dir.path().join("scripts/install-deps");
    std::fs::copy(root().join("scripts/install-deps"), &script).unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let log = dir.path().join("calls.log");
    // `npm install --prefix DIR ...` makes DIR, as npm does.
    stand_in(
        &bin,
        "npm",
        "echo \"npm $*\" >> \"$LOG\"\nmkdir -p \"$3\"\n",
    );
    // `python3 -m venv DIR` makes a venv whose pip writes down its arguments.
    let pip = r#"printf '#!/bin/sh\necho "pip $*" >> "$LOG"\n' > "$3/bin/pip""#;
    stand_in(
        &bin,
        "python3",
        &format!(
            "echo \"python3 $*\" >> \"$LOG\"\nmkdir -p \"$3/bin\"\n{pip}\n\
             printf '#!/bin/sh\\n' > \"$3/bin/python\"\nchmod +x \"$3/bin/pip\" \"$3/bin/python\"\n"
        ),
    );
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let run = |arg: &str| {
        Command::new("bash")
            .arg(&script)
            .arg(arg)
            .env("PATH", &path)
            .env("LOG", &log)
            .output()
            .unwrap()
    };
    let out = run("--run");
    assert!(out.status.success(), "{out:?}");
    let calls = std::fs::read_to_string(&log).unwrap();
    let tools = dir.path().join(".tools");
    let lines: Vec<&str> = calls.lines().collect();
    assert_eq!(lines.len(), 3, "{calls}");
    assert!(
        lines[0].starts_with(&format!("npm install --prefix {}/npm ", tools.display()))
            && lines[0].ends_with(
                " @modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/inspector@0.15.0"
            ),
        "{calls}"
    );
    assert_eq!(
        lines[1],
        format!("python3 -m venv {}/venv", tools.display())
    );
    assert!(
        lines[2].starts_with("pip install ")
            && lines[2].ends_with(" mcp-server-time==2026.10.19 mcp-server-git==2026.10.19"),
        "{calls}"
    );
    assert!(!tools.join("clients").exists() && !tools.join("npm-sdk2").exists());

    // Installed once: a second run does nothing.
    assert!(run("--run").status.success());
    assert_eq!(std::fs::read_to_string(&log).unwrap(), calls);
    let out = run("--bogus");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
