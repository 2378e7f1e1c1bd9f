//! The core's side of a config reload ([`crate::reload`]): the new config replaces the
//! running one, servers stop, restart and start, and every session is told what changed.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::core::ServerTask;
use super::Core;
use crate::config::Config;
use crate::downstream::{Downstream, Retirement};
use crate::reload::{server_changes, Changes};

/// Added to the longest tools/call timeout of a retired server's calls: how long its instance
/// may drain at most (its calls end by their own timeouts before that).
pub const DRAIN_MARGIN: Duration = Duration::from_secs(5);

impl Core {
    /// Applies `new` to the running proxy and returns which servers it started, stopped and
    /// restarted. Settings (budgets, timeouts, media, allow/deny lists, prefixes, tool tables)
    /// apply from the next call and the next `tools/list` on; servers whose launch changed
    /// restart, added ones start, removed ones stop. A restarted or removed server's instance
    /// drains first ([`crate::downstream::Retirement`]): the calls already sent to it run on to
    /// their answers, new calls go to the new instance (a removed server's tools are gone),
    /// then its process stops. Every session gets `notifications/tools/list_changed` when the
    /// exposed tools changed, `notifications/prompts/list_changed` when the prompts did, and
    /// `notifications/resources/list_changed` when servers came or went (MCP 2025-11-25,
    /// "Server Features"). Servers still starting report their tools when ready, as at start.
    /// Before the first start only the config (and the catalog it filters) is replaced: the
    /// first start uses it.
    pub async fn apply_config(self: &Arc<Self>, new: Config) -> Changes {
        let new = Arc::new(new);
        let old = self.config();
        let changes = server_changes(&old, &new);
        self.set_config(new.clone());
        if !self.can_start_later() {
            if self.rebuild_catalog() {
                self.list_changed("notifications/tools/list_changed").await;
            }
            return changes;
        }
        let leaving = self.take_server_tasks(&changes);
        let running = self.servers();
        let servers: Vec<Downstream> = new
            .enabled_servers()
            .filter_map(|s| {
                if changes.start.contains(&s.name) || changes.restart.contains(&s.name) {
                    self.spawn_server(&new, s)
                } else {
                    running.iter().find(|d| d.name() == s.name).cloned()
                }
            })
            .collect();
        for (name, stop, task) in leaving {
            if let Some(ds) = running.iter().find(|d| d.name() == name) {
                let restarted = changes.restart.contains(&name);
                ds.retire(Retirement {
                    successor: servers
                        .iter()
                        .find(|d| restarted && d.name() == name)
                        .cloned(),
                    drain_limit: drain_limit(&old, &new, &name),
                    cut: self.stopping(),
                });
            }
            let _ = stop.send(true);
            // Kept, nameless, for the shutdown to wait for; a later reload does not find it.
            let mut tasks = self.server_tasks.lock().unwrap();
            tasks.retain(|(n, _, t)| !n.is_empty() || !t.is_finished());
            tasks.push((String::new(), stop, task));
        }
        self.set_servers(servers);
        if self.rebuild_catalog() {
            self.list_changed("notifications/tools/list_changed").await;
        }
        let up = self.upstream(None);
        let lists = self
            .passthrough
            .after_reload(&up, !changes.is_empty())
            .await;
        for method in lists {
            self.list_changed(method).await;
        }
        changes
    }

