//! Config errors never repeat a value that may be a secret: a token written where a variable
//! NAME is expected, a number in `args`, `env` or a header table, any value written where a
//! string, list or table was expected.

use super::*;

/// Parses `text`, expects an error, and checks that it names `key` and never shows `secret`.
fn refused_without(text: &str, key: &str, secret: &str) -> ConfigError {
    let err = parse(text).expect_err("expected a config error");
    assert_eq!(err.key.as_deref(), Some(key), "{err}");
    assert!(err.line.is_some() && err.column.is_some(), "{err}");
    assert!(!err.to_string().contains(secret), "{err}");
    err
}

const REMOTE: &str = "[mcp_servers.r]\nurl = \"https://h/mcp\"\n";

#[test]
fn a_token_written_where_a_variable_name_is_expected_is_refused_unshown() {
    let cases = [
        (
            format!("{REMOTE}bearer_token_env_var = \"ghp_LEAK-8888\"\n"),
            "mcp_servers.r.bearer_token_env_var",
            "LEAK",
        ),
        (
            format!("{REMOTE}bearer_token_env_var = \"8LEAKLEAK\"\n"),
            "mcp_servers.r.bearer_token_env_var",
            "LEAK",
        ),
        (
            format!("{REMOTE}env_http_headers = {{ X = \"sk-LEAK-6666\" }}\n"),
            "mcp_servers.r.env_http_headers.X",
            "LEAK",
        ),
        (
            format!("{GIT}env_vars = [\"sk-LEAK-6666\"]\n"),
            "mcp_servers.git.env_vars[0]",
            "LEAK",
        ),
    ];
    for (text, key, secret) in cases {
        let err = refused_without(&text, key, secret);
        assert!(
            err.message.contains("invalid environment variable name"),
            "{err}"
        );
    }
    // A name that looks right is accepted (whether it is set is a question for `check`).
    let ok = parse(&format!("{REMOTE}bearer_token_env_var = \"_GH_TOKEN2\"\n")).unwrap();
    let remote = ok.server("r").unwrap().remote.as_ref().unwrap();
    assert_eq!(remote.bearer_token_env_var.as_deref(), Some("_GH_TOKEN2"));
}

/// A token that is also a valid variable name (a GitHub token: `ghp_` and letters and digits)
/// is refused too: `check`, the log and the `initialize` instructions name an unset variable.
#[test]
fn a_token_shaped_like_a_variable_name_is_refused_unshown() {
    let cases = [
        (
            format!("{REMOTE}bearer_token_env_var = \"ghp_LEAKTOKENVALUE1234567890\"\n"),
            "mcp_servers.r.bearer_token_env_var",
        ),
        (
            format!("{REMOTE}env_http_headers = {{ X = \"AKIALEAK567890ABCDEF\" }}\n"),
            "mcp_servers.r.env_http_headers.X",
        ),
        (
            format!("{GIT}env_vars = [\"aZ9LEAKmixedCaseAndDigits42\"]\n"),
            "mcp_servers.git.env_vars[0]",
        ),
        (
            format!("{GIT}args = [\"${{github_pat_LEAK11}}\"]\n"),
            "mcp_servers.git.args[0]",
        ),
    ];
    for (text, key) in cases {
        let err = refused_without(&text, key, "LEAK");
        assert!(err.message.contains("looks like a token"), "{err}");
    }
    // Ordinary names, long ones included, are accepted.
    for name in [
        "GITHUB_PERSONAL_ACCESS_TOKEN",
        "MyApiToken",
        "AKIA_KEY",
        "gh_token",
    ] {
        let text = format!("{REMOTE}bearer_token_env_var = \"{name}\"\n");
        assert!(parse(&text).is_ok(), "{name}");
    }
}

#[test]
fn a_bad_name_inside_dollar_braces_is_not_repeated() {
    let err = refused_without(
        &format!("{GIT}args = [\"${{sk-LEAK-6666}}\"]\n"),
        "mcp_servers.git.args[0]",
        "LEAK",
    );
    assert!(err.message.contains("invalid variable name"), "{err}");
}

#[test]
fn a_value_of_the_wrong_type_is_not_repeated_and_the_expected_type_is_said() {
    let cases = [
        ("args = [\"--token\", 987654321]", "args[1]", "a string"),
        ("args = 987654321", "args", "a sequence"),
        (
            "env = { SECRET_TOKEN = 987654321 }",
            "env.SECRET_TOKEN",
            "a string",
        ),
        ("cwd = 987654321", "cwd", "a string"),
        (
            "enabled_tools = [987654321]",
            "enabled_tools[0]",
            "a string",
        ),
        (
            "disabled_prompts = [987654321]",
            "disabled_prompts[0]",
            "a string",
        ),
        ("tool_prefix = 987654321", "tool_prefix", "a string"),
        ("enabled = 987654321", "enabled", "a boolean"),
    ];
    for (body, key, expected) in cases {
        let text = format!("[mcp_servers.git]\ncommand = \"x\"\n{body}\n");
        let err = refused_without(&text, &format!("mcp_servers.git.{key}"), "987654321");
        assert!(
            err.message.contains(&format!("expected {expected}")),
            "{err}"
        );
    }
    let err = refused_without(
        "[mcp_servers.a]\ncommand = 987654321\n",
        "mcp_servers.a.command",
        "987654321",
    );
    assert!(err.message.contains("expected a string"), "{err}");
    let headers = format!("{REMOTE}http_headers = {{ X-Api-Key = 987654321 }}\n");
    refused_without(
        &headers,
        "mcp_servers.r.http_headers.X-Api-Key",
        "987654321",
    );
    let url = "[mcp_servers.r]\nurl = 987654321\n";
    refused_without(url, "mcp_servers.r.url", "987654321");
    let keys = "[transcript]\nredact_keys = [987654321]\n";
    refused_without(keys, "transcript.redact_keys[0]", "987654321");
    refused_without(
        "[paging]\ntool_name = 987654321\n",
        "paging.tool_name",
        "987654321",
    );
}

#[test]
fn a_numeric_keys_value_is_still_shown() {
    let err = parse(&format!("{GIT}char_budget = -5\n")).unwrap_err();
    assert!(err.message.contains("`-5`"), "{err}");
}
