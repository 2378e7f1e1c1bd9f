//! What a catalog is built from ([`crate::catalog::Catalog::build_stable`]): each server's
//! last tool list, and, for a server whose config lists its tools (`enabled_tools`) but that
//! has no list (it is down, not started, or its `tools/list` failed), its config's list alone
//! ([`crate::catalog::ServerTools::reserved`]), so that the names the catalog gives do not
//! depend on which servers are up (README, "Configuration"). Also what the last catalog was
//! built from, so that a rebuild from the same inputs is skipped.

use std::sync::Arc;

use crate::cassette::Playback;
use crate::catalog::ServerTools;
use crate::config::{Config, ServerConfig};
use crate::server_tool::ServerTool;

/// A server's tools as it listed them.
pub(super) type ToolList = Arc<Vec<ServerTool>>;

/// A server's tool filter, borrowed from its config.
type ToolFilter<'a> = Box<dyn Fn(&str) -> bool + 'a>;

/// What a catalog was built from: the config, whether names were given for good, and each
/// server's tool list (compared by identity: a new listing is a new `Arc`).
pub(super) struct CatalogInputs {
    pub(super) config: Arc<Config>,
    pub(super) names_given: bool,
    pub(super) lists: Vec<(String, ToolList)>,
}

impl CatalogInputs {
    /// Whether a catalog built from `other` is the one built from these inputs.
    pub(super) fn same_as(&self, other: &CatalogInputs) -> bool {
        Arc::ptr_eq(&self.config, &other.config)
            && self.names_given == other.names_given
            && self.lists.len() == other.lists.len()
            && self
                .lists
                .iter()
                .zip(&other.lists)
                .all(|((a, at), (b, bt))| a == b && Arc::ptr_eq(at, bt))
    }
}

/// `lists` (each server's last tool list, in config order; a cassette's servers that the
/// config lacks last) with an empty list, at its place in config order, for each enabled server
/// of `config` that has an `enabled_tools` list and no list in `lists`: the catalog names the
/// tools of that list all the same, and reserves them.
pub(super) fn with_listed_servers_down(
    config: &Config,
    mut lists: Vec<(String, ToolList)>,
) -> Vec<(String, ToolList)> {
    let down: Vec<&ServerConfig> = config
        .enabled_servers()
        .filter(|s| s.enabled_tools.is_some() && !lists.iter().any(|(n, _)| *n == s.name))
        .collect();
    if down.is_empty() {
        return lists;
    }
    let empty = ToolList::default();
    lists.extend(down.iter().map(|s| (s.name.clone(), empty.clone())));
    let servers = &config.servers;
    let rank = |name: &str| servers.iter().position(|s| s.name == name);
    // Stable: the cassette's servers the config lacks stay last, in their order.
    lists.sort_by_key(|(name, _)| rank(name).unwrap_or(usize::MAX));
    lists
}

/// How the catalog reads one server's list: its filter, prefix and config's list of tools.
pub(super) struct ListingShape<'a> {
    exposes: ToolFilter<'a>,
    prefix: String,
    reserved: Option<&'a [String]>,
}

impl ListingShape<'_> {
    /// The catalog's input for server `server`'s `tools` read this way.
    pub(super) fn of<'s>(
        &'s self,
        server: &'s str,
        tools: &'s [ServerTool],
    ) -> ServerTools<'s, ServerTool> {
        ServerTools {
            server,
            prefix: &self.prefix,
            tools,
            exposes: self.exposes.as_ref(),
            reserved: self.reserved,
        }
    }
}

/// The shape of each list of `lists` under `config`: the server's allow/deny filter, prefix
/// and `enabled_tools`; a server the config lacks (a cassette's) has all its tools, the prefix
/// its list was recorded under and no list of its tools.
pub(super) fn listing_shapes<'a>(
    config: &'a Config,
    lists: &[(String, ToolList)],
    cassette: Option<&Playback>,
) -> Vec<ListingShape<'a>> {
    lists
        .iter()
        .map(|(name, _)| match config.server(name) {
            Some(server) => ListingShape {
                exposes: Box::new(move |t: &str| server.exposes(t)),
                prefix: server.tool_prefix.clone(),
                reserved: server.enabled_tools.as_deref(),
            },
            None => ListingShape {
                exposes: Box::new(|_: &str| true),
                prefix: cassette.map(|c| c.prefix(name)).unwrap_or_default(),
                reserved: None,
            },
        })
        .collect()
}

