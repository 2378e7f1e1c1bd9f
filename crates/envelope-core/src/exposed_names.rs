//! The names the client has been given for tools, kept for the whole session.
//!
//! A name, once given to a tool (a server and its own tool name), stays with that tool until
//! the proxy exits, even while the tool is gone (its server restarting, or a listing without
//! it): a server that lists a tool later can never take over a name the client already uses
//! for another server's tool, so a call under that name always reaches the tool the client
//! meant. Tools that arrive later get a name no other tool ever had. Pure; no I/O.

use std::collections::hash_map::Entry;
use std::sync::Arc;

/// std's `HashMap` hashed with foldhash (its fast variant, seeded per process) instead of
/// SipHash: a catalog of 10,000 tools hashes names several times a tool, and SipHash alone was a
/// tenth of the proxy's start-up CPU. The keys are names servers chose, not a client's input.
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// std's `HashSet` hashed like [`HashMap`].
pub(crate) type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;

/// An empty [`HashMap`] with room for `n` entries.
pub(crate) fn map_with_capacity<K, V>(n: usize) -> HashMap<K, V> {
    HashMap::with_capacity_and_hasher(n, Default::default())
}

/// An empty [`HashSet`] with room for `n` entries.
pub(crate) fn set_with_capacity<T>(n: usize) -> HashSet<T> {
    HashSet::with_capacity_and_hasher(n, Default::default())
}

/// Every exposed name given so far, both ways. The two maps stay one-to-one (a name is given
/// to one tool, a tool has one name), so the set of names is enough to tell whether a name
/// belongs to another tool. Hashed with foldhash (seeded per process) rather than SipHash: a
/// catalog of 10,000 tools looks names up several times a tool.
///
/// A server whose `tool_prefix` changes (a config reload) has its tools named again under the
/// new prefix ([`ExposedNames::follow_prefix`]): its old names are retired, not freed, so no
/// other tool ever takes one; only the tool that had it gets it back (the prefix changed back).
#[derive(Debug, Clone, Default)]
pub struct ExposedNames {
    /// Server → its tool → the tool's name (looked up without allocating). A catalog shares
    /// both strings (its routes and names are the same `Arc`s), so naming a tool whose name is
    /// its own costs one allocation.
    by_tool: HashMap<Box<str>, HashMap<Arc<str>, Arc<str>>>,
    /// Every name given (the same strings as in `by_tool` and `retired`).
    names: HashSet<Arc<str>>,
    /// Names whose tool was named again under a new prefix → that tool (server, own name).
    retired: HashMap<Arc<str>, (Box<str>, Arc<str>)>,
    /// The prefix each server's names were given under.
    prefixes: HashMap<Box<str>, Box<str>>,
}

impl ExposedNames {
    /// The name given to `tool` of `server`, if any.
    pub fn get(&self, server: &str, tool: &str) -> Option<&str> {
        self.by_tool.get(server)?.get(tool).map(|n| &**n)
    }

    /// [`ExposedNames::get`] as the shared strings: the tool's own name as kept, and its name.
    pub fn given(&self, server: &str, tool: &str) -> Option<(&Arc<str>, &Arc<str>)> {
        self.by_tool.get(server)?.get_key_value(tool)
    }

    /// Whether `name` was given to some tool other than `tool` of `server`.
    pub fn taken_by_other(&self, name: &str, server: &str, tool: &str) -> bool {
        self.names.contains(name)
            && self.get(server, tool) != Some(name)
            && !self.retired_from(name, server, tool)
    }

    /// Whether `name` is retired from `tool` of `server` ([`ExposedNames::follow_prefix`]).
    fn retired_from(&self, name: &str, server: &str, tool: &str) -> bool {
        self.retired
            .get(name)
            .is_some_and(|(s, t)| **s == *server && **t == *tool)
    }

    /// Records that `server`'s tools are named under `prefix` from now on. When its names were
    /// given under another prefix, they are retired (see the type's doc) and its tools get new
    /// names from the next catalog built.
    pub fn follow_prefix(&mut self, server: &str, prefix: &str) {
        match self.prefixes.get_mut(server) {
            Some(was) if **was == *prefix => return,
            Some(was) => *was = prefix.into(),
            None => {
                self.prefixes.insert(server.into(), prefix.into());
                return;
            }
        }
        let Some(tools) = self.by_tool.remove(server) else {
            return;
        };
        for (tool, name) in tools {
            self.retired.insert(name, (server.into(), tool));
        }
    }

    /// Records that `tool` of `server` is exposed as `name`. A tool keeps its first name: a
    /// second call for the same tool, or for a name already given, changes nothing (a name
    /// retired from this very tool is given back).
    pub fn assign(&mut self, server: &str, tool: &str, name: &str) {
        self.assign_shared(server, &tool.into(), &name.into());
    }

