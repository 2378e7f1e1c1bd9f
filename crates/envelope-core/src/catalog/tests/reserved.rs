//! Names reserved by a server's config (`enabled_tools`, [`ServerTools::reserved`]): the same
//! names whichever servers are up.

use super::*;

/// Server `name` listing `tools`, its config listing `reserved`.
fn listing<'a>(
    name: &'a str,
    tools: &'a [ServerTool],
    reserved: &'a [String],
) -> ServerTools<'a, ServerTool> {
    ServerTools {
        reserved: Some(reserved),
        ..server(name, tools)
    }
}

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

fn route(server: &str, tool: &str) -> Route {
    Route {
        server: server.into(),
        tool: tool.into(),
    }
}

#[test]
fn a_collision_with_a_server_that_is_down_renames_as_when_it_is_up() {
    let a = t([json!({"name": "echo"}), json!({"name": "add"})]);
    let b = t([json!({"name": "echo"})]);
    let (a_list, b_list) = (strings(&["echo", "add"]), strings(&["echo"]));
    let up = [listing("a", &a, &a_list), listing("b", &b, &b_list)];
    let (both, _) = Catalog::build(&up);
    assert_eq!(names(&both), ["a__echo", "add", "b__echo"]);
    // b down (no listing): a's names are the same; b's tool has its name, not offered.
    let down = [listing("a", &a, &a_list), listing("b", &[], &b_list)];
    let (only_a, warnings) = Catalog::build(&down);
    assert_eq!(names(&only_a), ["a__echo", "add"]);
    assert_eq!(only_a.route("a__echo"), Some(&route("a", "echo")));
    assert_eq!(only_a.route("echo"), None);
    assert_eq!(only_a.reserved("b__echo"), Some(&route("b", "echo")));
    assert_eq!(only_a.reserved("a__echo"), None, "offered");
    assert_eq!(only_a.shared("echo"), ["a__echo".into(), "b__echo".into()]);
    assert!(only_a.shared("add").is_empty() && only_a.shared("a__echo").is_empty());
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("exposes it as 'a__echo'")),
        "{warnings:?}"
    );
    // Up, but not offering a tool its list names: the same again.
    let other = t([json!({"name": "other"})]);
    let only_listed = |t: &str| t == "echo";
    let b_up = ServerTools {
        exposes: &only_listed,
        ..listing("b", &other, &b_list)
    };
    let (no_echo, _) = Catalog::build(&[listing("a", &a, &a_list), b_up]);
    assert_eq!(names(&no_echo), names(&only_a));
    // Without a list, a server that is down counts for nothing (its names are unknown).
    let (unknown, _) = Catalog::build(&[listing("a", &a, &a_list), server("b", &[])]);
    assert_eq!(names(&unknown), ["echo", "add"]);
    assert_eq!(unknown.reserved("b__echo"), None);
}

#[test]
fn a_server_that_comes_up_later_gets_its_reserved_name_and_changes_no_other() {
    let echo = t([json!({"name": "echo"})]);
    let list = strings(&["echo"]);
    let mut names = ExposedNames::default();
    let (first, _) = Catalog::build_stable(
        &[listing("a", &echo, &list), listing("b", &[], &list)],
        &mut names,
    );
    assert_eq!(names_of(&first), [("a__echo".into(), "a".into())]);
    let (later, _) = Catalog::build_stable(
        &[listing("a", &echo, &list), listing("b", &echo, &list)],
        &mut names,
    );
    let (fresh, _) = Catalog::build(&[listing("a", &echo, &list), listing("b", &echo, &list)]);
    assert_eq!(names_of(&later), names_of(&fresh));
    assert_eq!(later.route("b__echo"), Some(&route("b", "echo")));
    assert_eq!(later.reserved("b__echo"), None, "offered now");
    // Down again: reserved again, under the same name.
    let (again, _) = Catalog::build_stable(
        &[listing("a", &echo, &list), listing("b", &[], &list)],
        &mut names,
    );
    assert_eq!(names_of(&again), names_of(&first));
    assert_eq!(again.reserved("b__echo"), Some(&route("b", "echo")));
}

#[test]
fn a_reserved_name_is_numbered_and_counted_in_config_order_as_a_listed_one() {
    // c (no list) offers a tool named like a's renamed one: a, earlier in the config, keeps
    // `a__echo` whether it is up or not.
    let echo = t([json!({"name": "echo"})]);
    let sneaky = t([json!({"name": "a__echo"})]);
    let list = strings(&["echo"]);
    for a_tools in [&echo[..], &[]] {
        let (catalog, _) = Catalog::build(&[
            listing("a", a_tools, &list),
            server("b", &echo),
            server("c", &sneaky),
        ]);
        let a_echo = if a_tools.is_empty() {
            catalog.reserved("a__echo")
        } else {
            catalog.route("a__echo")
        };
        assert_eq!(a_echo, Some(&route("a", "echo")));
        assert_eq!(catalog.route("a__echo__2"), Some(&route("c", "a__echo")));
        assert_eq!(catalog.route("b__echo"), Some(&route("b", "echo")));
    }
}

#[test]
fn a_reserved_name_the_filter_hides_or_listed_twice_counts_once_or_not_at_all() {
    let echo = t([json!({"name": "echo"})]);
    let list = strings(&["echo", "echo", "hidden"]);
    let deny = |t: &str| t != "hidden";
    let b = ServerTools {
        exposes: &deny,
        ..listing("b", &[], &list)
    };
    let hidden = t([json!({"name": "hidden"})]);
    let (catalog, warnings) = Catalog::build(&[server("a", &hidden), server("c", &echo), b]);
    assert_eq!(names(&catalog), ["hidden", "c__echo"]);
    assert_eq!(catalog.reserved("b__echo"), Some(&route("b", "echo")));
    assert_eq!(catalog.reserved("b__hidden"), None);
    assert!(
        !warnings.iter().any(|w| w.contains("twice")),
        "{warnings:?}"
    );
}

#[test]
fn parts_with_reserved_names_join_as_the_full_rules_name() {
    let a = t([json!({"name": "echo"}), json!({"name": "add"})]);
    let (a_list, b_list) = (strings(&["echo", "add", "absent"]), strings(&["sum"]));
    // No collision: the parts are joined, reserved names included.
    assert_parts_join_as_the_full_rules_name(&[
        listing("a", &a, &a_list),
        listing("b", &[], &b_list),
    ]);
    let parts = vec![
        ToolsPart::new(&listing("a", &a, &a_list)),
        ToolsPart::new(&listing("b", &[], &b_list)),
    ];
    let servers = [listing("a", &a, &a_list), listing("b", &[], &b_list)];
    let (joined, _) = Catalog::build_first(&servers, parts, &mut ExposedNames::default());
    assert_eq!(joined.reserved("sum"), Some(&route("b", "sum")));
    assert_eq!(joined.reserved("absent"), Some(&route("a", "absent")));
    // A collision with a reserved name: the full rules.
    let echo = strings(&["echo"]);
    assert_parts_join_as_the_full_rules_name(&[
        listing("a", &a, &a_list),
        listing("b", &[], &echo),
    ]);
}
