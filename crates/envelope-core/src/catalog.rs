//! The merged tool catalog: every server's tools under the names the client sees, and the route
//! from each of those names back to a server and its own tool name.
//!
//! Rules (issue 3 of the project, MCP specification 2025-06-18 "Tools"):
//! - tools hidden by a server's allow/deny lists are left out;
//! - a server's `tool_prefix` is prepended to its tools' names;
//! - when two servers offer the same final name, both are exposed as `<server>__<tool>` (the
//!   server's config name and its own tool name) and a warning is produced; no tool is silently
//!   dropped; a name still taken gets a numbered suffix (`__2`, …), servers earlier in the
//!   config keeping the plain name;
//! - a server whose config lists its tools (`enabled_tools`, [`ServerTools::reserved`]) has
//!   those names counted and given as if it listed them all, whether it is up or not: a
//!   collision with a server that is down renames the other server's tool all the same, so a
//!   name is the same whichever servers are up (the names of a server that is down and has no
//!   such list are unknown, and cannot be counted); a name of the list that the server does
//!   not offer now is reserved for it ([`Catalog::reserved`]), not offered;
//! - a name once given stays with its tool for the session ([`ExposedNames`]): a tool listed
//!   later whose name is already given gets the numbered name, and the earlier tool keeps its
//!   name; a server whose `tool_prefix` changes (a config reload) has its tools named again
//!   under the new prefix, its old names retired ([`ExposedNames::follow_prefix`]);
//! - a tool whose `execution.taskSupport` is `"required"` (MCP 2025-11-25) is left out: tasks
//!   are not proxied (logged once per server start at debug level, and shown by `check`);
//! - prompts are named by the same rules ([`Catalog::build_items`]);
//! - every tool's `outputSchema` is replaced by the envelope's JSON Schema
//!   ([`Envelope::json_schema`]), since every result we answer with carries the envelope as its
//!   `structuredContent`; every other field of the tool passes through unchanged.
//!
//! A tool catalog keeps each tool as the JSON text the client gets ([`ToolJson`]): made once
//! per catalog, without copying the server's tool as a value, and joined as is into a
//! `tools/list` answer. A catalog of 10,000 tools is built in a few milliseconds, no work
//! grows faster than the number of tools (names are looked up in hash maps).
//!
//! Pure: no I/O.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::envelope::Envelope;
use crate::exposed_names::{map_with_capacity, set_with_capacity, ExposedNames, HashMap};
use crate::server_tool::ServerTool;

mod new_name;
mod parts;
use new_name::{Collisions, NewTool};
pub use parts::ToolsPart;

/// The separator between server and tool in a disambiguated name (`<server>__<tool>`).
pub const COLLISION_SEPARATOR: &str = "__";

/// The name a tool of `server` whose own name is `tool` is given when its name under its
/// server's prefix collides with another server's (module doc): `<server>__<tool>`, with each
/// character of the server's config name that a tool name may not have made `_`.
pub fn collision_name(server: &str, tool: &str) -> String {
    format!("{}{COLLISION_SEPARATOR}{tool}", new_name::name_safe(server))
}

/// A boxed allow/deny filter over a server's own item names.
pub type NameFilter<'a> = Box<dyn Fn(&str) -> bool + 'a>;

/// One server's contribution to the catalog: its tools (`ServerTools<'_, ServerTool>`), or its
/// prompts (values).
pub struct ServerTools<'a, I = Value> {
    /// The server's config name.
    pub server: &'a str,
    /// Prepended to each exposed tool name (may be empty).
    pub prefix: &'a str,
    /// The tools as the server listed them (MCP `Tool` objects, all pages).
    pub tools: &'a [I],
    /// The server's allow/deny filter over its own tool names.
    pub exposes: &'a dyn Fn(&str) -> bool,
    /// The names the server's config says it offers (its `enabled_tools`), when it says:
    /// each one `exposes` lets through is named as a listed tool is, whether or not the
    /// server lists it now (it is down, not started, its `tools/list` failed, or it does not
    /// offer that tool), so that no name depends on which servers are up (module doc). A name
    /// it does not list is reserved ([`Catalog::reserved`]), not offered. `None`: only its
    /// listing counts.
    pub reserved: Option<&'a [String]>,
}

