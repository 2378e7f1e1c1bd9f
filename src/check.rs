//! `mcp-envelope check`: what the proxy would offer with a config, as a plain-text table.
//!
//! [`report`] takes a snapshot of a [`Core`] whose servers were started (their state, startup
//! time, stderr tail and the catalog's tools with their effective settings) into a
//! [`CheckReport`] of plain data; [`render`] turns that into the table the command prints. Both
//! are free of I/O; the binary starts and stops the servers. Source: issue 7 of the project.
//!
//! # Table
//!
//! ```text
//! SERVER / TOOL  STATE     STARTUP  CHAR_BUDGET    TOKEN_BUDGET            TIMEOUT
//! broken         failed    -
//!   reason: restarting (attempt 1): server 'broken' exited (exit status: 3)
//!   stderr: boom
//! fx             ready     412 ms
//!   rows                            40 (defaults)  -                       60s (built-in)
//!   fx_tokens                       -              300 cl100k_base (tool)  60s (built-in)
//! old            disabled
//!
//! 1 of 2 enabled server(s) ready, 2 tool(s)
//! ```
//!
//! Tools are listed under their server by the name the client sees (after `tool_prefix` and
//! collision renaming), each budget and timeout followed by where it came from: `tool`,
//! `server`, `defaults` or `built-in`. A token budget names its tokenizer; `-` marks a budget
//! that does not apply (no token budget, or the built-in character budget beside a token one).
//! `PROTOCOL` is the protocol version a ready server speaks and its era: `modern` (it answered
//! `server/discover`, MCP 2026-07-28) or `legacy` (opened with `initialize`).

use std::collections::HashMap;
use std::time::Duration;

use crate::catalog::Catalog;
use crate::config::{Config, ServerConfig, Setting, Source};
use crate::downstream::{Downstream, ServerState};
use crate::passthrough::inventory::Offered;
use crate::proxy::Core;
use crate::settings::BudgetRules;

/// Where a supervisor's reason starts quoting the server's stderr (left out of the table,
/// which lists the stderr lines themselves).
const STDERR_IN_REASON: &str = "; last stderr: ";

/// How many stderr lines of a failed server the table shows.
pub const STDERR_LINES_SHOWN: usize = 5;

/// Everything `check` found out, in config order.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckReport {
    /// Every configured server (enabled or not), in config file order.
    pub servers: Vec<ServerReport>,
    /// What is wrong across servers, e.g. `tool name 'echo' is offered by more than one server;
    /// server 'b' exposes it as 'b__echo'`; first the config's own warnings, located
    /// (`config.toml:7:19: mcp_servers.git.disabled_tools: …`, [`Config::warning_lines`]).
    pub warnings: Vec<String>,
    /// What in the config cannot work although it loaded, located as config errors are
    /// (`config.toml:2:8: transcript.path: …`, [`check_transcript_dir`]): the command exits 1.
    pub config_errors: Vec<String>,
}

/// One server's line of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerReport {
    /// The server's config name.
    pub name: String,
    /// Its state when the check looked.
    pub status: ServerStatus,
    /// How long its last successful start took (spawn to tools listed); `None` if it never
    /// started.
    pub startup: Option<Duration>,
    /// The protocol version in use and its era, e.g. `2026-07-28 (modern)`; `None` unless ready.
    pub protocol: Option<String>,
    /// Its prompts (names the client sees), resources and templates; empty unless ready and
    /// filled by [`add_offered`].
    pub offered: Offered,
    /// The last lines of its stderr, oldest first (only shown when it failed).
    pub stderr_tail: Vec<String>,
    /// Its exposed tools, in catalog order (empty unless ready).
    pub tools: Vec<ToolReport>,
    /// Tools it listed that are not offered because they are malformed, e.g.
    /// `tool "t" dropped: `inputSchema` is not a JSON object`, or need task-augmented execution.
    pub warnings: Vec<String>,
    /// Config entries naming tools it does not offer (likely typos: a typo in
    /// `disabled_tools` leaves the tool exposed), from
    /// [`ServerConfig::unknown_tool_messages`]: the config's intent is not carried out, and the
    /// command exits 1.
    pub errors: Vec<String>,
}

