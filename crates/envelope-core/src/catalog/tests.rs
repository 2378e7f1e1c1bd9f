//! The catalog's naming, routes and text ([`super::Catalog`]).

use super::*;
use serde_json::json;

fn all(_: &str) -> bool {
    true
}

/// The catalog's tools as values.
fn tool_values(catalog: &Catalog) -> Vec<Value> {
    let texts = catalog.tool_texts();
    texts.map(|t| serde_json::from_slice(t).unwrap()).collect()
}

/// The catalog's exposed names.
fn names(catalog: &Catalog) -> Vec<&str> {
    catalog.names().iter().map(|n| &**n).collect()
}

/// The tools of these values, as a server's listing keeps them.
fn t<const N: usize>(values: [Value; N]) -> Vec<ServerTool> {
    values
        .iter()
        .map(|v| ServerTool::from_value(v).unwrap())
        .collect()
}

#[test]
fn prefixes_filters_and_rewrites_output_schema() {
    let git = t([
        json!({"name": "git_log", "description": "Log", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}),
        json!({"name": "git_commit", "inputSchema": {"type": "object"}}),
    ]);
    let deny = |t: &str| t != "git_commit";
    let (catalog, warnings) = Catalog::build(&[ServerTools {
        server: "git",
        prefix: "g_",
        tools: &git,
        exposes: &deny,
        reserved: None,
    }]);
    assert!(warnings.is_empty());
    assert_eq!(catalog.len(), 1);
    let tool = &tool_values(&catalog)[0];
    assert_eq!(tool["name"], "g_git_log");
    assert_eq!(tool["description"], "Log");
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
    assert_eq!(tool["outputSchema"], Envelope::json_schema());
    assert_eq!(
        catalog.route("g_git_log"),
        Some(&Route {
            server: "git".into(),
            tool: "git_log".into()
        })
    );
    assert!(catalog.route("git_commit").is_none());
}

#[test]
fn a_tool_is_written_as_the_rewritten_value_in_the_same_member_order() {
    let values = [
        json!({"name": "a", "outputSchema": {"type": "object"}, "x-extra": {"k": [1, "é\n"]}, "description": "q\"uote"}),
        json!({"description": "d", "name": "b", "inputSchema": {"type": "object"}}),
    ];
    let tools = t(values.clone());
    let (catalog, _) = Catalog::build(&[ServerTools {
        server: "s",
        prefix: "p_",
        tools: &tools,
        exposes: &all,
        reserved: None,
    }]);
    assert_eq!(names(&catalog), ["p_a", "p_b"]);
    let array: Value = serde_json::from_slice(catalog.tools_json()).unwrap();
    assert_eq!(array, Value::Array(tool_values(&catalog)));
    for (written, original) in catalog.tool_texts().zip(&values) {
        let mut expected = original.clone();
        let exposed = format!("p_{}", original["name"].as_str().unwrap());
        expected["name"] = json!(exposed);
        expected["outputSchema"] = Envelope::json_schema();
        let got: Value = serde_json::from_slice(written).unwrap();
        assert_eq!(got, expected);
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&got), keys(&expected));
        assert!(!written.contains(&b'\n'), "one line");
    }
}

#[test]
fn collisions_expose_both_with_server_names() {
    let a = t([json!({"name": "echo"}), json!({"name": "only_a"})]);
    let b = t([json!({"name": "echo", "outputSchema": {"type": "object"}})]);
    let (catalog, warnings) = Catalog::build(&[
        ServerTools {
            server: "a",
            prefix: "",
            tools: &a,
            exposes: &all,
            reserved: None,
        },
        ServerTools {
            server: "b",
            prefix: "",
            tools: &b,
            exposes: &all,
            reserved: None,
        },
    ]);
    let names: Vec<&str> = catalog.routes().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a__echo", "b__echo", "only_a"]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("'echo'"));
    assert_eq!(&*catalog.route("b__echo").unwrap().tool, "echo");
}

