//! Which servers a one-shot `call` must start to name and answer a call as `serve` does with
//! every server up. The catalog names the tools of a server's `enabled_tools` list whether the
//! server is up or not ([`crate::catalog::ServerTools::reserved`]), so the names of the servers
//! with such a list follow from the config alone (the catalog's own rules: `tool_prefix`, and
//! `<server>__<tool>` for a name two servers give), and a server left unstarted changes no
//! name. Pure; no I/O.

use crate::catalog::{collision_name, Catalog, ServerTools, COLLISION_SEPARATOR};
use crate::exposed_names::ExposedNames;

use super::{Config, ServerConfig};

impl Config {
    /// The enabled servers (config names, in file order) that a `call` of `exposed` must
    /// start, when the config tells; `None`: every enabled server.
    ///
    /// - A name the `enabled_tools` lists give a tool (by the catalog's rules, with every
    ///   server that has a list and none started): that tool's server, and every server
    ///   without a list (its listing may take the same name, which a collision renames).
    ///   The tools those servers list can rename the listed ones too, so that the name goes
    ///   to another listed server's tool (`a__echo` is `c`'s under `tool_prefix = "a__"`
    ///   until `b`, without a list, also offers `echo`: then `a`'s `echo` is `a__echo`), so
    ///   every listed server one of whose tools may then have the name is started as well.
    /// - Any other name, when every enabled server has a list: none, since no tool can have
    ///   it; the call answers `not_found` (pointing, for a name several lists give, to the
    ///   names their tools have: [`Catalog::shared`]).
    /// - Any other name: `None` (only the listings of the servers without a list tell).
    pub fn servers_for_call(&self, exposed: &str) -> Option<Vec<String>> {
        let servers: Vec<_> = self.enabled_servers().collect();
        let filters: Vec<_> = servers
            .iter()
            .map(|s| move |tool: &str| s.exposes(tool))
            .collect();
        let listings: Vec<ServerTools<'_, String>> = servers
            .iter()
            .zip(&filters)
            .map(|(server, exposes)| ServerTools {
                server: &server.name,
                prefix: &server.tool_prefix,
                tools: &[],
                exposes,
                reserved: server.enabled_tools.as_deref(),
            })
            .collect();
        let mut names = ExposedNames::default();
        let (catalog, _) = Catalog::build_items(&listings, &mut names, "tool", |_, _| ());
        let unlisted = servers.iter().any(|s| s.enabled_tools.is_none());
        match catalog.reserved(exposed) {
            Some(route) => Some(
                servers
                    .iter()
                    .filter(|s| {
                        s.enabled_tools.is_none()
                            || *s.name == *route.server
                            || (unlisted && may_be_named(s, exposed))
                    })
                    .map(|s| s.name.clone())
                    .collect(),
            ),
            None if !unlisted => Some(Vec::new()),
            None => None,
        }
    }
}

/// Whether a tool of `server`'s `enabled_tools` may be exposed as `exposed` under some tools
/// of the other servers: the catalog names it by its name under the server's prefix, or
/// `<server>__<tool>` for a collision, either one maybe numbered (`__2`, …).
fn may_be_named(server: &ServerConfig, exposed: &str) -> bool {
    let is_or_numbers = |name: &str| {
        let rest = exposed.strip_prefix(name);
        rest.is_some_and(|rest| {
            let number = rest.strip_prefix(COLLISION_SEPARATOR);
            rest.is_empty()
                || number.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    let tools = server.enabled_tools.iter().flatten();
    tools.filter(|t| server.exposes(t)).any(|tool| {
        is_or_numbers(&format!("{}{tool}", server.tool_prefix))
            || is_or_numbers(&collision_name(&server.name, tool))
    })
}
