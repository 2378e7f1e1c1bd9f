//! The file side of `install` / `uninstall`: reading the client's and the proxy's configs,
//! backups and install records, atomic writes, and the printed diffs and summaries.
//!
//! Records live in `installs/` in mcp-envelope's own config folder, whatever `--config` names
//! (directory mode 0700; [`super::records`]): for each client file (and Claude Code project,
//! and proxy config) one `<client>-<hash>.json` record and, when the file existed, one
//! `<client>-<hash>.orig` backup of its bytes before the first install. Both are private
//! (mode 0600 from their creation, [`crate::private_file::create_private`]): client configs
//! hold tokens. A file is replaced by writing a temporary file (mode 0600 from its creation)
//! beside it and renaming it over the original (a symlink is followed, so the link stays a
//! link); an existing client or proxy config keeps its permissions, a new one gets 0600.

use std::collections::BTreeSet;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::{plan_install, plan_uninstall, Client, InstallError, InstallInput, Launcher, Record};

/// What `install` / `uninstall` act on.
#[derive(Debug, Clone)]
pub struct Target {
    /// The client.
    pub client: Client,
    /// The client's config file.
    pub client_config: PathBuf,
    /// Claude Code project directory (absolute), for its local-scope servers.
    pub project: Option<String>,
    /// The proxy's config file (absolute).
    pub envelope_config: PathBuf,
    /// Whether the client's config file was given (`--client-config`) rather than found in its
    /// usual place: the printed undo command then names it too.
    pub client_config_given: bool,
    /// The folder of install records and backups ([`installs_dir`]).
    pub installs: PathBuf,
}

/// The proxy's default config file: `$XDG_CONFIG_HOME/mcp-envelope/config.toml`, else
/// `$HOME/.config/mcp-envelope/config.toml` (where the proxy looks when given no `--config`).
pub fn default_envelope_config(
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PathBuf, InstallError> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = match var("XDG_CONFIG_HOME").filter(|p| p.is_absolute()) {
        Some(p) => p,
        None => var("HOME")
            .ok_or_else(|| InstallError("HOME is not set; give --config".into()))?
            .join(".config"),
    };
    Ok(base.join("mcp-envelope").join("config.toml"))
}

/// The folder of every install's record and backup: `installs/` beside the proxy's default
/// config ([`default_envelope_config`]), whatever `--config` names, so that a backup of a
/// client's file (which holds its tokens) stays in the user's own config folder.
pub fn installs_dir(env: &dyn Fn(&str) -> Option<String>) -> Result<PathBuf, InstallError> {
    let config = default_envelope_config(env).map_err(|_| {
        InstallError(
            "HOME is not set: install keeps the backup of the client's config in \
             ~/.config/mcp-envelope/installs; set HOME (or XDG_CONFIG_HOME)"
                .into(),
        )
    })?;
    Ok(config.with_file_name("installs"))
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> InstallError {
    InstallError(format!("cannot {what} {}: {e}", path.display()))
}

/// The file's text, `None` when it does not exist.
fn read(path: &Path) -> Result<Option<String>, InstallError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("read", path, e)),
    }
}

/// Replaces (or creates) `path` with `text` atomically; see the module doc.
fn write(path: &Path, text: &str) -> Result<(), InstallError> {
    write_file(path, text, false)
}

/// [`write`] for a record or backup: mode 0600 whatever the file had.
fn write_private(path: &Path, text: &str) -> Result<(), InstallError> {
    write_file(path, text, true)
}

/// [`write`] for the proxy's config, which takes the moved servers' `env` and `args`, secrets
/// among them: mode 0600 whatever the file had. Returns the mode it had when that let others
/// read or write it (for the note saying so).
fn write_owner_only(path: &Path, text: &str) -> Result<Option<u32>, InstallError> {
    let before = std::fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o777);
    write_file(path, text, true)?;
    Ok(before.filter(|mode| mode & 0o077 != 0))
}

fn write_file(path: &Path, text: &str, private: bool) -> Result<(), InstallError> {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| io_error("create", dir, e))?;
    let mode = match std::fs::metadata(&path) {
        Ok(m) if !private => m.permissions().mode(),
        _ => 0o600,
    };
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".mcp-envelope-tmp");
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut f = crate::private_file::create_private(&tmp)?;
        if mode & 0o7777 != 0o600 {
            f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(|e| io_error("write", &path, e))
}