impl<I> Clone for ServerTools<'_, I> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<I> Copy for ServerTools<'_, I> {}

/// An item a server lists, as the catalog reads it: its own name, if it has one.
pub trait Listed {
    /// The item's `name`; `None` when it has none (the item is skipped with a warning).
    fn listed_name(&self) -> Option<&str>;

    /// [`Listed::listed_name`] as a shared string (a copy, unless the item keeps one).
    fn shared_name(&self) -> Option<Arc<str>> {
        self.listed_name().map(Arc::from)
    }
}

impl Listed for Value {
    fn listed_name(&self) -> Option<&str> {
        self.get("name")?.as_str()
    }
}

/// A bare name (a config's `enabled_tools` entry): the catalog can name a config's lists by
/// the rules it names the servers' listings by.
impl Listed for String {
    fn listed_name(&self) -> Option<&str> {
        Some(self)
    }
}

impl Listed for ServerTool {
    fn listed_name(&self) -> Option<&str> {
        Some(self.name())
    }

    /// The tool's own string: naming it allocates nothing.
    fn shared_name(&self) -> Option<Arc<str>> {
        Some(ServerTool::shared_name(self).clone())
    }
}

/// Where a client-facing tool name goes. The strings are shared (a clone counts a reference):
/// every route of a server holds one string of its name, and a tool's own name is the string
/// [`ExposedNames`] keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The server's config name.
    pub server: Arc<str>,
    /// The tool's own name on that server.
    pub tool: Arc<str>,
}

/// One tool as the client sees it (renamed, `outputSchema` replaced; see the module doc): where
/// its JSON text is in the catalog's tools array ([`Catalog::tools_json`]), in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolJson(Range<usize>);

/// The merged catalog of items of type `T`: tools as [`ToolJson`] (the default), prompts as
/// values ([`Catalog::build_items`]).
#[derive(Debug, Clone)]
pub struct Catalog<T = ToolJson> {
    items: Vec<T>,
    /// The exposed name of each item, in the same order (the strings of `routes`' keys).
    names: Vec<Arc<str>>,
    routes: HashMap<Arc<str>, Route>,
    /// The names given to tools of a server's `enabled_tools` that it does not offer now
    /// ([`ServerTools::reserved`]) → their server and own name.
    reserved: HashMap<Arc<str>, Route>,
    /// A name under its server's prefix that more than one server gives (a collision) → the
    /// names its tools were given instead, in config order.
    shared: HashMap<Box<str>, Vec<Arc<str>>>,
    /// Tools: the JSON array of every tool's text (UTF-8), which [`ToolJson`]s point into
    /// (`[]` when empty); other items: empty.
    text: Box<[u8]>,
}

impl<T> Default for Catalog<T> {
    fn default() -> Self {
        Catalog::with_capacity(0)
    }
}

