//! The name of a tool seen for the first time ([`NewTool`]): its name under its server's
//! prefix, the `<server>__<tool>` name of a collision, a numbered name when that is taken
//! (the rules in [`super`]'s module doc). Pure; no I/O.

use std::borrow::Cow;
use std::sync::Arc;

use super::{Route, COLLISION_SEPARATOR};
use crate::exposed_names::{ExposedNames, HashMap};

/// A tool that has no exposed name yet.
pub(super) struct NewTool<'a> {
    pub(super) server: &'a str,
    pub(super) own_name: &'a str,
    /// Its name with the server's prefix.
    pub(super) final_name: &'a str,
    /// Whether another tool of this listing has the same final name.
    pub(super) colliding: bool,
    /// What the items are (`tool`, `prompt`), for the warnings.
    pub(super) noun: &'a str,
}

impl<'a> NewTool<'a> {
    /// Its name: the final name, or `<server>__<tool>` when another tool of the listing has
    /// the same final name; numbered when that was given to another tool (earlier in this
    /// listing or before). A numbered name is warned about here; a collision is warned about
    /// once for all its tools ([`Collisions`]).
    pub(super) fn name(
        &self,
        routes: &HashMap<Arc<str>, Route>,
        names: &ExposedNames,
        warnings: &mut Vec<String>,
    ) -> Cow<'a, str> {
        let taken = |name: &str| {
            routes.contains_key(name) || names.taken_by_other(name, self.server, self.own_name)
        };
        let (server, noun) = (self.server, self.noun);
        let exposed = if self.colliding {
            let renamed = super::collision_name(server, self.own_name);
            Cow::Owned(renamed)
        } else {
            Cow::Borrowed(self.final_name)
        };
        // A prefix (or a tool that arrived later) can recreate another tool's name: number it
        // rather than drop it.
        if !taken(&exposed) {
            return exposed;
        }
        let free = (2..)
            .map(|n| format!("{exposed}{COLLISION_SEPARATOR}{n}"))
            .find(|candidate| !taken(candidate))
            .expect("an unused numbered name exists");
        warnings.push(format!(
            "{noun} name '{exposed}' is still ambiguous; server '{server}' exposes it as '{free}'"
        ));
        Cow::Owned(free)
    }
}

impl NewTool<'_> {
    /// Gives `name` (from [`NewTool::name`]) to the tool in `names`, and returns the tool's
    /// own name and its name as kept: `own` is the tool's own string when its item keeps one
    /// (naming it allocates nothing), and one string serves both when the tool is exposed under
    /// its own name (no prefix).
    pub(super) fn assign(
        &self,
        own: Option<Arc<str>>,
        name: Cow<'_, str>,
        names: &mut ExposedNames,
    ) -> (Arc<str>, Arc<str>) {
        let own = own.unwrap_or_else(|| Arc::from(self.own_name));
        let name = if name == self.own_name {
            own.clone()
        } else {
            Arc::from(name.as_ref())
        };
        names.assign_shared(self.server, &own, &name);
        (own, name)
    }
}

/// The tools a catalog build renamed for a collision, by the final name they share, so that
/// each collision is warned about once, naming every server's name for it (three servers
/// offering `echo` gave three warnings that said the same thing).
#[derive(Default)]
pub(super) struct Collisions {
    /// Each shared final name, in the order first met, with `(server, exposed name)` for each
    /// tool named for it in this build.
    shared: Vec<(String, Vec<(String, String)>)>,
}

impl Collisions {
    /// Notes that `server`'s tool whose final name is `final_name` is exposed as `exposed`.
    pub(super) fn add(&mut self, final_name: &str, server: &str, exposed: &str) {
        let pair = (server.to_owned(), exposed.to_owned());
        match self.shared.iter_mut().find(|(name, _)| name == final_name) {
            Some((_, given)) => given.push(pair),
            None => self.shared.push((final_name.to_owned(), vec![pair])),
        }
    }

    /// One warning per shared final name, naming each server and the name it exposes.
    pub(super) fn warnings(self, noun: &str) -> Vec<String> {
        let shared = self.shared.into_iter();
        shared
            .map(|(final_name, given)| {
                let each: Vec<String> = given
                    .iter()
                    .map(|(server, exposed)| format!("server '{server}' exposes it as '{exposed}'"))
                    .collect();
                format!(
                    "{noun} name '{final_name}' is offered by more than one server; {}",
                    each.join(", ")
                )
            })
            .collect()
    }
}

/// `server` with each character a tool name may not have (MCP 2025-11-25 "Tool names": ASCII
/// letters, digits, `_`, `-`, `.`) made `_`, for the `<server>__<tool>` name of a collision
/// (a config name may be any TOML key: `"my server"`, `"ünï"`).
pub(super) fn name_safe(server: &str) -> Cow<'_, str> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if server.chars().all(allowed) {
        return Cow::Borrowed(server);
    }
    Cow::Owned(
        server
            .chars()
            .map(|c| if allowed(c) { c } else { '_' })
            .collect(),
    )
}
