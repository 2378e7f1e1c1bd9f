//! `check`: start every enabled server, print the table of states and tools, stop them.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use super::common::{
    headless_client, headless_proxy, interrupted, load_config, runtime, stop_signal,
};
use super::GlobalArgs;

/// `mcp-envelope check`: start every enabled server (waiting up to each one's
/// startup_timeout_sec), print the table of states and tools, stop them. Exit 0 when every
/// enabled server is ready and every tool the config names is offered, else 1.
pub(super) fn run_check(global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let config = load_config(global)?;
    let rt = runtime()?;
    let report = rt.block_on(async {
        let proxy = headless_proxy(&config, None);
        let started = tokio::select! {
            _ = proxy.start_servers(headless_client("mcp-envelope-check")) => true,
            _ = stop_signal() => false,
        };
        let mut report = started.then(|| crate::check::report(&config, &proxy));
        if let Some(report) = report.as_mut() {
            crate::check::add_offered(report, proxy.offered().await);
            crate::check::check_transcript_dir(report, &config);
        }
        proxy.shutdown().await;
        report
    });
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    let Some(report) = report else {
        return Ok(interrupted("check"));
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "config: {}\n", config.path.display()).context("writing stdout")?;
    stdout
        .write_all(crate::check::render(&report).as_bytes())
        .context("writing stdout")?;
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
