//! Prompts passed through (MCP specification 2025-11-25, "Server Features: Prompts").
//!
//! Prompts are named exactly like tools ([`crate::catalog::Catalog::build_stable`]): a server's
//! `enabled_prompts` / `disabled_prompts` lists filter its own prompt names, its `tool_prefix`
//! is prepended, two servers offering the same name are both exposed as `<server>__<prompt>`,
//! and a prefix that recreates such a name gets a numbered suffix. `prompts/list` re-reads every
//! server's prompts (all pages; the servers at once, [`super::fetch_each`]) and answers the
//! merged list in one page; `prompts/get` is routed
//! by the name the client sees, sent with the server's own name, and its answer (messages and
//! all) passes through unchanged.

use std::sync::Arc;

use jsonrpc_core::ErrorCode;
use serde_json::{json, Value};
use tracing::warn;

use super::{check_cursor, Passthrough, Upstream};
use crate::availability::Down;
use crate::catalog::{Catalog, NameFilter, Route, ServerTools};
use crate::config::Config;
use crate::downstream::Downstream;
use crate::exposed_names::ExposedNames;
use crate::jsonrpc;

/// The merged prompt list, the route of each exposed name, and every name given so far (a
/// prompt keeps its name for the session, as tools do).
#[derive(Debug, Clone, Default)]
pub struct PromptCatalog {
    catalog: Catalog<Value>,
    names: ExposedNames,
}

