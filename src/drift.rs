//! `replay --live` over a config: the pure comparison is [`envelope_core::drift`] (re-exported
//! here); [`compare`] takes the config and gives it the recorded tool's current settings.

pub use envelope_core::drift::*;

use crate::config::Config;
use crate::transcript::CallRecord;

/// Compares a recorded call with the same call made live (`live` must be the live call's
/// record); both envelopes are recomputed with `config`'s budgets for the recorded tool
/// ([`envelope_core::drift::compare`]).
pub fn compare(
    recorded: &CallRecord,
    live: &CallRecord,
    config: &Config,
    opts: DriftOptions,
) -> Verdict {
    let settings = config.tool_settings(&recorded.server, &recorded.server_tool);
    envelope_core::drift::compare(recorded, live, settings, opts)
}

#[cfg(test)]
mod tests;
