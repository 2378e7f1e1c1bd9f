//! Calls of names the catalog does not route: waiting for the server whose `enabled_tools`
//! the name is reserved for ([`crate::catalog::Catalog::reserved`]) when it is still starting,
//! answering `unavailable` naming a server that is down, or `not_found` naming the tools a
//! name several servers give was exposed as instead, the servers that are down and could
//! offer it, and the servers that list it but whose definition of it was dropped, with why
//! (README, "Error types").

use super::calls::CallOutcome;
use super::Core;
use crate::catalog::Route;
use crate::config::ToolSettings;
use crate::downstream::{CallError, ServerState};
use crate::outcome::Outcome;
use std::time::Duration;

/// How long a call waits, after the server it waited for turned ready, for the server's tools
/// to join the catalog.
const CATALOG_CATCH_UP: Duration = Duration::from_secs(1);

impl Core {
    /// The route of `name` once the server it is reserved for
    /// ([`crate::catalog::Catalog::reserved`]) is ready, when that server is still starting
    /// or restarting: waited for within the tool's `tool_timeout_sec`, as a call to a routed
    /// tool waits for its server to come back; still not ready by then, `Err` with the
    /// (retryable) timeout outcome a routed call gets. `Ok(None)` at once for a name no such
    /// server owns or a server that gave up, and when the ready server does not offer the tool.
    /// Its tools join the catalog when its tool change is handled, just after it turns ready:
    /// the catalog is looked at every 5 ms for up to [`CATALOG_CATCH_UP`] until then.
    pub(super) async fn route_once_started(&self, name: &str) -> Result<Option<Route>, Outcome> {
        let config = self.config();
        let Some(Route { server, tool }) = self.catalog().reserved(name).cloned() else {
            return Ok(None);
        };
        let servers = self.servers();
        let Some(ds) = servers.iter().find(|d| d.name() == &*server) else {
            return Ok(None);
        };
        if !matches!(
            ds.state(),
            ServerState::Starting | ServerState::Restarting { .. }
        ) {
            return Ok(None);
        }
        let timeout = config.tool_settings(&server, &tool).tool_timeout.value;
        let deadline = tokio::time::Instant::now() + timeout;
        match ds.wait_ready(deadline).await {
            Ok(_) => {}
            Err(CallError::Timeout(_)) => {
                return Err(Outcome::timeout(timeout));
            }
            Err(_) => return Ok(None),
        }
        let caught_up = tokio::time::Instant::now() + CATALOG_CATCH_UP;
        loop {
            if let Some(route) = self.catalog().route(name) {
                return Ok(Some(route.clone()));
            }
            if tokio::time::Instant::now() >= caught_up {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// A configured tool whose server did not turn ready within the call's timeout: `outcome`
    /// (a timeout), with that server's settings.
    pub(super) fn unrouted_waited(
        &self,
        name: &str,
        outcome: Outcome,
    ) -> (String, String, ToolSettings, CallOutcome) {
        let (server, tool, settings) = self.reserved_for(name);
        (server, tool, settings, CallOutcome::Outcome(outcome))
    }

    /// The server a name is reserved for ([`crate::catalog::Catalog::reserved`]; "" for
    /// none), its own name of the tool (`name` for none), and the tool's settings.
    pub(super) fn reserved_for(&self, name: &str) -> (String, String, ToolSettings) {
        let catalog = self.catalog();
        let (server, tool) = catalog
            .reserved(name)
            .map_or(("", name), |r| (&*r.server, &*r.tool));
        let settings = self.config().tool_settings(server, tool);
        (server.to_owned(), tool.to_owned(), settings)
    }

    /// A name the catalog does not route: `not_found`, unless it is reserved for a server
    /// ([`crate::catalog::Catalog::reserved`]) that is not ready (it failed to start, is
    /// restarting or still starting): then `unavailable` naming that server, whose tools are
    /// not offered while it is down. A `not_found` of a name several servers give
    /// ([`crate::catalog::Catalog::shared`]) names the names their tools have. Returns the
    /// server ("" for none), its name of the tool (for `not_found`, the name as shown:
    /// [`crate::tool_validation::shown_unknown_name`]), the tool's settings and the outcome.
    pub(super) fn unrouted(&self, name: &str) -> (String, String, ToolSettings, CallOutcome) {
        let config = self.config();
        let catalog = self.catalog();
        let down = catalog.reserved(name).and_then(|route| {
            let reason = self.not_ready_reason(&route.server)?;
            Some((route.server.to_string(), route.tool.to_string(), reason))
        });
        let Some((server, tool, reason)) = down else {
            let settings = config.tool_settings("", name);
            let servers_down = self.servers_down_that_could_offer(&config, name);
            let exposed_as = catalog.shared(name).iter();
            let exposed_as = exposed_as.filter(|n| ***n != *name).map(|n| n.to_string());
            let outcome = CallOutcome::Outcome(Outcome::NoSuchTool {
                servers_down,
                exposed_as: exposed_as.collect(),
                dropped: self.dropped_as(&config, name),
            });
            let shown = crate::tool_validation::shown_unknown_name(name).into_owned();
            return (String::new(), shown, settings, outcome);
        };
        let settings = config.tool_settings(&server, &tool);
        let outcome = CallOutcome::Outcome(Outcome::Unavailable { reason });
        (server, tool, settings, outcome)
    }

    /// The tools that the enabled servers listed under `name` (their `tool_prefix` starts it,
    /// and their `enabled_tools` / `disabled_tools` let the rest through) but whose definitions
    /// were dropped ([`crate::tool_validation`]): a `not_found` answer says why, and that a
    /// retry cannot help.
    fn dropped_as(
        &self,
        config: &crate::config::Config,
        name: &str,
    ) -> Vec<crate::tool_validation::DroppedTool> {
        let servers = self.servers();
        config
            .enabled_servers()
            .filter_map(|s| {
                let tool = name.strip_prefix(s.tool_prefix.as_str())?;
                let ds = servers.iter().find(|d| d.name() == s.name)?;
                s.exposes(tool).then(|| ds.dropped_tool(tool)).flatten()
            })
            .collect()
    }

    /// The enabled servers that are not ready and could offer `name` (their `tool_prefix`
    /// starts it, they have no `enabled_tools` list, and `disabled_tools` does not hide it),
    /// each as `'<server>' (<why>)`: at most three, then `and N more`. A `not_found` answer
    /// names them, since their tools are not offered while they are down.
    fn servers_down_that_could_offer(
        &self,
        config: &crate::config::Config,
        name: &str,
    ) -> Vec<String> {
        let down: Vec<String> = config
            .enabled_servers()
            .filter(|s| s.enabled_tools.is_none())
            .filter(|s| {
                name.strip_prefix(s.tool_prefix.as_str())
                    .is_some_and(|tool| s.exposes(tool))
            })
            .filter_map(|s| {
                Some(format!(
                    "'{}' ({})",
                    s.name,
                    self.not_ready_reason(&s.name)?
                ))
            })
            .collect();
        crate::availability::at_most(down, crate::passthrough::down::SHOWN)
    }

    /// Why the server named `server` is not serving, in words; `None` when it is ready.
    fn not_ready_reason(&self, server: &str) -> Option<String> {
        let servers = self.servers();
        let Some(ds) = servers.iter().find(|d| d.name() == server) else {
            return Some("not started".into());
        };
        match ds.state() {
            ServerState::Ready(_) => None,
            ServerState::Starting => Some("it is still starting".into()),
            ServerState::Restarting { attempt, reason } => {
                Some(format!("restarting (attempt {attempt}) after: {reason}"))
            }
            ServerState::Unavailable { reason } => Some(reason),
            ServerState::Stopped => Some("stopped".into()),
        }
    }
}