impl PromptCatalog {
    /// Rebuilds the list from each server's prompts (MCP `Prompt` objects, all pages), in
    /// config order, with the naming rules of tools; names given earlier are kept. Returns the
    /// naming warnings.
    pub fn rebuild(&mut self, lists: &[(String, Arc<Vec<Value>>)], config: &Config) -> Vec<String> {
        let servers: Vec<_> = lists
            .iter()
            .filter_map(|(name, list)| Some((name, list, config.server(name)?)))
            .collect();
        let filters: Vec<NameFilter<'_>> = servers
            .iter()
            .map(|(_, _, cfg)| Box::new(move |p: &str| cfg.exposes_prompt(p)) as NameFilter<'_>)
            .collect();
        let inputs: Vec<ServerTools<'_>> = servers
            .iter()
            .zip(&filters)
            .map(|((name, list, cfg), exposes)| ServerTools {
                server: name.as_str(),
                prefix: &cfg.tool_prefix,
                tools: list.as_slice(),
                exposes: exposes.as_ref(),
                reserved: None,
            })
            .collect();
        let (catalog, warnings) = Catalog::build_items(&inputs, &mut self.names, "prompt", rename);
        self.catalog = catalog;
        warnings
    }

    /// The prompts for a `prompts/list` answer, renamed.
    pub fn prompts(&self) -> &[Value] {
        self.catalog.tools()
    }

    /// The exposed names of `server`'s prompts.
    pub fn names_of(&self, server: &str) -> Vec<String> {
        let routes = self.catalog.routes().into_iter();
        let of_server = routes.filter(|(_, route)| &*route.server == server);
        of_server.map(|(name, _)| name.to_owned()).collect()
    }

    /// Where an exposed prompt name goes (`tool` holds the prompt's own name).
    pub fn route(&self, name: &str) -> Option<&Route> {
        self.catalog.route(name)
    }
}

/// The -32602 error for a prompt name no server up offers; the servers in `down` (that are
/// down and might offer it, [`could_offer`]) are named in the message and in
/// `data.servers_down` ([`super::down::note`]).
pub fn unknown_prompt(name: &str, down: &[Down]) -> Value {
    let note = super::down::note(down, "prompts");
    let message = format!("Unknown prompt: {name}{note}");
    let data = super::down::with_servers_down(None, down);
    jsonrpc::error_object(ErrorCode::InvalidParams, message, data)
}

/// Whether server `server` could offer a prompt the client knows as `name`: its `tool_prefix`
/// starts the name and its `enabled_prompts` / `disabled_prompts` let the rest through (the
/// rule of `tools/call`'s `servers_down`, README "Error types").
pub fn could_offer(config: &Config, server: &str, name: &str) -> bool {
    config.server(server).is_some_and(|cfg| {
        let own = name.strip_prefix(cfg.tool_prefix.as_str());
        own.is_some_and(|own| cfg.exposes_prompt(own))
    })
}

/// A prompt as the client sees it: `name` set to `exposed`, everything else unchanged.
fn rename(prompt: &Value, exposed: &str) -> Value {
    let mut prompt = prompt.clone();
    if let Some(obj) = prompt.as_object_mut() {
        obj.insert("name".into(), Value::from(exposed));
    }
    prompt
}

impl Passthrough {
    /// Re-reads the prompts of `servers`, and of every other ready server that offers prompts
    /// whose list was never read, then rebuilds the catalog over all of them. A server whose
    /// list fails keeps its previous list. Every list is known before names are given: a
    /// rebuild over one server's list alone (a server added by a config reload, before the
    /// client listed prompts) gave it a name that another server's prompt then had to give up.
    pub(super) async fn refresh_prompts(
        &self,
        up: &Upstream<'_>,
        servers: &[&Downstream],
    ) -> Result<(), String> {
        let offering = up.offering("prompts");
        let unread: Vec<&Downstream> = {
            let known = self.prompt_lists.lock().unwrap();
            let unread = offering.iter().filter(|ds| !known.contains_key(ds.name()));
            unread
                .filter(|ds| !servers.iter().any(|s| s.name() == ds.name()))
                .copied()
                .collect()
        };
        let mut failure = Ok(());
        let asked: Vec<&Downstream> = servers.iter().chain(&unread).copied().collect();
        // Every server at once; their answers are then taken in that order.
        let fetched = super::fetch_each(up, &asked, "prompts/list", "prompts").await;
        for (ds, fetched) in asked.into_iter().zip(fetched) {
            match fetched {
                Ok(list) => {
                    self.down_prompts.lock().unwrap().back(ds.name());
                    self.prompt_lists
                        .lock()
                        .unwrap()
                        .insert(ds.name().to_owned(), Arc::new(list));
                }
                Err(e) => failure = Err(format!("server '{}': {e}", ds.name())),
            }
        }
        let lists: Vec<(String, Arc<Vec<Value>>)> = {
            let known = self.prompt_lists.lock().unwrap();
            offering
                .iter()
                .filter_map(|ds| Some((ds.name().to_owned(), known.get(ds.name())?.clone())))
                .collect()
        };
        let warnings = self.prompts.lock().unwrap().rebuild(&lists, &up.config);
        for w in warnings {
            warn!("{w}");
        }
        failure
    }

    /// The route of an exposed prompt name. When the name is not known yet (a client may get
    /// a prompt without listing first), every server's prompts are read again; when it is
    /// still unknown and a server is (re)starting, that server is waited for (up to its
    /// `tool_timeout_sec`) and the prompts are read once more. A known name whose server is
    /// (re)starting waits for it the same way. `Err` is the -32602 error to answer: the
    /// server that is down and owns the name, with why ([`super::down`]), else "Unknown
    /// prompt" naming the servers that are down (or were not ready) and could offer the name
    /// ([`unknown_prompt`]), known to own it or not.
    pub(super) async fn prompt_route(&self, up: &Upstream<'_>, name: &str) -> Result<Route, Value> {
        let known = || self.prompts.lock().unwrap().route(name).cloned();
        let route = match known() {
            Some(route) => Ok(route),
            None => self.prompt_route_again(up, name).await,
        };
        let route = route.map_err(|not_ready| {
            let owner = self
                .down_prompts
                .lock()
                .unwrap()
                .owner(name)
                .map(str::to_owned);
            match owner.and_then(|o| super::down::down(up, &o)) {
                Some(d) => super::down::prompt_error(name, &d),
                None => {
                    let could_offer = |server: &str| could_offer(&up.config, server, name);
                    unknown_prompt(
                        name,
                        &super::down::servers_down(up, &not_ready, could_offer),
                    )
                }
            }
        })?;
        // A server that is (re)starting is waited for; one still down then is named.
        let Some(ds) = up.server(&route.server) else {
            return Err(unknown_prompt(name, &[]));
        };
        match super::down::wait_back(up, ds).await {
            Ok(()) => Ok(route),
            Err(d) => Err(super::down::prompt_error(name, &d)),
        }
    }

