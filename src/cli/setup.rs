//! Commands about the config itself: `import`, `install` / `uninstall`, `config-schema`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::Value;

use super::common::usage;
use super::{GlobalArgs, InstallArgs};
use crate::config;

/// `mcp-envelope import FILE`: a client's MCP config (JSON, or Codex's TOML) → TOML on stdout.
pub(super) fn run_import(file: &Path) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read {}", file.display()))
        .map_err(usage)?;
    let source = file.display().to_string();
    let toml = if file.extension().is_some_and(|e| e == "toml") {
        crate::import::import_codex_config(&text, &source)
    } else {
        let doc: Value = serde_json::from_str(&crate::import::strip_jsonc(&text))
            .with_context(|| format!("{} is not valid JSON", file.display()))
            .map_err(usage)?;
        crate::import::import_client_config(&doc, &source)
    }
    .with_context(|| source.clone())
    .map_err(usage)?;
    std::io::stdout()
        .lock()
        .write_all(toml.as_bytes())
        .context("writing stdout")?;
    // What the user must set before the imported config works, and what was converted to
    // fit it, where it is seen.
    let mut stderr = std::io::stderr().lock();
    for line in toml.lines() {
        let note = ["# set ", "# converted "]
            .iter()
            .find_map(|p| line.strip_prefix(p).map(|rest| (&p[2..], rest)));
        if let Some((what, rest)) = note {
            let _ = writeln!(stderr, "mcp-envelope import: {what}{rest}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `mcp-envelope config-schema`: the config's JSON Schema, pretty-printed (issue 7).
pub(super) fn run_config_schema() -> anyhow::Result<ExitCode> {
    let text = serde_json::to_string_pretty(&config::json_schema())?;
    writeln!(std::io::stdout().lock(), "{text}").context("writing stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// `mcp-envelope install|uninstall CLIENT`: resolves the paths, then `install::files` does the
/// work.
pub(super) fn run_install(
    global: &GlobalArgs,
    args: &InstallArgs,
    install: bool,
) -> anyhow::Result<ExitCode> {
    use crate::install::{files, Launcher};
    let env = |k: &str| std::env::var(k).ok();
    let absolute = |p: &Path| std::path::absolute(p).context("cannot resolve a path");
    let envelope_config = match &global.config {
        Some(p) => absolute(p)?,
        None => files::default_envelope_config(&env).map_err(usage)?,
    };
    let client_config = match &args.client_config {
        Some(p) => absolute(p)?,
        None => args.client.default_config_path(&env).map_err(usage)?,
    };
    // Claude Code keys a project by its real path; a folder that does not exist (yet) keeps
    // the path as given, made absolute.
    let project = match &args.project {
        Some(dir) => {
            let dir = match std::fs::canonicalize(dir) {
                Ok(real) => real,
                Err(_) => absolute(dir)?,
            };
            Some(dir.display().to_string())
        }
        None => None,
    };
    let target = files::Target {
        client: args.client,
        client_config,
        project,
        envelope_config,
        client_config_given: args.client_config.is_some(),
        installs: files::installs_dir(&env).map_err(usage)?,
    };
    let mut stdout = std::io::stdout().lock();
    if install {
        let program = std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .context("cannot find this program's own path")?;
        let launcher = Launcher {
            program: program.display().to_string(),
            config: target.envelope_config.display().to_string(),
        };
        files::install(&target, &launcher, args.dry_run, &mut stdout).map_err(usage)?;
    } else {
        files::uninstall(&target, args.dry_run, &mut stdout).map_err(usage)?;
    }
    Ok(ExitCode::SUCCESS)
}
