//! Which servers a one-shot `call` must start to name and answer a call as `serve` does with
//! every server up. The catalog names the tools of a server's `enabled_tools` list whether the
//! server is up or not ([`crate::catalog::ServerTools::reserved`]), so the names of the servers
//! with such a list follow from the config alone (the catalog's own rules: `tool_prefix`, and
//! `<server>__<tool>` for a name two servers give), and a server left unstarted changes no
//! name. Pure; no I/O.

use crate::catalog::{Catalog, ServerTools};
use crate::exposed_names::ExposedNames;

use super::Config;

impl Config {
    /// The enabled servers (config names, in file order) that a `call` of `exposed` must
    /// start, when the config tells; `None`: every enabled server.
    ///
    /// - A name the `enabled_tools` lists give a tool (by the catalog's rules, with every
    ///   server that has a list and none started): that tool's server, and every server
    ///   without a list (its listing may take the same name, which a collision renames).
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
        let unlisted = servers.iter().filter(|s| s.enabled_tools.is_none());
        match catalog.reserved(exposed) {
            Some(route) => Some(
                servers
                    .iter()
                    .filter(|s| s.enabled_tools.is_none() || *s.name == *route.server)
                    .map(|s| s.name.clone())
                    .collect(),
            ),
            None if unlisted.count() == 0 => Some(Vec::new()),
            None => None,
        }
    }
}