/// A server's state as `check` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    /// Initialized and its tools listed.
    Ready,
    /// Not ready within its `startup_timeout_sec`; `reason` is the supervisor's reason (the
    /// state label, then why the last start ended).
    Failed {
        /// Why, e.g. `restarting (attempt 2): server 'x' exited (exit status: 3); last stderr: …`.
        reason: String,
    },
    /// `enabled = false`: not started, does not count against the exit code.
    Disabled,
}

/// One exposed tool with its effective settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReport {
    /// The name the client sees.
    pub name: String,
    /// Effective envelope budget, characters, and its source.
    pub char_budget: Setting<usize>,
    /// `token_budget` (with its source), `tokenizer`, `long_rows`, `text_rows`.
    pub budget_rules: BudgetRules,
    /// Effective tools/call timeout and its source.
    pub tool_timeout: Setting<Duration>,
}

impl CheckReport {
    /// Whether every enabled server is ready.
    pub fn all_ready(&self) -> bool {
        self.servers
            .iter()
            .all(|s| matches!(s.status, ServerStatus::Ready | ServerStatus::Disabled))
    }

    /// How many config entries name tools their (ready) server does not offer.
    pub fn errors(&self) -> usize {
        self.servers.iter().map(|s| s.errors.len()).sum()
    }

    /// The command's exit 0: every enabled server is ready, every tool name in the config
    /// is one its server offers, and nothing else in the config fails ([`Self::config_errors`]).
    pub fn passed(&self) -> bool {
        self.all_ready() && self.errors() == 0 && self.config_errors.is_empty()
    }
}

/// The reason a non-ready state gives, prefixed with its label; `None` for `ready`.
pub fn failure_reason(state: &ServerState) -> Option<String> {
    match state {
        ServerState::Ready(conn) if !conn.is_closed() => None,
        ServerState::Ready(_) => Some("ready, but its connection just closed".into()),
        ServerState::Starting => Some("still starting when startup_timeout_sec ran out".into()),
        ServerState::Restarting { attempt, reason } => {
            Some(format!("restarting (attempt {attempt}): {reason}"))
        }
        ServerState::Unavailable { reason } => Some(format!("unavailable: {reason}")),
        ServerState::Stopped => Some("stopped".into()),
    }
}

impl ServerReport {
    /// A line with a name and a state only: no startup time, protocol, tools or messages.
    pub fn bare(name: &str, status: ServerStatus) -> Self {
        ServerReport {
            name: name.to_owned(),
            status,
            startup: None,
            protocol: None,
            offered: Default::default(),
            stderr_tail: Vec::new(),
            tools: Vec::new(),
            warnings: Vec::new(),
            errors: Vec::new(),
        }
    }
}

/// Snapshot of a proxy after [`Core::start_servers`]: each configured server's state, startup
/// time, stderr tail and exposed tools with settings resolved from `config`. No I/O.
pub fn report(config: &Config, proxy: &Core) -> CheckReport {
    let catalog = proxy.catalog();
    let servers = config
        .servers
        .iter()
        .map(
            |server| match proxy.servers().iter().find(|d| d.name() == server.name) {
                Some(ds) => server_report(config, &catalog, server, ds),
                None => ServerReport::bare(&server.name, ServerStatus::Disabled),
            },
        )
        .collect::<Vec<ServerReport>>();
    // The catalog's unknown tool names are each server's errors already.
    let catalog_warnings = proxy
        .catalog_warnings()
        .into_iter()
        .filter(|w| !servers.iter().any(|s| s.errors.contains(w)));
    let warnings = config.warning_lines().into_iter().chain(catalog_warnings);
    let warnings = warnings.collect();
    CheckReport {
        servers,
        warnings,
        config_errors: Vec::new(),
    }
}

