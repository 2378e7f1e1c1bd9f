//! A session's first catalog in parts: each server's share ([`ToolsPart`]) is made as soon as
//! its list arrives (the proxy is idle between the servers' answers), and after the last one
//! only the join is left ([`Catalog::build_first`]): the names checked for collisions, the
//! routes and the one array. The part names each tool by its final name (its name under the
//! server's prefix), which is its name in a first catalog whose final names are all distinct
//! (no collision, nothing given before: the rules in [`super`]'s module doc number or rename
//! nothing then). When two final names are the same, the parts are dropped and the catalog is
//! built by the full rules. Pure; no I/O.

use std::ops::Range;
use std::sync::Arc;

use super::{
    callable, distinct, envelope_schema_json, most_bytes, server_candidates, unusable_name,
    Catalog, Route, ServerTools, ToolJson,
};
use crate::exposed_names::{map_with_capacity, set_with_capacity, ExposedNames, HashMap, HashSet};
use crate::server_tool::ServerTool;

/// One server's tools as a session's first catalog gives them when no two tools of any server
/// have the same final name: each tool under its final name, its JSON text as the client sees
/// it (renamed, `outputSchema` replaced), its route, and the server's warnings. Made by
/// [`ToolsPart::new`]; about a tenth of the build of a catalog of ten such servers.
#[derive(Debug)]
pub struct ToolsPart {
    /// The server's config name (the routes share this string).
    server: Arc<str>,
    /// The server's `tool_prefix` the part was made under.
    prefix: Box<str>,
    /// Each tool's own name → its final name, for every tool the server exposes (one a name
    /// no client accepts included: the name is given, the tool not offered).
    given: HashMap<Arc<str>, Arc<str>>,
    /// The tools offered, in listing order: final name, own name, and where the tool's JSON
    /// text is in `text` (bytes).
    offered: Vec<(Arc<str>, Arc<str>, Range<usize>)>,
    /// The names of the server's [`ServerTools::reserved`] it did not list: final name, own
    /// name.
    reserved: Vec<(Arc<str>, Arc<str>)>,
    /// The offered tools' JSON texts, comma-separated, without brackets (UTF-8).
    text: Vec<u8>,
    /// The listing's warnings (a name listed twice), as the full rules give them.
    listed_warnings: Vec<String>,
    /// The warnings for names no client accepts, as the full rules give them.
    name_warnings: Vec<String>,
}

impl ToolsPart {
    /// `server`'s share of a first catalog (see the type's doc).
    pub fn new(server: &ServerTools<'_, ServerTool>) -> ToolsPart {
        let mut listed_warnings = Vec::new();
        let mut candidates = Vec::with_capacity(server.tools.len());
        let keep: &dyn Fn(&ServerTool) -> bool = &callable;
        server_candidates(
            (0, server),
            "tool",
            keep,
            &mut listed_warnings,
            &mut candidates,
        );
        let schema = envelope_schema_json();
        let mut part = ToolsPart {
            server: Arc::from(server.server),
            prefix: server.prefix.into(),
            given: map_with_capacity(candidates.len()),
            offered: Vec::with_capacity(candidates.len()),
            reserved: Vec::new(),
            text: Vec::with_capacity(most_bytes(server)),
            listed_warnings,
            name_warnings: Vec::new(),
        };
        for (final_name, _, tool, own_name) in candidates {
            // One string when the tool is exposed under its own name (no prefix).
            let own = tool.map_or_else(
                || Arc::from(own_name),
                |t| ServerTool::shared_name(t).clone(),
            );
            let exposed = if final_name == own_name {
                own.clone()
            } else {
                Arc::from(final_name.as_ref())
            };
            part.given.insert(own.clone(), exposed.clone());
            let Some(tool) = tool else {
                part.reserved.push((exposed, own));
                continue;
            };
            if let Some(why) = unusable_name(server.server, own_name, &exposed) {
                part.name_warnings.push(why);
                continue;
            }
            if !part.text.is_empty() {
                part.text.push(b',');
            }
            let start = part.text.len();
            tool.write_exposed(&mut part.text, &exposed, schema);
            part.offered.push((exposed, own, start..part.text.len()));
        }
        part
    }