    /// [`ExposedNames::assign`] keeping these very strings (`tool`, the tool's own name, and
    /// `name`), so that a catalog can share them instead of copying.
    pub fn assign_shared(&mut self, server: &str, tool: &Arc<str>, name: &Arc<str>) {
        // Inserted first: a new name (the usual case) is hashed once.
        if !self.names.insert(name.clone()) {
            if self.retired_from(name, server, tool) && self.get(server, tool).is_none() {
                let name = self.retired.remove_entry(&**name).expect("retired").0;
                let tools = self.by_tool.entry(server.into()).or_default();
                tools.insert(tool.clone(), name);
            }
            return;
        }
        let tools = match self.by_tool.get_mut(server) {
            Some(tools) => tools,
            None => self.by_tool.entry(server.into()).or_default(),
        };
        match tools.entry(tool.clone()) {
            Entry::Vacant(slot) => {
                slot.insert(name.clone());
            }
            // The tool has its name already: this one is not given.
            Entry::Occupied(_) => {
                self.names.remove(&**name);
            }
        }
    }

    /// Gives a session's first names all at once: `all` is every name, and `given` each
    /// server's map of its tools' own names to their names (together one-to-one). The same
    /// state as [`ExposedNames::assign_shared`] for each tool, the maps made ahead (as each
    /// server's list arrives). Only while no name was given ([`ExposedNames::is_empty`]); the
    /// servers' prefixes are followed by the caller ([`ExposedNames::follow_prefix`]).
    pub(crate) fn give_first<'a>(
        &mut self,
        all: HashSet<Arc<str>>,
        given: impl IntoIterator<Item = (&'a str, HashMap<Arc<str>, Arc<str>>)>,
    ) {
        debug_assert!(self.is_empty(), "only a session's first names");
        self.names = all;
        for (server, tools) in given {
            if !tools.is_empty() {
                self.by_tool.insert(server.into(), tools);
            }
        }
    }

    /// Makes room for `tools` names of `server` (counting those it has already), so that
    /// assigning a whole listing does not grow the maps step by step (each growth rehashes
    /// every name: about a fifth of a 10,000-tool catalog's build).
    pub fn reserve(&mut self, server: &str, tools: usize) {
        if tools == 0 {
            return;
        }
        let given = match self.by_tool.get_mut(server) {
            Some(given) => given,
            None => self.by_tool.entry(server.into()).or_default(),
        };
        let more = tools.saturating_sub(given.len());
        given.reserve(more);
        self.names.reserve(more);
    }

    /// How many names were given.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether no name was given yet.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_stays_with_its_first_tool() {
        let mut names = ExposedNames::default();
        names.assign("gh", "echo", "gh__echo");
        names.assign("aaa", "gh__echo", "gh__echo");
        names.assign("gh", "echo", "echo");
        assert_eq!(names.get("gh", "echo"), Some("gh__echo"));
        assert_eq!(names.get("aaa", "gh__echo"), None);
        assert!(names.taken_by_other("gh__echo", "aaa", "gh__echo"));
        assert!(!names.taken_by_other("gh__echo", "gh", "echo"));
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_new_prefix_names_the_servers_tools_again_and_retires_the_old_names() {
        let mut names = ExposedNames::default();
        names.follow_prefix("gh", "");
        names.assign("gh", "echo", "echo");
        names.follow_prefix("gh", "");
        assert_eq!(names.get("gh", "echo"), Some("echo"), "same prefix: kept");
        names.follow_prefix("gh", "p_");
        assert_eq!(names.get("gh", "echo"), None, "named again");
        assert!(
            names.taken_by_other("echo", "other", "echo"),
            "retired, not freed"
        );
        assert!(!names.taken_by_other("echo", "gh", "echo"));
        names.assign("other", "echo", "echo");
        assert_eq!(names.get("other", "echo"), None);
        names.assign("gh", "echo", "p_echo");
        assert_eq!(names.get("gh", "echo"), Some("p_echo"));
        // Back to the first prefix: the tool gets its first name back.
        names.follow_prefix("gh", "");
        assert!(!names.taken_by_other("echo", "gh", "echo"));
        names.assign("gh", "echo", "echo");
        assert_eq!(names.get("gh", "echo"), Some("echo"));
        assert!(names.taken_by_other("p_echo", "other", "p_echo"));
        assert_eq!(names.len(), 2);
    }

    #[test]
    fn room_made_ahead_changes_no_name() {
        let mut names = ExposedNames::default();
        names.reserve("none", 0);
        assert!(
            names.by_tool.is_empty(),
            "no table for a server without tools"
        );
        names.assign("gh", "echo", "echo");
        names.reserve("gh", 3);
        names.reserve("gh", 1);
        names.assign("gh", "echo", "other");
        names.assign("gh", "log", "log");
        assert_eq!(names.get("gh", "echo"), Some("echo"));
        assert_eq!(names.get("gh", "log"), Some("log"));
        assert_eq!(names.len(), 2);
        assert!(names.by_tool["gh"].capacity() >= 3);
    }
}
