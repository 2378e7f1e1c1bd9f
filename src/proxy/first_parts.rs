//! The session's first catalog, made in parts: while the servers first start, each server's
//! share of the catalog ([`ToolsPart`]: its tools' names, routes and spliced text) is made when
//! its list arrives (in the server's own task, [`Core::listed_hook`]), so that after the last server's list only the join is left
//! ([`Catalog::build_first`]). A part is used only for the config and the very list it was
//! made from; any other server's part is made when the catalog is built. Once the first
//! catalog is built no part is made or kept.

use std::sync::Arc;

use super::Core;
use crate::catalog::{ServerTools, ToolsPart};
use crate::config::Config;
use crate::downstream::ListedHook;
use crate::server_tool::ServerTool;

/// A part made ahead, with what it was made from: the config (its prefix and filter) and the
/// server's list, both by identity.
pub(super) struct ReadyPart {
    config: Arc<Config>,
    tools: Arc<Vec<ServerTool>>,
    part: ToolsPart,
}

impl Core {
    /// What each server's task calls when it keeps a listing of its tools
    /// ([`Core::prepare_part`]); it holds the core weakly.
    pub(super) fn listed_hook(&self) -> ListedHook {
        let core = self.me.clone();
        ListedHook(Arc::new(move |server, tools| {
            if let Some(core) = core.upgrade() {
                core.prepare_part(server, tools);
            }
        }))
    }

    /// Makes `server`'s share of the first catalog from the list `tools` it just gave, while
    /// the other servers still start; nothing once the first catalog's inputs are settled
    /// ([`Core::catalog_settled`]) or when the running config has no such server.
    pub(super) fn prepare_part(&self, server: &str, tools: &Arc<Vec<ServerTool>>) {
        if self.catalog_settled() {
            return;
        }
        let config = self.config();
        let Some(settings) = config.server(server) else {
            return;
        };
        let exposes = |tool: &str| settings.exposes(tool);
        let part = ToolsPart::new(&ServerTools {
            server,
            prefix: &settings.tool_prefix,
            tools,
            exposes: &exposes,
            reserved: settings.enabled_tools.as_deref(),
        });
        let mut ready = self.ready_parts.lock().unwrap();
        // Checked again under the lock: the first catalog takes the parts under it.
        if self.catalog_settled() {
            return;
        }
        ready.retain(|r| !r.part.is_of(server));
        ready.push(ReadyPart {
            config: config.clone(),
            tools: tools.clone(),
            part,
        });
    }

    /// The parts of the first catalog for `inputs` (built from `config`, each server's list in
    /// `lists`, in the same order): the part made ahead from the same config and list, else
    /// one made now. Every part made ahead is dropped from the core.
    pub(super) fn first_parts(
        &self,
        config: &Arc<Config>,
        lists: &[(String, Arc<Vec<ServerTool>>)],
        inputs: &[ServerTools<'_, ServerTool>],
    ) -> Vec<ToolsPart> {
        let mut ready = std::mem::take(&mut *self.ready_parts.lock().unwrap());
        let made_from = |r: &ReadyPart, (name, tools): &(String, Arc<Vec<ServerTool>>)| {
            r.part.is_of(name) && Arc::ptr_eq(&r.config, config) && Arc::ptr_eq(&r.tools, tools)
        };
        lists
            .iter()
            .zip(inputs)
            .map(
                |(list, input)| match ready.iter().position(|r| made_from(r, list)) {
                    Some(at) => ready.swap_remove(at).part,
                    None => ToolsPart::new(input),
                },
            )
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::exposed_names::ExposedNames;
    use std::path::Path;

    fn config() -> Arc<Config> {
        let text = "[mcp_servers.a]\ncommand = \"x\"\n";
        Arc::new(Config::parse(text, Path::new("t.toml"), &|_| None).unwrap())
    }

    fn tools(name: &str) -> Arc<Vec<ServerTool>> {
        let tool = serde_json::json!({"name": name, "inputSchema": {"type": "object"}});
        Arc::new(vec![ServerTool::from_value(&tool).unwrap()])
    }

    /// The names of the first catalog of server `a` (list `list`) built from `core`'s parts.
    fn first_names(core: &Core, config: &Arc<Config>, list: &Arc<Vec<ServerTool>>) -> Vec<String> {
        let all = |_: &str| true;
        let inputs = [ServerTools {
            server: "a",
            prefix: "",
            tools: list,
            exposes: &all,
            reserved: None,
        }];
        let lists = [("a".to_owned(), list.clone())];
        let parts = core.first_parts(config, &lists, &inputs);
        let (catalog, _) = Catalog::build_first(&inputs, parts, &mut ExposedNames::default());
        catalog.names().iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_part_made_ahead_is_used_only_for_its_own_config_and_list() {
        let (config, list) = (config(), tools("now"));
        let core = Core::new(config.clone(), None);
        // A part made from another list's tools, filed under this config and list: used, so
        // the catalog has its tool (which shows that the part made ahead was taken).
        let ahead = |config: &Arc<Config>| ReadyPart {
            config: config.clone(),
            tools: list.clone(),
            part: ToolsPart::new(&ServerTools {
                server: "a",
                prefix: "",
                tools: &tools("ahead"),
                exposes: &|_: &str| true,
                reserved: None,
            }),
        };
        core.ready_parts.lock().unwrap().push(ahead(&config));
        assert_eq!(first_names(&core, &config, &list), ["ahead"]);
        assert!(core.ready_parts.lock().unwrap().is_empty(), "taken");
        // Made under another config, or from another list: made again from the list given.
        core.ready_parts
            .lock()
            .unwrap()
            .push(ahead(&self::config()));
        assert_eq!(first_names(&core, &config, &list), ["now"]);
        core.ready_parts.lock().unwrap().push(ahead(&config));
        assert_eq!(first_names(&core, &config, &tools("now")), ["now"]);
    }
}