/// Three servers offering `echo`: one warning for the collision, naming each server's name for
/// it (it was three warnings, one per server, each saying the name is offered by more than one
/// server, so `call` and `serve` printed the same collision three times).
#[test]
fn a_collision_of_three_servers_is_one_warning_naming_each() {
    let echo = t([json!({"name": "echo"}), json!({"name": "add"})]);
    let server = |name| ServerTools {
        server: name,
        prefix: "",
        tools: &echo,
        exposes: &all,
        reserved: None,
    };
    let (catalog, warnings) = Catalog::build(&[server("a"), server("b"), server("c")]);
    assert_eq!(catalog.len(), 6);
    assert_eq!(
        warnings,
        [
            "tool name 'echo' is offered by more than one server; server 'a' exposes it as \
             'a__echo', server 'b' exposes it as 'b__echo', server 'c' exposes it as 'c__echo'",
            "tool name 'add' is offered by more than one server; server 'a' exposes it as \
             'a__add', server 'b' exposes it as 'b__add', server 'c' exposes it as 'c__add'",
        ]
    );
}

#[test]
fn a_prefix_that_recreates_a_renamed_name_is_numbered_not_dropped() {
    let tools = t([json!({"name": "echo"})]);
    let (catalog, _) = Catalog::build(&[
        ServerTools {
            server: "a",
            prefix: "",
            tools: &tools,
            exposes: &all,
            reserved: None,
        },
        ServerTools {
            server: "b",
            prefix: "",
            tools: &tools,
            exposes: &all,
            reserved: None,
        },
        ServerTools {
            server: "c",
            prefix: "a__",
            tools: &tools,
            exposes: &all,
            reserved: None,
        },
    ]);
    let names: Vec<&str> = catalog.routes().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["a__echo", "a__echo__2", "b__echo"]);
    assert_eq!(&*catalog.route("a__echo__2").unwrap().server, "c");
}

fn server<'a>(name: &'a str, tools: &'a [ServerTool]) -> ServerTools<'a, ServerTool> {
    ServerTools {
        server: name,
        prefix: "",
        tools,
        exposes: &all,
        reserved: None,
    }
}

fn names_of(catalog: &Catalog) -> Vec<(String, String)> {
    catalog
        .routes()
        .into_iter()
        .map(|(n, r)| (n.to_owned(), r.server.to_string()))
        .collect()
}

#[test]
fn a_tool_listed_later_never_takes_a_given_name() {
    let echo = t([json!({"name": "echo"})]);
    let mut names = ExposedNames::default();
    let (first, _) = Catalog::build_stable(
        &[
            server("aaa", &[]),
            server("gh", &echo),
            server("jira", &echo),
        ],
        &mut names,
    );
    assert_eq!(&*first.route("gh__echo").unwrap().server, "gh");
    // `aaa` now lists a tool named like gh's exposed one, and `echo` itself.
    let sneaky = t([json!({"name": "gh__echo"}), json!({"name": "echo"})]);
    let (later, warnings) = Catalog::build_stable(
        &[
            server("aaa", &sneaky),
            server("gh", &echo),
            server("jira", &echo),
        ],
        &mut names,
    );
    assert_eq!(&*later.route("gh__echo").unwrap().server, "gh");
    assert_eq!(&*later.route("jira__echo").unwrap().server, "jira");
    assert_eq!(&*later.route("gh__echo__2").unwrap().server, "aaa");
    assert_eq!(&*later.route("aaa__echo").unwrap().tool, "echo");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("exposes it as 'gh__echo__2'")),
        "{warnings:?}"
    );
    // A tool that was alone keeps its plain name when another server adds the same one.
    let one = t([json!({"name": "solo"})]);
    let mut names = ExposedNames::default();
    Catalog::build_stable(&[server("a", &one), server("b", &[])], &mut names);
    let (c, _) = Catalog::build_stable(&[server("a", &one), server("b", &one)], &mut names);
    assert_eq!(
        names_of(&c),
        [("b__solo".into(), "b".into()), ("solo".into(), "a".into())]
    );
    // Gone and back: the same name; meanwhile nobody else gets it.
    let (c, _) = Catalog::build_stable(&[server("a", &[]), server("b", &one)], &mut names);
    assert_eq!(names_of(&c), [("b__solo".to_owned(), "b".to_owned())]);
    let (c, _) = Catalog::build_stable(&[server("a", &one), server("b", &one)], &mut names);
    assert_eq!(&*c.route("solo").unwrap().server, "a");
}