fn delete(path: &Path) -> Result<(), InstallError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(io_error("remove", path, e)),
        _ => Ok(()),
    }
}

/// Gives `record`'s backup to each other install into the same client file whose backup
/// holds `record`'s changes ([`super::handed_over_backup`]), before `record`'s is deleted.
fn hand_over_backup(
    dir: &Path,
    stem: &str,
    record: &Record,
    backup: Option<&str>,
) -> Result<(), InstallError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(other) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if other == stem || path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Some(later) = read_record(&path)? else {
            continue;
        };
        if later.client_config != record.client_config || later.original_absent {
            continue;
        }
        let later_backup_path = dir.join(format!("{other}.orig"));
        let Some(later_backup) = read(&later_backup_path)? else {
            continue;
        };
        if let Some(bytes) = super::handed_over_backup(record, backup, &later_backup) {
            write_private(&later_backup_path, &bytes)?;
        }
    }
    Ok(())
}

fn read_record(path: &Path) -> Result<Option<Record>, InstallError> {
    match read(path)? {
        None => Ok(None),
        Some(text) => serde_json::from_str(&text).map(Some).map_err(|e| {
            InstallError(format!(
                "{} is not a valid install record: {e}",
                path.display()
            ))
        }),
    }
}

/// The servers that the other install records (not `stem`) into `config` rely on (a record
/// that does not name its proxy's config counts: it was made before records said it).
fn used_by_others(dir: &Path, stem: &str, config: &Path) -> Result<BTreeSet<String>, InstallError> {
    let mut used = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(used);
    };
    for entry in entries.flatten() {
        let p = entry.path();
        let is_other =
            p.extension().is_some_and(|e| e == "json") && p.file_stem().is_some_and(|s| s != stem);
        if is_other {
            let record = read_record(&p)?;
            let same = |r: &Record| r.envelope_config.as_ref().is_none_or(|c| c == config);
            if let Some(r) = record.filter(same) {
                used.extend(r.uses);
            }
        }
    }
    Ok(used)
}

/// A unified diff of `before` → `after` of `path` (`None`: no file), or a line saying it is
/// unchanged.
pub fn diff(path: &Path, before: Option<&str>, after: Option<&str>) -> String {
    let name = path.display().to_string();
    if before == after {
        return format!("{name}: unchanged\n");
    }
    let (b, a) = (before.unwrap_or(""), after.unwrap_or(""));
    let old = if before.is_some() {
        format!("{name} (now)")
    } else {
        "/dev/null".into()
    };
    let new = if after.is_some() {
        format!("{name} (after)")
    } else {
        "/dev/null".into()
    };
    similar::TextDiff::from_lines(b, a)
        .unified_diff()
        .context_radius(3)
        .header(&old, &new)
        .to_string()
}

/// `text` written to `out`; a failed write is an [`InstallError`].
fn print(out: &mut dyn Write, text: &str) -> Result<(), InstallError> {
    out.write_all(text.as_bytes())
        .map_err(|e| InstallError(format!("writing output: {e}")))
}

/// A dry run's output: the diff of each file (`(before, after)`, `None` for no file), the
/// summary and that nothing was written. The secrets written in any of the four texts
/// ([`crate::redact::secrets_in_document`]: env values and headers of secret-looking names,
/// secret arguments, URL credentials) read `[redacted]` in the diffs, which a user may paste
/// or an agent may run: the files themselves keep them.
fn print_dry_run(
    out: &mut dyn Write,
    target: &Target,
    client: (Option<&str>, Option<&str>),
    envelope: (Option<&str>, Option<&str>),
    summary: &str,
) -> Result<(), InstallError> {
    let secrets = [client.0, client.1, envelope.0, envelope.1]
        .into_iter()
        .flatten()
        .filter_map(crate::redact::parse_document)
        .flat_map(|doc| crate::redact::secrets_in_document(&doc));
    let redactor = crate::redact::Redactor::for_documents(secrets);
    let shown = |path, (before, after)| redactor.redact(&diff(path, before, after));
    print(out, &shown(&target.client_config, client))?;
    print(out, &shown(&target.envelope_config, envelope))?;
    print(out, &format!("{summary}dry run: nothing written\n"))
}