    /// Whether the part is of the server whose config name is `server`.
    pub fn is_of(&self, server: &str) -> bool {
        *self.server == *server
    }

    /// Whether the part was made from `server` (its name and prefix; its tools and filter are
    /// the caller's to match).
    fn made_from(&self, server: &ServerTools<'_, ServerTool>) -> bool {
        *self.server == *server.server && *self.prefix == *server.prefix
    }
}

impl Catalog {
    /// The session's first catalog from `parts`, one per server of `servers` in the same
    /// order, each made by [`ToolsPart::new`] from that server's very tools, filter and
    /// reserved names: the
    /// same catalog, warnings and `names` as [`Catalog::build_stable`] gives. When `names`
    /// holds a name already, two servers have the same name, two tools the same final name (a
    /// collision), or a part is not its server's (name, prefix), the parts are dropped and the
    /// catalog is built by the full rules.
    pub fn build_first(
        servers: &[ServerTools<'_, ServerTool>],
        parts: Vec<ToolsPart>,
        names: &mut ExposedNames,
    ) -> (Catalog, Vec<String>) {
        let matched =
            parts.len() == servers.len() && parts.iter().zip(servers).all(|(p, s)| p.made_from(s));
        let server_names: Vec<Arc<str>> = parts.iter().map(|p| p.server.clone()).collect();
        let all = (matched && names.is_empty() && distinct(&server_names))
            .then(|| every_name_once(&parts))
            .flatten();
        let Some(all) = all else {
            drop(parts);
            return Catalog::build_named(servers, names);
        };
        for s in servers {
            names.follow_prefix(s.server, s.prefix);
        }
        join(parts, all, names)
    }
}

/// Every final name of `parts`, when no two tools have the same one.
fn every_name_once(parts: &[ToolsPart]) -> Option<HashSet<Arc<str>>> {
    let mut all = set_with_capacity(parts.iter().map(|p| p.given.len()).sum());
    for name in parts.iter().flat_map(|p| p.given.values()) {
        if !all.insert(name.clone()) {
            return None;
        }
    }
    Some(all)
}

/// The catalog of `parts` (every final name distinct, `all` those names), its warnings (the
/// listings', then the names no client accepts, in server order), and the names given.
fn join(
    parts: Vec<ToolsPart>,
    all: HashSet<Arc<str>>,
    names: &mut ExposedNames,
) -> (Catalog, Vec<String>) {
    let offered: usize = parts.iter().map(|p| p.offered.len()).sum();
    let bytes: usize = parts.iter().map(|p| p.text.len() + 1).sum();
    let mut catalog = Catalog::with_capacity(offered);
    let mut warnings: Vec<String> = Vec::new();
    let mut name_warnings = Vec::new();
    let mut given = Vec::with_capacity(parts.len());
    let mut text = Vec::with_capacity(bytes + 2);
    text.push(b'[');
    for part in parts {
        if !part.text.is_empty() && text.len() > 1 {
            text.push(b',');
        }
        let at = text.len();
        text.extend_from_slice(&part.text);
        // Freed as it is copied: the parts and the array are not both whole at once.
        drop(part.text);
        for (exposed, own, range) in part.offered {
            catalog
                .items
                .push(ToolJson(at + range.start..at + range.end));
            catalog.names.push(exposed.clone());
            let route = Route {
                server: part.server.clone(),
                tool: own,
            };
            catalog.routes.insert(exposed, route);
        }
        for (exposed, own) in part.reserved {
            let route = Route {
                server: part.server.clone(),
                tool: own,
            };
            catalog.reserved.insert(exposed, route);
        }
        warnings.extend(part.listed_warnings);
        name_warnings.extend(part.name_warnings);
        given.push((part.server, part.given));
    }
    text.push(b']');
    catalog.text = text.into_boxed_slice();
    warnings.extend(name_warnings);
    names.give_first(
        all,
        given.iter_mut().map(|(s, g)| (&**s, std::mem::take(g))),
    );
    (catalog, warnings)
}
