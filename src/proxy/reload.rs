//! The core's side of a config reload ([`crate::reload`]): the new config replaces the
//! running one, servers stop, restart and start, and every session is told what changed.

use std::sync::Arc;

use tokio::sync::watch;

use super::Core;
use crate::config::Config;
use crate::reload::{server_changes, Changes};

impl Core {
    /// Applies `new` to the running proxy and returns which servers it started, stopped and
    /// restarted. Settings (budgets, timeouts, media, allow/deny lists, prefixes, tool tables)
    /// apply from the next call and the next `tools/list` on; servers whose launch changed
    /// restart, added ones start, removed ones stop (their calls in flight end with an error
    /// envelope). Every session gets `notifications/tools/list_changed` when the exposed tools
    /// changed, `notifications/prompts/list_changed` when the prompts did, and
    /// `notifications/resources/list_changed` when servers came or went (MCP 2025-11-25,
    /// "Server Features"). Servers still starting report their tools when ready, as at start.
    /// Before the first start only the config is replaced: the first start uses it.
    pub async fn apply_config(self: &Arc<Self>, new: Config) -> Changes {
        let new = Arc::new(new);
        let changes = server_changes(&self.config(), &new);
        self.set_config(new.clone());
        if !self.can_start_later() {
            self.rebuild_catalog();
            return changes;
        }
        // Removed servers' tools go before their processes do.
        if self.rebuild_catalog() {
            self.list_changed("notifications/tools/list_changed").await;
        }
        for name in changes.stop.iter().chain(&changes.restart) {
            self.stop_server(name).await;
        }
        let running = self.servers();
        let servers = new
            .enabled_servers()
            .filter_map(|s| {
                if changes.start.contains(&s.name) || changes.restart.contains(&s.name) {
                    self.spawn_server(&new, s)
                } else {
                    running.iter().find(|d| d.name() == s.name).cloned()
                }
            })
            .collect();
        self.set_servers(servers);
        if self.rebuild_catalog() {
            self.list_changed("notifications/tools/list_changed").await;
        }
        let up = self.upstream(None);
        let lists = self.passthrough.after_reload(&up, !changes.is_empty()).await;
        for method in lists {
            self.list_changed(method).await;
        }
        changes
    }

    /// Stops the server `name` alone (stdin closed, SIGTERM, SIGKILL) and waits for its task.
    async fn stop_server(&self, name: &str) {
        let entry = {
            let mut tasks = self.server_tasks.lock().unwrap();
            let i = tasks.iter().position(|(n, _, _)| n == name);
            i.map(|i| tasks.remove(i))
        };
        if let Some((_, stop, task)) = entry {
            let _ = stop.send(true);
            let _ = task.await;
        }
    }

    /// Becomes `true` when the core shuts down ([`Core::shutdown`]).
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// Watches the config file while serving and applies each valid edit (see
    /// [`crate::reload::watch`]); ends when the core shuts down. Call once per process.
    pub fn watch_config(self: &Arc<Self>) {
        tokio::spawn(crate::reload::watch(self.clone()));
    }
}