/// An install's dry run ([`print_dry_run`]); when the client's file has comments or trailing
/// commas (`refused`), the summary says to make the change by hand and the dry run then fails
/// as the install would (`Err`, exit status 2), after the diff.
fn print_install_dry_run(
    out: &mut dyn Write,
    target: &Target,
    (client, envelope): (Texts<'_>, Texts<'_>),
    mut summary: String,
    refused: bool,
) -> Result<(), InstallError> {
    if !refused {
        return print_dry_run(out, target, client, envelope, &summary);
    }
    let why = format!(
        "{} has comments or trailing commas: install refuses to rewrite it (they would be \
         lost); make the change shown above by hand",
        target.client_config.display()
    );
    summary.push_str(&why);
    summary.push('\n');
    print_dry_run(out, target, client, envelope, &summary)?;
    Err(InstallError(why))
}

/// A file's text before and after (`None`: no file).
type Texts<'a> = (Option<&'a str>, Option<&'a str>);

/// The command that undoes an install of `target` with the binary at `program`: every path
/// absolute (the binary's too: it need not be on `PATH`), so that it works from any directory
/// and finds the same record (named after the proxy's config, [`super::records`]).
fn undo_command(target: &Target, program: &str) -> String {
    let mut undo = format!(
        "{program} uninstall {} --config {}",
        target.client.id(),
        target.envelope_config.display()
    );
    if target.client_config_given {
        undo.push_str(&format!(
            " --client-config {}",
            target.client_config.display()
        ));
    }
    if let Some(dir) = &target.project {
        undo.push_str(&format!(" --project {dir}"));
    }
    undo
}

/// What an install plan moves and leaves, in words.
fn install_summary(target: &Target, plan: &super::InstallPlan) -> String {
    let mut summary = String::new();
    if plan.moved.is_empty() {
        summary.push_str("no servers to move\n");
    } else {
        summary.push_str(&format!(
            "moved {} server(s) from {} to {}: {}\n",
            plan.moved.len(),
            target.client_config.display(),
            target.envelope_config.display(),
            plan.moved.join(", ")
        ));
    }
    for (from, to) in plan.added.iter().filter(|(a, b)| a != b) {
        summary.push_str(&format!(
            "  {from} is called {to} in mcp-envelope's config (a different {from} was there)\n"
        ));
    }
    for why in &plan.left {
        summary.push_str(&format!("left in the client: {why}\n"));
    }
    for note in &plan.notes {
        summary.push_str(&format!("{note}\n"));
    }
    summary
}

/// `mcp-envelope install`: plans, then (unless `dry_run`) writes the backup, the record, the
/// proxy's config and the client's config, in that order; prints a summary (and with
/// `dry_run` both diffs) to `out`. A dry run also plans a JSON file with comments or trailing
/// commas (which install itself refuses), so that its diff shows the entry to add by hand, and
/// then fails as the install would (`Err` naming the file, after the diff is printed).
pub fn install(
    target: &Target,
    launcher: &Launcher,
    dry_run: bool,
    out: &mut dyn Write,
) -> Result<(), InstallError> {
    let client_text = read(&target.client_config)?;
    let envelope_text = read(&target.envelope_config)?;
    let place = super::records::place(target);
    let (dir, record_path) = (&place.dir, place.record());
    let previous = read_record(&record_path)?;
    let stripped = match (&client_text, target.client) {
        // Only a file strict JSON cannot read has comments or trailing commas to strip.
        (Some(text), client)
            if dry_run
                && client != Client::Codex
                && serde_json::from_str::<serde::de::IgnoredAny>(text).is_err() =>
        {
            // Comments become blanks when stripped: the plan starts from the same data laid
            // out afresh, so the diff shows a clean result.
            let plain = crate::import::strip_jsonc(text);
            let fresh = serde_json::from_str::<serde_json::Value>(&plain)
                .map(|v| format!("{v:#}\n"))
                .unwrap_or(plain);
            (fresh != *text).then_some(fresh)
        }
        _ => None,
    };
    let plan = plan_install(&InstallInput {
        client: target.client,
        project: target.project.as_deref(),
        client_path: target.client_config.clone(),
        client_text: stripped.as_deref().or(client_text.as_deref()),
        envelope_text: envelope_text.as_deref(),
        launcher,
        previous: previous.as_ref(),
    })?;
    let summary = install_summary(target, &plan);
    if dry_run {
        let client = (client_text.as_deref(), Some(plan.client_after.as_str()));
        let envelope = (envelope_text.as_deref(), Some(plan.envelope_after.as_str()));
        let refused = stripped.is_some();
        return print_install_dry_run(out, target, (client, envelope), summary, refused);
    }
    let client_same = client_text.as_deref() == Some(plan.client_after.as_str());
    let envelope_same = envelope_text.as_deref() == Some(plan.envelope_after.as_str());
    if client_same && envelope_same {
        let done = format!(
            "{summary}already installed in {}: nothing to change\n",
            target.client_config.display()
        );
        return print(out, &done);
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| io_error("create", dir, e))?;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    let backup = place.backup();
    if previous.is_none() {
        if let Some(original) = &client_text {
            write_private(&backup, original)?;
        }
    }
    let record = serde_json::to_string_pretty(&plan.record).expect("a record serializes");
    write_private(&record_path, &record)?;
    let narrowed = write_owner_only(&target.envelope_config, &plan.envelope_after)?;
    write(&target.client_config, &plan.client_after)?;
    let backup = match client_text {
        Some(_) => backup.display().to_string(),
        None => "none (the file did not exist)".into(),
    };
    print(
        out,
        &format!(
            "{summary}{} now starts mcp-envelope ({}) with --config {}\nbackup: {backup}\nundo: {}\ncheck: {} check --config {}\n{}",
            target.client_config.display(),
            launcher.program,
            launcher.config,
            undo_command(target, &launcher.program),
            launcher.program,
            launcher.config,
            narrowed.map_or(String::new(), |mode| format!(
                "note: {} was mode {mode:04o}, readable by others; it is 0600 now, as it holds the moved servers' env and args\n",
                target.envelope_config.display()
            )),
        ),
    )
}

