//! `${VAR}` expansion, reading files, finding the config file.

use super::*;

#[test]
fn var_expansion() {
    let env = &test_env;
    assert_eq!(expand_vars("${HOME}/x", env).unwrap(), "/home/u/x");
    assert_eq!(
        expand_vars("a${TOKEN}b${HOME}", env).unwrap(),
        "as3cr3tb/home/u"
    );
    assert_eq!(expand_vars("${EMPTY}", env).unwrap(), "");
    assert_eq!(expand_vars("$HOME", env).unwrap(), "$HOME");
    assert_eq!(expand_vars("cost: 5$", env).unwrap(), "cost: 5$");
    assert_eq!(expand_vars("$$", env).unwrap(), "$$");
    assert_eq!(expand_vars("a$$b", env).unwrap(), "a$$b");
    assert_eq!(expand_vars("$${HOME}", env).unwrap(), "$${HOME}");
    assert_eq!(expand_vars("$${NOPE}", env).unwrap(), "$${NOPE}");
    assert_eq!(expand_vars("$$$", env).unwrap(), "$$$");
    assert_eq!(expand_vars("{HOME}", env).unwrap(), "{HOME}");
    assert!(expand_vars("${NOPE}", env)
        .unwrap_err()
        .contains("`NOPE` is not set"));
    assert!(expand_vars("${HOME", env)
        .unwrap_err()
        .contains("unterminated"));
    assert!(expand_vars("${}", env)
        .unwrap_err()
        .contains("invalid variable name"));
    assert!(expand_vars("${1A}", env)
        .unwrap_err()
        .contains("invalid variable name"));

    let text = format!(
        "{GIT}args = [\"--home=${{HOME}}\", \"$HOME\"]\nenv = {{ Z = \"${{TOKEN}}\", A = \"$$\" }}\n"
    );
    let git = parse(&text).unwrap().servers.remove(0);
    assert_eq!(git.args, ["--home=/home/u", "$HOME"]);
    assert_eq!(
        git.env,
        [
            ("A".to_string(), "$$".to_string()),
            ("Z".into(), "s3cr3t".into())
        ]
    );
    // Command and cwd expand too (`command` keeps the text as written); the transcript
    // path does not.
    let text = "[mcp_servers.s]\ncommand = \"${HOME}/bin/srv\"\ncwd = \"${HOME}/w\"\n";
    let s = parse(text).unwrap().servers.remove(0);
    assert_eq!(s.command, "${HOME}/bin/srv");
    assert_eq!(s.program, PathBuf::from("/home/u/bin/srv"));
    assert_eq!(s.cwd, Some(PathBuf::from("/home/u/w")));
    assert_error(
        "[mcp_servers.s]\ncommand = \"${NOPE}/srv\"\n",
        2,
        11,
        "mcp_servers.s.command",
        "environment variable `NOPE` is not set",
    );
}

#[test]
fn missing_env_var_is_an_error() {
    assert_error(
        &format!("{GIT}args = [\"a\", \"${{NOPE}}\"]\n"),
        3,
        14,
        "mcp_servers.git.args[1]",
        "environment variable `NOPE` is not set",
    );
    assert_error(
        &format!("{GIT}env = {{ A = \"x${{NOPE}}\" }}\n"),
        3,
        13,
        "mcp_servers.git.env.A",
        "`NOPE` is not set",
    );
    assert_error(
        &format!("{GIT}[mcp_servers.git.env]\nA = \"${{HOME\"\n"),
        4,
        5,
        "mcp_servers.git.env.A",
        "unterminated",
    );
    assert_error(
        &format!("{GIT}env = {{ \"A=B\" = \"x\" }}\n"),
        3,
        17,
        "mcp_servers.git.env.\"A=B\"",
        "invalid environment variable name",
    );
}

#[test]
fn load_reads_files_and_reports_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    std::fs::write(&path, GIT).unwrap();
    let config = Config::load(&path).unwrap();
    assert_eq!(config.servers[0].name, "git");
    assert_eq!(config.base_dir, dir.path());

    let missing = dir.path().join("missing.toml");
    let err = Config::load(&missing).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: cannot read: No such file or directory",
            missing.display()
        )
    );
    assert_eq!((err.line, err.column, err.key), (None, None, None));
}

#[test]
fn discovery_order() {
    let cwd = Path::new("/work/dir");
    let env_all = |name: &str| match name {
        "MCP_ENVELOPE_CONFIG" => Some("/env/c.toml".to_string()),
        "XDG_CONFIG_HOME" => Some("/xdg".to_string()),
        "HOME" => Some("/home/u".to_string()),
        _ => None,
    };
    let all = |_: &Path| true;
    // 1. --config wins, even over existing files, and is not checked.
    let found = discover(Some(Path::new("given.toml")), &env_all, cwd, &|_| false);
    assert_eq!(found.unwrap(), Path::new("given.toml"));
    // 2. MCP_ENVELOPE_CONFIG.
    assert_eq!(
        discover(None, &env_all, cwd, &all).unwrap(),
        Path::new("/env/c.toml")
    );
    // 3. ./mcp-envelope.toml.
    let env_no_var = |name: &str| match name {
        "MCP_ENVELOPE_CONFIG" => Some(String::new()),
        other => env_all(other),
    };
    assert_eq!(
        discover(None, &env_no_var, cwd, &all).unwrap(),
        Path::new("/work/dir/mcp-envelope.toml")
    );
    // 4. $XDG_CONFIG_HOME/mcp-envelope/config.toml.
    let user_only = |p: &Path| p == Path::new("/xdg/mcp-envelope/config.toml");
    assert_eq!(
        discover(None, &env_no_var, cwd, &user_only).unwrap(),
        Path::new("/xdg/mcp-envelope/config.toml")
    );
    // XDG_CONFIG_HOME unset (or relative): $HOME/.config.
    let env_home = |name: &str| match name {
        "HOME" => Some("/home/u".to_string()),
        "XDG_CONFIG_HOME" => Some("relative".to_string()),
        _ => None,
    };
    let home_only = |p: &Path| p == Path::new("/home/u/.config/mcp-envelope/config.toml");
    assert_eq!(
        discover(None, &env_home, cwd, &home_only).unwrap(),
        Path::new("/home/u/.config/mcp-envelope/config.toml")
    );
}

#[test]
fn discovery_error_lists_every_place() {
    let cwd = Path::new("/work/dir");
    let env_home = |name: &str| (name == "HOME").then(|| "/home/u".to_string());
    let err = discover(None, &env_home, cwd, &|_| false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no config file found; looked at: --config (not given), MCP_ENVELOPE_CONFIG (not set), \
         /work/dir/mcp-envelope.toml (not found), \
         /home/u/.config/mcp-envelope/config.toml (not found)"
    );
    let err = discover(None, &no_env, cwd, &|_| false).unwrap_err();
    assert_eq!(err.looked.len(), 4);
    assert!(
        err.looked[3].contains("neither XDG_CONFIG_HOME nor HOME is set"),
        "{err}"
    );
}