/// Adds to `report` an error when the config's `[transcript] path` cannot name a file the
/// proxy can record to: it is empty (it names the config's own directory), it is an existing
/// directory, or its directory does not exist (or is no directory). The proxy would log that
/// once and go on without a transcript. Located as a config error is: file, line, column,
/// `transcript.path`. Reads the file system (at most two `stat`s).
pub fn check_transcript_dir(report: &mut CheckReport, config: &Config) {
    let Some(path) = &config.transcript.path else {
        return;
    };
    let Some(message) = transcript_path_problem(path, config.transcript_path_empty) else {
        return;
    };
    let (line, column) = config.transcript_path_at.unzip();
    let error = crate::config::ConfigError {
        path: config.path.clone(),
        line,
        column,
        key: Some("transcript.path".into()),
        message,
    };
    report.config_errors.push(error.render());
}

/// What keeps the proxy from recording to the transcript at `path` (resolved; `empty` when
/// written as `""`), or `None` when nothing does as far as one can tell without writing.
fn transcript_path_problem(path: &std::path::Path, empty: bool) -> Option<String> {
    if empty {
        return Some(format!(
            "the transcript path is empty, which names the config's directory {path:?}, not a \
             file, so no transcript can be recorded; give a file's path, such as \
             \"calls.jsonl\", or remove the key"
        ));
    }
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Some(format!(
            "the transcript path {path:?} is a directory, not a file, so no transcript can be \
             recorded there; give a file's path, such as {:?}",
            path.join("calls.jsonl")
        ));
    }
    let refused = |why: &str| {
        Some(format!(
            "the transcript path {path:?} {why}, so `serve` and `call` would refuse to start"
        ))
    };
    // What `serve` refuses at start-up (`crate::private_file::open_for_append`), told without
    // creating or changing anything.
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            return refused("is a symbolic link, which the transcript writer does not follow")
        }
        Ok(m) if !m.is_file() => {
            return refused("is not a regular file (a FIFO, a socket or a device)")
        }
        Ok(_) if !may_write(path) => return refused("cannot be written by this user"),
        Ok(_) => return None,
        Err(_) => {}
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty())?;
    let why = match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() && may_write(dir) => return None,
        Ok(m) if m.is_dir() => "cannot be written by this user (the file cannot be created)",
        Ok(_) => "is not a directory",
        Err(_) => "does not exist",
    };
    Some(format!(
        "the transcript's directory {dir:?} {why}, so no transcript can be recorded there; \
         create the directory or change the path"
    ))
}

/// Whether this process may write `path` (a file: append to it; a directory: create a file in
/// it), as `access(2)` with `W_OK` tells: the real user's permissions, without opening it.
fn may_write(path: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) reads the NUL-terminated path, which lives across the call.
    unsafe { libc::access(c_path.as_ptr(), libc::W_OK) == 0 }
}

/// The report line of one started server.
fn server_report(
    config: &Config,
    catalog: &Catalog,
    server: &ServerConfig,
    ds: &Downstream,
) -> ServerReport {
    let status = match failure_reason(&ds.state()) {
        None => ServerStatus::Ready,
        Some(reason) => ServerStatus::Failed { reason },
    };
    let tools = if status == ServerStatus::Ready {
        tool_reports(config, catalog, &server.name)
    } else {
        Vec::new()
    };
    let protocol = match ds.state() {
        ServerState::Ready(conn) if status == ServerStatus::Ready => conn
            .era()
            .map(|era| format!("{} ({})", era.version(), era.label())),
        _ => None,
    };
    ServerReport {
        name: server.name.clone(),
        status,
        protocol,
        startup: ds.startup_duration(),
        offered: Default::default(),
        stderr_tail: ds.stderr_tail(),
        warnings: server_warnings(server, ds),
        tools,
        errors: ds.tools().map_or_else(Vec::new, |listed| {
            let offered: Vec<&str> = listed.iter().map(|t| t.name()).collect();
            server.unknown_tool_messages(&offered)
        }),
    }
}

/// The catalog's tools of server `name`, with their settings; not one exposed under the page
/// tool's name, which the client does not get (the page tool answers that name).
fn tool_reports(config: &Config, catalog: &Catalog, name: &str) -> Vec<ToolReport> {
    let paging = &config.paging;
    let hidden = |exposed: &str| paging.enabled && exposed == paging.tool_name;
    catalog
        .names()
        .iter()
        .filter(|exposed| !hidden(exposed))
        .filter_map(|exposed| {
            let route = catalog.route(exposed)?;
            (*route.server == *name).then(|| {
                let settings = config.tool_settings(&route.server, &route.tool);
                ToolReport {
                    name: String::from(&**exposed),
                    char_budget: settings.char_budget,
                    budget_rules: settings.budget_rules,
                    tool_timeout: settings.tool_timeout,
                }
            })
        })
        .collect()
}