/// The install record of `target` and its backup's text (`None` when the client's file did
/// not exist before the install). Errors: no record, or its backup is missing.
fn recorded(target: &Target) -> Result<(Record, Option<String>), InstallError> {
    let place = super::records::place(target);
    let record_path = place.record();
    let Some(record) = read_record(&record_path)? else {
        return Err(InstallError(format!(
            "no install of {} into {} is recorded (looked for {})",
            target.client.id(),
            target.client_config.display(),
            record_path.display()
        )));
    };
    let backup_path = place.backup();
    if record.original_absent {
        return Ok((record, None));
    }
    match read(&backup_path)? {
        Some(backup) => Ok((record, Some(backup))),
        None => Err(InstallError(format!(
            "the backup {} is missing",
            backup_path.display()
        ))),
    }
}

/// `mcp-envelope uninstall`: puts the moved servers back into the client's config (the backup's
/// exact bytes when nothing else changed since), removes the servers install added from the
/// proxy's config unless another install uses them, and deletes the record and backup.
pub fn uninstall(target: &Target, dry_run: bool, out: &mut dyn Write) -> Result<(), InstallError> {
    let place = super::records::place(target);
    let (dir, stem) = (&place.dir, &place.stem);
    let (record, backup) = recorded(target)?;
    let client_text = read(&target.client_config)?;
    let envelope_text = read(&target.envelope_config)?;
    let others = used_by_others(dir, stem, &target.envelope_config)?;
    let plan = plan_uninstall(
        &record,
        client_text.as_deref(),
        backup.as_deref(),
        envelope_text.as_deref(),
        &others,
    )?;
    let how = if plan.exact && plan.client_after.is_none() {
        "deleted: it did not exist before the install"
    } else if plan.exact {
        "restored byte for byte from the backup"
    } else {
        "changed since install: the proxy's entry was removed and the moved servers put back"
    };
    let removed = match plan.removed.is_empty() {
        true => "nothing".to_string(),
        false => plan.removed.join(", "),
    };
    let summary = format!(
        "{}: {how}\nremoved from {}: {removed}\n",
        target.client_config.display(),
        target.envelope_config.display(),
    );
    if dry_run {
        let client = (client_text.as_deref(), plan.client_after.as_deref());
        let envelope = (envelope_text.as_deref(), plan.envelope_after.as_deref());
        return print_dry_run(out, target, client, envelope, &summary);
    }
    match &plan.client_after {
        Some(text) => write(&target.client_config, text)?,
        None => delete(&target.client_config)?,
    }
    if envelope_text.is_some() {
        match &plan.envelope_after {
            Some(text) => write(&target.envelope_config, text)?,
            None => delete(&target.envelope_config)?,
        }
    }
    hand_over_backup(dir, stem, &record, backup.as_deref())?;
    delete(&place.record())?;
    delete(&place.backup())?;
    let _ = std::fs::remove_dir(dir);
    print(out, &summary)
}