    /// Takes the tasks of the servers that stop or restart out of the running ones.
    fn take_server_tasks(&self, changes: &Changes) -> Vec<ServerTask> {
        let mut tasks = self.server_tasks.lock().unwrap();
        let (leaving, staying) = std::mem::take(&mut *tasks)
            .into_iter()
            .partition(|(n, _, _)| changes.stop.contains(n) || changes.restart.contains(n));
        *tasks = staying;
        leaving
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

/// How long a retired instance of `server` may drain: the longest tools/call timeout one of
/// its calls may have, under the old or the new config, plus [`DRAIN_MARGIN`].
fn drain_limit(old: &Config, new: &Config, server: &str) -> Duration {
    let mut longest = Duration::ZERO;
    for config in [old, new] {
        let tools = config
            .server(server)
            .into_iter()
            .flat_map(|s| s.tools.keys());
        for tool in std::iter::once("").chain(tools.map(String::as_str)) {
            longest = longest.max(config.tool_settings(server, tool).tool_timeout.value);
        }
    }
    longest + DRAIN_MARGIN
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use serde_json::{json, Value};
    use tokio::sync::mpsc;

    use super::super::session::Session;
    use super::super::{SessionOutput, OUTPUT_QUEUE};
    use super::*;

    const WAIT: Duration = Duration::from_secs(60);

    /// A TOML table for the fixture server named `name`, its tools prefixed `name_`.
    fn server(name: &str) -> String {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fixture_server.py");
        format!(
            "[mcp_servers.{name}]\ncommand = \"python3\"\nargs = [{:?}, \"--name\", \"{name}\"]\ntool_prefix = \"{name}_\"\n",
            script.display().to_string()
        )
    }

    fn config(text: &str) -> Config {
        Config::parse(text, Path::new("test.toml"), &|_| None).expect("valid test config")
    }

    /// One client of the core: its session and what the session sends it.
    struct Client {
        session: Arc<Session>,
        out: mpsc::Receiver<Vec<u8>>,
    }

    impl Client {
        async fn open(core: &Arc<Core>) -> Client {
            let (lines, out) = mpsc::channel(OUTPUT_QUEUE);
            let session = core.open_session(SessionOutput { lines, gate: None });
            let mut c = Client { session, out };
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "in-process", "version": "1"}}});
            c.send(&init).await;
            assert!(c.recv().await["result"].is_object());
            c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await;
            c
        }

        async fn send(&self, message: &Value) {
            self.session
                .feed_line(message.to_string().into_bytes())
                .await;
        }

        async fn recv(&mut self) -> Value {
            let line = tokio::time::timeout(WAIT, self.out.recv()).await;
            serde_json::from_slice(&line.expect("a message in time").unwrap()).unwrap()
        }

        /// Waits for `notifications/tools/list_changed`, then lists the tools.
        async fn tools_after_list_changed(&mut self, id: i64) -> Vec<String> {
            while self.recv().await["method"] != "notifications/tools/list_changed" {}
            self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}))
                .await;
            let list = loop {
                let m = self.recv().await;
                if m["id"] == id {
                    break m;
                }
            };
            let tools = list["result"]["tools"].as_array().unwrap();
            tools
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect()
        }
    }

    #[tokio::test]
    async fn every_session_hears_of_added_and_removed_servers() {
        let core = Core::new(Arc::new(config(&server("fx"))), None);
        let mut clients = [Client::open(&core).await, Client::open(&core).await];
        let both = format!("{}{}", server("fx"), server("fy"));
        let changes = core.apply_config(config(&both)).await;
        assert_eq!(changes.start, ["fy"]);
        for c in &mut clients {
            let names = c.tools_after_list_changed(1).await;
            assert!(names.contains(&"fy_echo".to_owned()), "{names:?}");
        }
        let changes = core.apply_config(config(&server("fy"))).await;
        assert_eq!(changes.stop, ["fx"]);
        for c in &mut clients {
            let names = c.tools_after_list_changed(2).await;
            assert!(!names.contains(&"fx_echo".to_owned()), "{names:?}");
            assert!(names.contains(&"fy_echo".to_owned()), "{names:?}");
        }
        assert_eq!(core.servers().len(), 1);
        core.shutdown().await;
    }

    #[tokio::test]
    async fn a_new_prefix_renames_the_servers_tools_for_every_session() {
        let core = Core::new(Arc::new(config(&server("fx"))), None);
        let mut client = Client::open(&core).await;
        let renamed = server("fx").replace("tool_prefix = \"fx_\"", "tool_prefix = \"p_\"");
        let changes = core.apply_config(config(&renamed)).await;
        assert!(changes.start.is_empty() && changes.stop.is_empty());
        let names = client.tools_after_list_changed(1).await;
        assert!(names.contains(&"p_echo".to_owned()), "{names:?}");
        assert!(!names.contains(&"fx_echo".to_owned()), "{names:?}");
        for (id, name, says) in [(2, "p_echo", "hi"), (3, "fx_echo", "not_found: no tool")] {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": {"text": "hi"}}});
            client.send(&call).await;
            let answer = loop {
                let m = client.recv().await;
                if m["id"] == id {
                    break m;
                }
            };
            let content = answer["result"]["structuredContent"]["content"].as_str();
            assert!(content.unwrap().starts_with(says), "{name}: {answer}");
        }
        // The first prefix again: the tools get their first names back.
        core.apply_config(config(&server("fx"))).await;
        let names = client.tools_after_list_changed(4).await;
        assert!(names.contains(&"fx_echo".to_owned()), "{names:?}");
        core.shutdown().await;
    }
}