/// Config keys that name tools their server does not offer (typos).
pub(super) fn unknown_tool_warnings(config: &Config, lists: &[(String, ToolList)]) -> Vec<String> {
    let mut warnings = Vec::new();
    for (name, tools) in lists {
        let Some(server) = config.server(name) else {
            continue;
        };
        let offered: Vec<&str> = tools.iter().map(ServerTool::name).collect();
        warnings.extend(server.unknown_tool_messages(&offered));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn new_config() -> Arc<Config> {
        let text = "[mcp_servers.a]\ncommand = \"x\"\n";
        Arc::new(Config::parse(text, Path::new("t.toml"), &|_| None).unwrap())
    }

    fn tools(name: &str) -> ToolList {
        let tool = serde_json::json!({"name": name, "inputSchema": {"type": "object"}});
        Arc::new(vec![ServerTool::from_value(&tool).unwrap()])
    }

    #[test]
    fn a_catalog_is_rebuilt_only_from_other_inputs() {
        let (config, list) = (new_config(), tools("t"));
        let inputs =
            |config: &Arc<Config>, names_given, lists: &[(&str, &ToolList)]| CatalogInputs {
                config: config.clone(),
                names_given,
                lists: lists
                    .iter()
                    .map(|(n, l)| (n.to_string(), (*l).clone()))
                    .collect(),
            };
        let built = inputs(&config, true, &[("a", &list)]);
        assert!(built.same_as(&inputs(&config, true, &[("a", &list)])));
        // A new listing with the same text is still a new list: rebuilt.
        for other in [
            inputs(&config, true, &[("a", &tools("t"))]),
            inputs(&config, false, &[("a", &list)]),
            inputs(&new_config(), true, &[("a", &list)]),
            inputs(&config, true, &[("b", &list)]),
            inputs(&config, true, &[("a", &list), ("b", &list)]),
            inputs(&config, true, &[]),
        ] {
            assert!(!built.same_as(&other));
        }
    }

    #[test]
    fn a_server_with_a_list_of_its_tools_and_no_listing_counts_with_that_list() {
        let text = "[mcp_servers.a]\ncommand = \"x\"\nenabled_tools = [\"echo\"]\n\
                    [mcp_servers.b]\ncommand = \"x\"\ntool_prefix = \"b_\"\nenabled_tools = [\"echo\"]\n\
                    [mcp_servers.c]\ncommand = \"x\"\n\
                    [mcp_servers.off]\ncommand = \"x\"\nenabled = false\nenabled_tools = [\"x\"]\n\
                    [mcp_servers.d]\ncommand = \"x\"\nenabled_tools = [\"sum\"]\n";
        let config = Config::parse(text, Path::new("t.toml"), &|_| None).unwrap();
        // a is up; b and d are down (lists known), c is down (unknown), z a cassette's.
        let lists = vec![("a".into(), tools("echo")), ("z".into(), tools("echo"))];
        let all = with_listed_servers_down(&config, lists);
        let order: Vec<(&str, usize)> = all.iter().map(|(n, t)| (n.as_str(), t.len())).collect();
        assert_eq!(order, [("a", 1), ("b", 0), ("d", 0), ("z", 1)]);
        let shapes = listing_shapes(&config, &all, None);
        let inputs: Vec<_> = all
            .iter()
            .zip(&shapes)
            .map(|((n, t), s)| s.of(n, t))
            .collect();
        assert_eq!(inputs[1].prefix, "b_");
        assert_eq!(inputs[1].reserved, Some(&["echo".to_owned()][..]));
        assert!(!(inputs[1].exposes)("other") && (inputs[1].exposes)("echo"));
        assert_eq!(inputs[3].reserved, None, "not in the config");
        assert!((inputs[3].exposes)("anything"));
        // Every server up: nothing added.
        let up = ["a", "b", "d"].map(|n| (n.to_owned(), tools("echo")));
        assert_eq!(with_listed_servers_down(&config, up.to_vec()).len(), 3);
    }
}