    /// [`Passthrough::prompt_route`] of a name not known yet; `Err` with the servers still not
    /// ready after the wait.
    async fn prompt_route_again(
        &self,
        up: &Upstream<'_>,
        name: &str,
    ) -> Result<Route, Vec<String>> {
        let known = || self.prompts.lock().unwrap().route(name).cloned();
        let pass = || async move {
            if let Err(e) = self.refresh_prompts(up, &up.offering("prompts")).await {
                warn!(error = %e, "listing prompts failed");
            }
            known()
        };
        up.again_once_settled(pass).await
    }

    pub(super) async fn list_prompts(
        &self,
        up: &Upstream<'_>,
        params: &Value,
    ) -> Result<Value, Value> {
        check_cursor(Some(params))?;
        if let Err(e) = self.refresh_prompts(up, &up.offering("prompts")).await {
            warn!(error = %e, "listing prompts failed; that server's last list is used");
        }
        Ok(json!({ "prompts": self.prompts.lock().unwrap().prompts() }))
    }

    pub(super) async fn get_prompt(
        &self,
        up: &Upstream<'_>,
        mut params: Value,
    ) -> Result<Value, Value> {
        let invalid = |m: String| jsonrpc::error_object(ErrorCode::InvalidParams, m, None);
        let Some(name) = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return Err(invalid("`name` must be a string".into()));
        };
        if let Some(err) = super::param_shapes::prompt_params_error(&params) {
            return Err(err);
        }
        let route = self.prompt_route(up, &name).await?;
        let Some(ds) = up.server(&route.server) else {
            return Err(unknown_prompt(&name, &[]));
        };
        params["name"] = Value::from(&*route.tool);
        let answer = up.ask(ds, "prompts/get", &params).await;
        super::input_rounds::fulfil(up, ds, "prompts/get", &params, answer).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse(text, std::path::Path::new("/cfg/config.toml"), &|_| None).unwrap()
    }

    #[test]
    fn prompts_follow_the_tool_naming_rules() {
        let cfg = config(
            "[mcp_servers.a]\ncommand = \"x\"\ndisabled_prompts = [\"secret\"]\n\
             [mcp_servers.b]\ncommand = \"x\"\n\
             [mcp_servers.c]\ncommand = \"x\"\ntool_prefix = \"c_\"\nenabled_prompts = [\"hello\"]\n",
        );
        let list = |names: &[&str]| {
            Arc::new(
                names
                    .iter()
                    .map(|n| json!({"name": n, "description": format!("{n} prompt")}))
                    .collect::<Vec<_>>(),
            )
        };
        let lists = vec![
            ("a".to_owned(), list(&["greet", "secret", "only_a"])),
            ("b".to_owned(), list(&["greet"])),
            ("c".to_owned(), list(&["hello", "greet"])),
        ];
        let mut catalog = PromptCatalog::default();
        let warnings = catalog.rebuild(&lists, &cfg);
        let names: Vec<&str> = catalog
            .prompts()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a__greet", "only_a", "b__greet", "c_hello"]);
        assert_eq!(catalog.prompts()[0]["description"], "greet prompt");
        let route = catalog.route("c_hello").unwrap();
        assert_eq!((&*route.server, &*route.tool), ("c", "hello"));
        assert_eq!(&*catalog.route("b__greet").unwrap().tool, "greet");
        assert!(catalog.route("secret").is_none());
        // One warning for the collision, naming both servers' names for it.
        assert_eq!(
            warnings,
            [
                "prompt name 'greet' is offered by more than one server; server 'a' exposes it as \
              'a__greet', server 'b' exposes it as 'b__greet'"
            ]
        );
    }
}