impl Catalog {
    /// Builds the catalog from every ready server's tools, in the order given (config order),
    /// as the first catalog of a session. Returns the catalog and human-readable warnings
    /// (collisions, tools without a name, duplicates).
    pub fn build(servers: &[ServerTools<'_, ServerTool>]) -> (Catalog, Vec<String>) {
        Catalog::build_stable(servers, &mut ExposedNames::default())
    }

    /// [`Catalog::build`] keeping the names the session already gave: a tool in `names` keeps
    /// its name; a tool seen for the first time gets a name by the rules in the module doc that
    /// no other tool ever had, and is added to `names`.
    pub fn build_stable(
        servers: &[ServerTools<'_, ServerTool>],
        names: &mut ExposedNames,
    ) -> (Catalog, Vec<String>) {
        if names.is_empty() {
            let parts = servers.iter().map(ToolsPart::new).collect();
            return Catalog::build_first(servers, parts, names);
        }
        Catalog::build_named(servers, names)
    }

    /// [`Catalog::build_stable`] by the full rules (looking up every name given and every
    /// collision), whatever `names` holds.
    fn build_named(
        servers: &[ServerTools<'_, ServerTool>],
        names: &mut ExposedNames,
    ) -> (Catalog, Vec<String>) {
        let schema = envelope_schema_json();
        // At most every tool's text, renamed, with the schema: the array is made in place.
        let most: usize = servers.iter().map(most_bytes).sum();
        let mut text = Vec::with_capacity(most + 2);
        text.push(b'[');
        let (mut catalog, warnings) =
            build_kept(servers, names, "tool", &callable, |tool, exposed| {
                if text.len() > 1 {
                    text.push(b',');
                }
                let start = text.len();
                tool.write_exposed(&mut text, exposed, schema);
                ToolJson(start..text.len())
            });
        text.push(b']');
        // Kept as bytes: every piece written is a `str`, so the whole is UTF-8 (checking the
        // 4.7 MB of 10,000 tools again cost 2 M instructions on the start-up's path).
        catalog.text = text.into_boxed_slice();
        (catalog, warnings)
    }

    /// Every tool as the client sees it, as one JSON array (`[tool,…]`, no line break; UTF-8).
    pub fn tools_json(&self) -> &[u8] {
        if self.text.is_empty() {
            b"[]"
        } else {
            &self.text
        }
    }

    /// The JSON text (UTF-8) of each tool of [`Catalog::tools_json`] (one object each), in
    /// listing order (the order of [`Catalog::names`]).
    pub fn tool_texts(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.items.iter().map(|at| &self.text[at.0.clone()])
    }
}

impl<T> Catalog<T> {
    /// The naming of [`Catalog::build_stable`] for any named items (tools, prompts): `noun`
    /// names them in the warnings, `rewrite` makes each item as the client sees it from the
    /// item and its exposed name.
    pub fn build_items<I: Listed>(
        servers: &[ServerTools<'_, I>],
        names: &mut ExposedNames,
        noun: &str,
        rewrite: impl FnMut(&I, &str) -> T,
    ) -> (Catalog<T>, Vec<String>) {
        build_kept(servers, names, noun, &|_| true, rewrite)
    }

    /// The items in listing order; for tools, the tools of a `tools/list` answer: renamed,
    /// `outputSchema` replaced.
    pub fn tools(&self) -> &[T] {
        &self.items
    }

    /// The exposed name of each item of [`Catalog::tools`], in the same order.
    pub fn names(&self) -> &[Arc<str>] {
        &self.names
    }

    /// An empty catalog with room for `n` items.
    fn with_capacity(n: usize) -> Catalog<T> {
        Catalog {
            items: Vec::with_capacity(n),
            names: Vec::with_capacity(n),
            routes: map_with_capacity(n),
            reserved: HashMap::default(),
            shared: HashMap::default(),
            text: Box::default(),
        }
    }

    /// The route for a client-facing tool name.
    pub fn route(&self, name: &str) -> Option<&Route> {
        self.routes.get(name)
    }

    /// The server and own name of the tool `name` is reserved for: a tool its server's
    /// `enabled_tools` lists ([`ServerTools::reserved`]) and that the server does not offer
    /// now (it is down or not started, or does not offer that tool). `None` for an offered
    /// name ([`Catalog::route`]) and a name given to no tool.
    pub fn reserved(&self, name: &str) -> Option<&Route> {
        self.reserved.get(name)
    }

    /// When `name` is a tool's name under its server's prefix that more than one server
    /// gives (a collision, exposed under none of them), the names those tools were given
    /// instead (`<server>__<tool>`, offered or [reserved](Catalog::reserved)), in config
    /// order; empty otherwise.
    pub fn shared(&self, name: &str) -> &[Arc<str>] {
        self.shared.get(name).map_or(&[], |given| given.as_slice())
    }

    /// Number of tools exposed.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no tool is exposed.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The exposed names with their routes, sorted by exposed name.
    pub fn routes(&self) -> Vec<(&str, &Route)> {
        let mut all: Vec<(&str, &Route)> = self.routes.iter().map(|(k, v)| (&**k, v)).collect();
        all.sort_by(|a, b| a.0.cmp(b.0));
        all
    }
}

/// A tool that the catalog names: its name with the server's prefix, its server (an index
/// into the servers given), the tool (`None` for a name of the server's
/// [`ServerTools::reserved`] that it does not list), and its own name.
type Candidate<'a, I> = (Cow<'a, str>, usize, Option<&'a I>, &'a str);

/// [`Catalog::build_items`] over the items that `keep` accepts (the others are not looked at).
fn build_kept<I: Listed, T>(
    servers: &[ServerTools<'_, I>],
    names: &mut ExposedNames,
    noun: &str,
    keep: &dyn Fn(&I) -> bool,
    mut rewrite: impl FnMut(&I, &str) -> T,
) -> (Catalog<T>, Vec<String>) {
    let mut warnings = Vec::new();
    let candidates = candidates(servers, names, noun, keep, &mut warnings);
    let mut counts: HashMap<&str, usize> = map_with_capacity(candidates.len());
    let mut per_server = vec![0; servers.len()];
    for (final_name, index, ..) in &candidates {
        *counts.entry(final_name).or_default() += 1;
        per_server[*index] += 1;
    }
    for (s, listed) in servers.iter().zip(per_server) {
        names.reserve(s.server, listed);
    }
    let mut catalog = Catalog::with_capacity(candidates.len());
    // One string per server, shared by its routes.
    let server_names: Vec<Arc<str>> = servers.iter().map(|s| Arc::from(s.server)).collect();
    // No name given yet (the session's first catalog): no candidate has one, since each
    // (server, own name) is a candidate once, so none is looked up.
    let fresh = names.is_empty() && distinct(&server_names);
    let mut collisions = Collisions::default();
    for (final_name, index, tool, own_name) in &candidates {
        let server = servers[*index].server;
        let colliding = counts[&**final_name] > 1;
        let given = if fresh {
            None
        } else {
            names.given(server, own_name)
        };
        let (own, exposed) = match given {
            Some((own, given)) => (own.clone(), given.clone()),
            None => {
                let new = NewTool {
                    server,
                    own_name,
                    final_name,
                    colliding,
                    noun,
                };
                let name = new.name(&catalog.routes, names, &mut warnings);
                if colliding {
                    collisions.add(final_name, server, &name);
                }
                let own = tool.and_then(Listed::shared_name);
                new.assign(own, name, names)
            }
        };
        if colliding {
            let shared = catalog.shared.entry(final_name.as_ref().into());
            shared.or_default().push(exposed.clone());
        }
        let route = Route {
            server: server_names[*index].clone(),
            tool: own,
        };
        let Some(tool) = tool else {
            catalog.reserved.insert(exposed, route);
            continue;
        };
        if noun == "tool" {
            if let Some(why) = unusable_name(server, own_name, &exposed) {
                warnings.push(why);
                continue;
            }
        }
        catalog.items.push(rewrite(tool, &exposed));
        catalog.names.push(exposed.clone());
        catalog.routes.insert(exposed, route);
    }
    warnings.extend(collisions.warnings(noun));
    (catalog, warnings)
}

/// The warning for tool `own_name` of `server` exposed as `exposed` when no client accepts
/// that name (MCP 2025-11-25 "Tool names"), which is then not offered. A server's own tool
/// names were checked when listed; only a prefix or a collision name can break the rules (a
/// cassette's prefix is read from a file), so a tool under its own name is not checked again.
fn unusable_name(server: &str, own_name: &str, exposed: &str) -> Option<String> {
    if exposed == own_name {
        return None;
    }
    let why = crate::tool_validation::name_problem(exposed)?;
    let why = why.replacen("`name`", "that name", 1);
    Some(format!("tool '{own_name}' of server '{server}' would be named '{exposed}', which no client accepts: {why}; not offered"))
}

/// Whether no two of `servers` have the same name.
fn distinct(servers: &[Arc<str>]) -> bool {
    let mut seen = set_with_capacity(servers.len());
    servers.iter().all(|s| seen.insert(&**s))
}

/// Whether a tool is offered at all: a task-only tool is not listed, and not warned about
/// here (a catalog is rebuilt often): the server's start logs them once and `check` shows them.
fn callable(tool: &ServerTool) -> bool {
    !tool.requires_task()
}

/// At most how many bytes `server`'s tools take in a catalog's array: each tool's text,
/// renamed (prefix and server name at most), with the envelope's schema and a separator.
fn most_bytes(server: &ServerTools<'_, ServerTool>) -> usize {
    let schema = envelope_schema_json().len();
    let longer = server.prefix.len() + server.server.len() + schema + 24;
    server.tools.iter().map(|t| t.text().len() + longer).sum()
}

/// Every item of `servers` that `keep` accepts and its server exposes, in order, each with its
/// name under the server's prefix ([`server_candidates`]). Follows each server's prefix in
/// `names`.
fn candidates<'a, I: Listed>(
    servers: &[ServerTools<'a, I>],
    names: &mut ExposedNames,
    noun: &str,
    keep: &dyn Fn(&I) -> bool,
    warnings: &mut Vec<String>,
) -> Vec<Candidate<'a, I>> {
    let listed = servers.iter().map(|s| s.tools.len()).sum();
    let mut candidates = Vec::with_capacity(listed);
    for (index, s) in servers.iter().enumerate() {
        names.follow_prefix(s.server, s.prefix);
        server_candidates((index, s), noun, keep, warnings, &mut candidates);
    }
    candidates
}

/// The candidates of server `s` (at `index` among the servers given), appended to `out`: each
/// item that `keep` accepts and the server exposes, with its name under the server's prefix (a
/// nameless item or a name the server listed twice is skipped with a warning), then each name
/// of its [`ServerTools::reserved`] that it exposes and did not list, without an item.
fn server_candidates<'a, I: Listed>(
    (index, s): (usize, &ServerTools<'a, I>),
    noun: &str,
    keep: &dyn Fn(&I) -> bool,
    warnings: &mut Vec<String>,
    out: &mut Vec<Candidate<'a, I>>,
) {
    let mut seen = set_with_capacity(s.tools.len());
    for tool in s.tools.iter().filter(|t| keep(t)) {
        let Some(name) = tool.listed_name() else {
            warnings.push(format!(
                "server '{}' listed a {noun} without a name; skipped",
                s.server
            ));
            continue;
        };
        if !(s.exposes)(name) {
            continue;
        }
        if !seen.insert(name) {
            warnings.push(format!(
                "server '{}' listed {noun} '{name}' twice; the first is used",
                s.server
            ));
            continue;
        }
        out.push((final_name(s.prefix, name), index, Some(tool), name));
    }
    // The names of its config's list it does not list: named as listed (module doc).
    for name in s.reserved.unwrap_or_default() {
        if (s.exposes)(name) && seen.insert(name) {
            out.push((final_name(s.prefix, name), index, None, name));
        }
    }
}

/// Tool `name` under `prefix`.
fn final_name<'a>(prefix: &str, name: &'a str) -> Cow<'a, str> {
    match prefix {
        "" => Cow::Borrowed(name),
        prefix => Cow::Owned(format!("{prefix}{name}")),
    }
}

/// The envelope's JSON Schema ([`Envelope::json_schema`]) as compact JSON text, made once.
fn envelope_schema_json() -> &'static str {
    static SCHEMA: OnceLock<String> = OnceLock::new();
    SCHEMA.get_or_init(|| Envelope::json_schema().to_string())
}

#[cfg(test)]
mod tests;