/// What is wrong with a server's tools: tools that need task-augmented execution, and the
/// warnings from checking its tool list.
fn server_warnings(server: &ServerConfig, ds: &Downstream) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(listed) = ds.tools() {
        let task_only = listed.iter().filter(|t| t.requires_task()).filter_map(|t| {
            let name = t.name();
            server.exposes(name).then(|| {
                format!("tool '{name}' requires task-augmented execution, which is not proxied; not listed")
            })
        });
        warnings.extend(task_only);
    }
    let own = format!("server '{}': ", server.name);
    warnings.extend(
        ds.tool_warnings()
            .iter()
            .map(|w| w.strip_prefix(&own).unwrap_or(w).to_owned()),
    );
    warnings
}

/// Puts each server's prompts, resources and templates (read by
/// [`crate::proxy::Core::offered`]) into its line of the report.
pub fn add_offered(report: &mut CheckReport, mut offered: HashMap<String, Offered>) {
    for server in &mut report.servers {
        if let Some(o) = offered.remove(&server.name) {
            server.offered = o;
        }
    }
}

/// The CHAR_BUDGET and TOKEN_BUDGET cells of a tool: `600 (tool)`, `500 o200k_base (server)`,
/// `-` for a budget that does not apply (the built-in character budget beside a token budget).
fn budget_cells(t: &ToolReport) -> [String; 2] {
    let token = t.budget_rules.token_budget;
    let chars = match (token, t.char_budget.source) {
        (Some(_), Source::BuiltIn) => "-".to_owned(),
        _ => format!("{} ({})", t.char_budget.value, t.char_budget.source),
    };
    let tokens = token.map_or_else(
        || "-".to_owned(),
        |b| {
            format!(
                "{} {} ({})",
                b.value, t.budget_rules.tokenizer.value, b.source
            )
        },
    );
    [chars, tokens]
}

/// A row of the table: its cells, or a free-text line written as is.
type Row = Result<[String; 7], String>;

/// What the summary line counts.
#[derive(Default)]
struct Totals {
    enabled: usize,
    ready: usize,
    tools: usize,
    /// Prompts, resources, resource templates.
    offered: [usize; 3],
}

/// The table `check` prints (see the module doc), ending with a summary line and a newline.
pub fn render(report: &CheckReport) -> String {
    let header = [
        "SERVER / TOOL",
        "STATE",
        "PROTOCOL",
        "STARTUP",
        "CHAR_BUDGET",
        "TOKEN_BUDGET",
        "TIMEOUT",
    ];
    let mut rows: Vec<Row> = vec![Ok(header.map(String::from))];
    let mut totals = Totals::default();
    for s in &report.servers {
        rows.extend(server_rows(s, &mut totals));
    }
    rows.extend(report.warnings.iter().map(|w| Err(format!("warning: {w}"))));
    rows.extend(
        report
            .config_errors
            .iter()
            .map(|e| Err(format!("error: {e}"))),
    );
    let mut out = layout(&rows);
    if report.servers.is_empty() {
        out.push_str("(no servers configured)\n");
    }
    let Totals {
        enabled,
        ready,
        tools,
        offered,
    } = totals;
    out.push_str(&format!(
        "\n{ready} of {enabled} enabled server(s) ready, {tools} tool(s)"
    ));
    if offered.iter().any(|n| *n > 0) {
        let [prompts, resources, templates] = offered;
        out.push_str(&format!(
            ", {prompts} prompt(s), {resources} resource(s), {templates} resource template(s)"
        ));
    }
    let errors = report.errors();
    if errors > 0 {
        out.push_str(&format!(
            "; {errors} config entr{} naming tools the server does not offer",
            if errors == 1 { "y" } else { "ies" }
        ));
    }
    out.push('\n');
    out
}