#[test]
fn a_first_catalog_is_named_as_the_full_rules_name_it() {
    let a = t([json!({"name": "echo"}), json!({"name": "x.y"})]);
    let b = t([json!({"name": "log"}), json!({"name": "echo"})]);
    let prefixed = ServerTools {
        prefix: "p_",
        ..server("b", &b)
    };
    let servers = [server("a", &a), prefixed];
    let (first, first_warnings) = Catalog::build(&servers);
    // A name given to a tool of neither server: the full rules run.
    let mut given = ExposedNames::default();
    given.assign("other", "t", "t");
    let (full, full_warnings) = Catalog::build_stable(&servers, &mut given);
    assert_eq!(first.tools_json(), full.tools_json());
    assert_eq!(names_of(&first), names_of(&full));
    assert_eq!(first_warnings, full_warnings);
    assert_eq!(names(&first), ["echo", "x.y", "p_log", "p_echo"]);
}

#[test]
fn numbered_names_follow_the_order_given() {
    let tools = t([json!({"name": "echo"})]);
    let prefixed = ServerTools {
        server: "zeta",
        prefix: "alpha__",
        tools: &tools,
        exposes: &all,
        reserved: None,
    };
    let (c, _) = Catalog::build(&[prefixed, server("alpha", &tools), server("beta", &tools)]);
    assert_eq!(&*c.route("alpha__echo").unwrap().server, "zeta");
    assert_eq!(&*c.route("alpha__echo__2").unwrap().server, "alpha");
}

#[test]
fn nameless_and_duplicate_items_warn() {
    let a = [
        json!({"description": "x"}),
        json!({"name": "t"}),
        json!({"name": "t", "n": 2}),
    ];
    let (catalog, warnings) = Catalog::build_items(
        &[ServerTools {
            server: "a",
            prefix: "p_",
            tools: &a,
            exposes: &all,
            reserved: None,
        }],
        &mut ExposedNames::default(),
        "prompt",
        |item: &Value, name: &str| (item.clone(), name.to_owned()),
    );
    assert_eq!(catalog.len(), 1);
    assert_eq!(catalog.tools()[0], (json!({"name": "t"}), "p_t".to_owned()));
    assert_eq!(warnings.len(), 2);
    assert!(
        warnings[0].contains("a prompt without a name"),
        "{warnings:?}"
    );
    // Tools: the same name twice (a cassette's list is not checked for it).
    let tools = t([json!({"name": "t"}), json!({"name": "t"})]);
    let (catalog, warnings) = Catalog::build(&[server("a", &tools)]);
    assert_eq!(catalog.len(), 1);
    assert!(
        warnings[0].contains("listed tool 't' twice"),
        "{warnings:?}"
    );
}

#[test]
fn names_no_client_accepts_are_never_offered() {
    let tools = t([json!({"name": "echo"})]);
    let odd = |name| ServerTools {
        server: name,
        prefix: "",
        tools: &tools,
        exposes: &all,
        reserved: None,
    };
    // A collision between servers whose config names hold spaces and other letters.
    let (c, warnings) = Catalog::build(&[odd("my server"), odd("ünï")]);
    assert_eq!(names(&c), ["my_server__echo", "_n___echo"], "{warnings:?}");
    let long = "p".repeat(125);
    let prefixed = ServerTools {
        prefix: &long,
        ..odd("a")
    };
    let (c, warnings) = Catalog::build(&[prefixed]);
    assert!(c.is_empty());
    assert!(
        warnings[0].contains("is 129 characters long"),
        "{warnings:?}"
    );
}

