//! Which servers a one-shot `call` must start, when the config alone decides the names the
//! client sees: every enabled server has an `enabled_tools` allowlist, so the exposed names are
//! those lists named by the catalog's own rules ([`crate::catalog`]: `tool_prefix`, and
//! `<server>__<tool>` for a name two servers give). Pure; no I/O.

use crate::catalog::{Catalog, ServerTools};
use crate::exposed_names::ExposedNames;

use super::Config;

impl Config {
    /// The config `call` needs for a call of `exposed`, when the config alone decides it (see
    /// the module documentation); `None` otherwise (start every server: only the servers' own
    /// `tools/list` answers tell).
    ///
    /// - A name the lists give one tool: its server alone. When the catalog renamed the tool
    ///   (`a__echo`, a collision), that server's `tool_prefix` becomes the part of `exposed`
    ///   before the tool's own name, so that alone it is still exposed as `exposed`.
    /// - A name several servers' lists give, which the collision rule exposes under neither
    ///   (`echo` when `a` and `b` list it): those servers, so that their real listings decide,
    ///   as in `serve` (both offer it: `not_found`; one only: its tool).
    /// - Any other name: `None`.
    ///
    /// The answer is `serve`'s, except when a listed tool is not offered after all (`check`
    /// reports that): then `serve` may name the other server's tool differently.
    pub fn narrowed_for_call(&self, exposed: &str) -> Option<Config> {
        let servers: Vec<_> = self.enabled_servers().collect();
        let filters: Vec<_> = servers
            .iter()
            .map(|s| move |tool: &str| s.exposes(tool))
            .collect();
        let mut listings = Vec::with_capacity(servers.len());
        for (server, exposes) in servers.iter().zip(&filters) {
            listings.push(ServerTools {
                server: &server.name,
                prefix: &server.tool_prefix,
                tools: server.enabled_tools.as_deref()?,
                exposes,
            });
        }
        let mut names = ExposedNames::default();
        let (catalog, _) = Catalog::build_items(&listings, &mut names, "tool", |_, _| ());
        if let Some(route) = catalog.route(exposed) {
            let prefix = exposed.strip_suffix(&*route.tool)?.to_owned();
            let mut narrowed = self.clone();
            narrowed.servers.retain(|s| *s.name == *route.server);
            narrowed.servers[0].tool_prefix = prefix;
            return Some(narrowed);
        }
        let giving: Vec<&str> = listings
            .iter()
            .filter(|l| {
                l.tools
                    .iter()
                    .any(|t| (l.exposes)(t) && exposed.strip_prefix(l.prefix) == Some(t.as_str()))
            })
            .map(|l| l.server)
            .collect();
        if giving.is_empty() {
            return None;
        }
        let mut narrowed = self.clone();
        narrowed
            .servers
            .retain(|s| s.enabled && giving.contains(&s.name.as_str()));
        Some(narrowed)
    }
}
