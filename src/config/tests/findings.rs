//! Config warnings ([`Config::warnings`]): located as errors are, said once per place.

use super::*;

fn parsed(text: &str) -> Config {
    Config::parse(text, Path::new("/cfg/c.toml"), &|_| None).unwrap()
}

/// A tool name in both lists of a server (twice in `disabled_tools`, too) is one warning at its
/// `disabled_tools` entry, naming the `enabled_tools` line; the tool is not offered. It was
/// said nowhere.
#[test]
fn a_tool_in_both_lists_of_a_server_is_one_located_warning() {
    let config = parsed(
        "[mcp_servers.git]\ncommand = \"x\"\nenabled_tools = [\"log\", \"status\"]\n\
         disabled_tools = [\"status\", \"status\", \"diff\"]\n",
    );
    assert_eq!(
        config.warning_lines(),
        [
            "/cfg/c.toml:4:19: mcp_servers.git.disabled_tools: \"status\" is also listed in \
          enabled_tools (line 3): disabled_tools wins, so the tool is never offered; remove it \
          from one of the two lists"
        ]
    );
    let git = config.server("git").unwrap();
    assert!(git.exposes("log") && !git.exposes("status"));
    assert!(parsed(
        "[mcp_servers.a]\ncommand = \"x\"\nenabled_tools = [\"t\"]\ndisabled_tools = [\"u\"]\n"
    )
    .warnings
    .is_empty());
}

/// A `token_budget` under 4 is one warning per place it is set (`[defaults]`, a server, a tool
/// table), however many tools it applies to; 4 is none. `check` said it once per tool.
#[test]
fn a_token_budget_under_four_is_said_once_per_place_it_is_set() {
    let config = parsed(
        "[defaults]\ntoken_budget = 2\n[mcp_servers.a]\ncommand = \"x\"\ntoken_budget = 3\n\
         [mcp_servers.a.tools.t1]\ntoken_budget = 1\n[mcp_servers.a.tools.t2]\n\
         token_budget = 4\n[mcp_servers.b]\ncommand = \"y\"\n",
    );
    let lines = config.warning_lines();
    let heads: Vec<&str> = lines
        .iter()
        .map(|l| l.split(" is under").next().unwrap())
        .collect();
    assert_eq!(
        heads,
        [
            "/cfg/c.toml:2:16: defaults.token_budget: token_budget 2",
            "/cfg/c.toml:5:16: mcp_servers.a.token_budget: token_budget 3",
            "/cfg/c.toml:7:16: mcp_servers.a.tools.t1.token_budget: token_budget 1",
        ],
        "{lines:?}"
    );
    assert!(
        lines[0].ends_with("cannot be shown (not even cut into pieces) by the tools it applies to"),
        "{}",
        lines[0]
    );
}