/// The rows of one server: its line, then its tools and what it offers (ready), or why it
/// failed with the end of its stderr; then its warnings.
fn server_rows(s: &ServerReport, totals: &mut Totals) -> Vec<Row> {
    let startup = match (&s.status, s.startup) {
        (ServerStatus::Disabled, _) => String::new(),
        (_, Some(d)) => format!("{} ms", d.as_millis()),
        (_, None) => "-".into(),
    };
    let state = match &s.status {
        ServerStatus::Ready => "ready",
        ServerStatus::Failed { .. } => "failed",
        ServerStatus::Disabled => "disabled",
    };
    if s.status != ServerStatus::Disabled {
        totals.enabled += 1;
    }
    let protocol = s.protocol.clone().unwrap_or_default();
    let (name, state) = (s.name.clone(), state.to_owned());
    let blank = String::new;
    let mut rows = vec![Ok([
        name,
        state,
        protocol,
        startup,
        blank(),
        blank(),
        blank(),
    ])];
    match &s.status {
        ServerStatus::Ready => {
            totals.ready += 1;
            if s.tools.is_empty() {
                rows.push(Err("  (no tools exposed)".into()));
            }
            for t in &s.tools {
                totals.tools += 1;
                let [chars, tokens] = budget_cells(t);
                let timeout = format!(
                    "{} ({})",
                    envelope_core::mapping::seconds_text(t.tool_timeout.value),
                    t.tool_timeout.source
                );
                let name = format!("  {}", t.name);
                rows.push(Ok([
                    name,
                    blank(),
                    blank(),
                    blank(),
                    chars,
                    tokens,
                    timeout,
                ]));
            }
            rows.extend(offered_lines(&s.offered).into_iter().map(Err));
            let lists = [
                &s.offered.prompts,
                &s.offered.resources,
                &s.offered.templates,
            ];
            for (total, list) in totals.offered.iter_mut().zip(lists) {
                *total += list.len();
            }
        }
        ServerStatus::Failed { reason } => {
            // The stderr lines follow: the reason's own copy of them would say it twice.
            let reason = reason
                .split_once(STDERR_IN_REASON)
                .map_or(reason.as_str(), |r| r.0);
            rows.push(Err(format!("  reason: {reason}")));
            let start = s.stderr_tail.len().saturating_sub(STDERR_LINES_SHOWN);
            if s.stderr_tail.is_empty() {
                rows.push(Err("  stderr: (none)".into()));
            }
            for line in &s.stderr_tail[start..] {
                rows.push(Err(format!("  stderr: {line}")));
            }
        }
        ServerStatus::Disabled => {}
    }
    rows.extend(s.errors.iter().map(|e| Err(format!("  error: {e}"))));
    rows.extend(s.warnings.iter().map(|w| Err(format!("  warning: {w}"))));
    rows
}

/// The rows as text: cells padded to their column's width (in characters), two spaces
/// apart, trailing spaces trimmed; one line per row.
fn layout(rows: &[Row]) -> String {
    let mut widths = [0usize; 7];
    for cells in rows.iter().flatten() {
        for (w, c) in widths.iter_mut().zip(cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        match row {
            Ok(cells) => {
                let mut line = String::new();
                for (i, (w, c)) in widths.iter().zip(cells).enumerate() {
                    if i > 0 {
                        line.push_str("  ");
                    }
                    line.push_str(c);
                    line.extend(std::iter::repeat_n(' ', w - c.chars().count()));
                }
                out.push_str(line.trim_end());
            }
            Err(text) => out.push_str(text),
        }
        out.push('\n');
    }
    out
}

/// The lines under a ready server for its prompts, resources, templates and the lists that
/// could not be read.
fn offered_lines(o: &Offered) -> Vec<String> {
    let kinds = [
        ("prompt", &o.prompts),
        ("resource", &o.resources),
        ("template", &o.templates),
        ("warning", &o.errors),
    ];
    kinds
        .into_iter()
        .flat_map(|(kind, items)| items.iter().map(move |i| format!("  {kind}: {i}")))
        .collect()
}

#[cfg(test)]
mod tests;