/// `servers`' first catalog joined from parts made ahead, and by the full rules (a name
/// given to a tool of no server makes them run): the same text, names, routes, warnings and
/// names given.
fn assert_parts_join_as_the_full_rules_name(servers: &[ServerTools<'_, ServerTool>]) {
    let parts = servers.iter().map(ToolsPart::new).collect();
    let mut first_names = ExposedNames::default();
    let (first, first_warnings) = Catalog::build_first(servers, parts, &mut first_names);
    let mut given = ExposedNames::default();
    given.assign("other", "t", "t");
    let (full, full_warnings) = Catalog::build_stable(servers, &mut given);
    assert_eq!(
        String::from_utf8_lossy(first.tools_json()),
        String::from_utf8_lossy(full.tools_json())
    );
    assert_eq!(names(&first), names(&full));
    assert_eq!(names_of(&first), names_of(&full));
    assert_eq!(first.routes(), full.routes());
    assert_eq!(first.reserved, full.reserved);
    assert_eq!(first.shared, full.shared);
    assert_eq!(first_warnings, full_warnings);
    assert_eq!(first_names.len() + 1, given.len());
    for s in servers {
        for tool in s.tools {
            let get = |n: &ExposedNames| n.get(s.server, tool.name()).map(str::to_owned);
            assert_eq!(get(&first_names), get(&given));
            let exposed = format!("{}{}", s.prefix, tool.name());
            let taken = |n: &ExposedNames| n.taken_by_other(&exposed, "nobody", "x");
            assert_eq!(taken(&first_names), taken(&given), "{exposed}");
        }
        for tool in s.reserved.unwrap_or_default() {
            let get = |n: &ExposedNames| n.get(s.server, tool).map(str::to_owned);
            assert_eq!(get(&first_names), get(&given), "{tool}");
        }
    }
}

#[test]
fn a_first_catalog_joined_from_parts_is_the_full_rules_catalog() {
    let a = t([
        json!({"name": "echo", "description": "é\"q"}),
        json!({"name": "echo"}),
        json!({"name": "task", "execution": {"taskSupport": "required"}}),
        json!({"name": "hidden"}),
        json!({"name": "x.y", "outputSchema": {"type": "object"}}),
    ]);
    let b = t([json!({"name": "log"}), json!({"name": "echo"})]);
    let c = t([json!({"name": "c1"}), json!({"name": "c2"})]);
    let no_hidden = |t: &str| t != "hidden";
    let a = ServerTools {
        exposes: &no_hidden,
        reserved: None,
        ..server("a", &a)
    };
    let b = ServerTools {
        prefix: "p_",
        ..server("b", &b)
    };
    // Names no client accepts: given, not offered, warned about.
    let c = ServerTools {
        prefix: "bad prefix ",
        ..server("c", &c)
    };
    let servers = [server("empty", &[]), a, b, c, server("last", &[])];
    assert_parts_join_as_the_full_rules_name(&servers);
    let (catalog, warnings) = Catalog::build(&servers);
    assert_eq!(names(&catalog), ["echo", "x.y", "p_log", "p_echo"]);
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(warnings[0].contains("listed tool 'echo' twice"));
}

#[test]
fn parts_that_collide_or_are_not_their_servers_are_named_by_the_full_rules() {
    let echo = t([json!({"name": "echo"}), json!({"name": "a__echo"})]);
    let prefixed = ServerTools {
        prefix: "a__",
        ..server("c", &echo)
    };
    let servers = [server("a", &echo), server("b", &echo), prefixed];
    assert_parts_join_as_the_full_rules_name(&servers);
    let (catalog, _) = Catalog::build(&servers);
    assert_eq!(&*catalog.route("a__a__echo__2").unwrap().server, "c");
    // A part made under another prefix (a reload meanwhile) is not used.
    let old = ToolsPart::new(&server("c", &echo));
    let parts = vec![
        ToolsPart::new(&servers[0]),
        ToolsPart::new(&servers[1]),
        old,
    ];
    let (joined, _) = Catalog::build_first(&servers, parts, &mut ExposedNames::default());
    assert_eq!(names_of(&joined), names_of(&catalog));
    // Every name distinct, but a part missing: not used either.
    let log = t([json!({"name": "log"})]);
    let servers = [server("a", &echo), server("d", &log)];
    let parts = vec![ToolsPart::new(&servers[1])];
    let (joined, _) = Catalog::build_first(&servers, parts, &mut ExposedNames::default());
    assert_eq!(names(&joined), ["echo", "a__echo", "log"]);
}

mod reserved;
