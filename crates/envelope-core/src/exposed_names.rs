//! The names the client has been given for tools, kept for the whole session.
//!
//! A name, once given to a tool (a server and its own tool name), stays with that tool until
//! the proxy exits, even while the tool is gone (its server restarting, or a listing without
//! it): a server that lists a tool later can never take over a name the client already uses
//! for another server's tool, so a call under that name always reaches the tool the client
//! meant. Tools that arrive later get a name no other tool ever had. Pure; no I/O.

use std::collections::HashMap;

/// A server's config name and the tool's own name on that server.
pub type ToolKey = (String, String);

/// Every exposed name given so far, both ways.
#[derive(Debug, Clone, Default)]
pub struct ExposedNames {
    /// Server → its tool → the tool's name (looked up without allocating).
    by_tool: HashMap<String, HashMap<String, String>>,
    by_name: HashMap<String, ToolKey>,
}

impl ExposedNames {
    /// The name given to `tool` of `server`, if any.
    pub fn get(&self, server: &str, tool: &str) -> Option<&str> {
        self.by_tool.get(server)?.get(tool).map(String::as_str)
    }

    /// Whether `name` was given to some tool other than `tool` of `server`.
    pub fn taken_by_other(&self, name: &str, server: &str, tool: &str) -> bool {
        self.by_name
            .get(name)
            .is_some_and(|(s, t)| s != server || t != tool)
    }

    /// Records that `tool` of `server` is exposed as `name`. A tool keeps its first name: a
    /// second call for the same tool, or for a name already given, changes nothing.
    pub fn assign(&mut self, server: &str, tool: &str, name: &str) {
        if self.get(server, tool).is_some() || self.by_name.contains_key(name) {
            return;
        }
        let key = (server.to_owned(), tool.to_owned());
        self.by_name.insert(name.to_owned(), key);
        let tools = self.by_tool.entry(server.to_owned()).or_default();
        tools.insert(tool.to_owned(), name.to_owned());
    }

    /// How many names were given.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Whether no name was given yet.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
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
}
