//! Resources passed through (MCP specification 2025-11-25, "Server Features: Resources").
//!
//! - `resources/list` and `resources/templates/list`: every page of every ready server that
//!   offers resources, merged in config order into one page ([`merge`]); an item whose `uri`
//!   (`uriTemplate`) an earlier server already listed is left out with a warning in the log.
//!   The servers are asked at once ([`super::fetch_each`]); one that fails or times out is
//!   left out, with a warning in the log.
//! - `resources/read`, `resources/subscribe`, `resources/unsubscribe` are routed by URI
//!   ([`super::uri_routing`]): first the servers that listed that exact URI, then those with a
//!   template that matches it ([`crate::passthrough::uri_template`]), all asked at once; when
//!   every one of them declines, every other server that offers resources, all asked at once
//!   ([`Index::candidates`]). Servers may serve URIs they do not list, hence the last round.
//!   Within a round the first server in that order (then config order) that accepts wins, or
//!   whose error stands (one that is not a decline, from a server that listed the URI or a
//!   matching template, or that went down while asked): that answer is the request's once
//!   every server before it declined, whichever answers first. A server whose lists were
//!   never read (the client reads a URI without listing first) is listed before the request is
//!   routed (all such servers at once). When none accepts and a server is (re)starting, it is
//!   waited for (up to its `tool_timeout_sec`) and the servers are tried again. When none
//!   accepts, the answer is -32002 (resource not found) with `data.uri`.
//! - A URI that only a server that is down owns (it listed the URI or a matching template before
//!   it went down) goes to no other server: the error names that server and why
//!   ([`super::down`]); `resources/unsubscribe` of such a URI, or of one subscribed at a server
//!   that is down, succeeds at once and drops the record (nothing is subscribed again).
//! - A server is sent `resources/subscribe` once per URI on each connection: a subscription it
//!   already accepted there is answered with that acceptance ([`super::subscribed`]).
//! - URIs are never rewritten, and contents pass through unchanged (not enveloped).

use std::collections::HashMap;

use jsonrpc_core::ErrorCode;
use serde_json::{json, Value};
use tracing::{debug, warn};

use super::{check_cursor, uri_template, Passthrough, Upstream, RESOURCE_NOT_FOUND};
use crate::downstream::Downstream;
use crate::jsonrpc;

/// What each server last listed: exact URIs and URI templates, for routing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Index {
    listed: HashMap<String, Vec<String>>,
    templates: HashMap<String, Vec<String>>,
    /// What servers that gave up had listed (URIs, templates), moved here by
    /// [`Index::forget`]: they still name the owner of a URI while it is down.
    forgotten: HashMap<String, (Vec<String>, Vec<String>)>,
}

impl Index {
    /// Remembers the `uri`s of the resources `server` listed.
    pub fn set_resources(&mut self, server: &str, resources: &[Value]) {
        let uris = strings_at(resources, "uri");
        self.listed.insert(server.to_owned(), uris);
        self.forgotten.remove(server);
    }

    /// Remembers the `uriTemplate`s of the templates `server` listed.
    pub fn set_templates(&mut self, server: &str, templates: &[Value]) {
        let found = strings_at(templates, "uriTemplate");
        self.templates.insert(server.to_owned(), found);
        self.forgotten.remove(server);
    }

    /// The servers to ask for `uri`, each once, in two rounds: the likely owners, those (of
    /// `order`, the servers offering resources in config order) that listed `uri`, then those
    /// with a template matching it; and the rest of `order`.
    pub fn candidates(&self, uri: &str, order: &[&str]) -> (Vec<String>, Vec<String>) {
        let listed = |s: &&&str| {
            self.listed
                .get(**s)
                .is_some_and(|l| l.iter().any(|u| u == uri))
        };
        let templated = |s: &&&str| {
            self.templates
                .get(**s)
                .is_some_and(|ts| ts.iter().any(|t| uri_template::matches(t, uri)))
        };
        let mut owners: Vec<String> = Vec::new();
        let firsts = order.iter().filter(listed);
        let seconds = order.iter().filter(templated);
        for s in firsts.chain(seconds) {
            if !owners.iter().any(|o| o == s) {
                owners.push((*s).to_owned());
            }
        }
        let rest = order.iter().filter(|s| !owners.iter().any(|o| o == *s));
        let rest = rest.map(|s| (*s).to_owned()).collect();
        (owners, rest)
    }

    /// Whether `server`'s resources were ever listed (by a client's `resources/list`, a
    /// refresh, or [`Passthrough::route`] itself).
    pub fn has_listed(&self, server: &str) -> bool {
        self.listed.contains_key(server)
    }

    /// Forgets what `server` listed (it gave up), keeping it only to name the server as the
    /// owner of its URIs while it is down ([`Index::owner_while_down`]); whether it had listed
    /// any resource or template.
    pub fn forget(&mut self, server: &str) -> bool {
        let listed = self.listed.remove(server).unwrap_or_default();
        let templates = self.templates.remove(server).unwrap_or_default();
        let had = !listed.is_empty() || !templates.is_empty();
        if had {
            self.forgotten
                .insert(server.to_owned(), (listed, templates));
        }
        had
    }

    /// The URIs and templates `server` last listed, also after it gave up.
    fn last_lists(&self, server: &str) -> (&[String], &[String]) {
        if let Some((listed, templates)) = self.forgotten.get(server) {
            return (listed, templates);
        }
        let listed = self.listed.get(server).map_or(&[][..], Vec::as_slice);
        let templates = self.templates.get(server).map_or(&[][..], Vec::as_slice);
        (listed, templates)
    }

    /// The first of `down` (servers that are down, in config order) that last listed `uri`,
    /// else the first with a template matching it.
    pub fn owner_while_down(&self, uri: &str, down: &[String]) -> Option<String> {
        let exact = down
            .iter()
            .find(|s| self.last_lists(s).0.iter().any(|u| u == uri));
        let templated = || {
            down.iter().find(|s| {
                let templates = self.last_lists(s).1;
                templates.iter().any(|t| uri_template::matches(t, uri))
            })
        };
        exact.or_else(templated).cloned()
    }

    /// The first of `down` that last listed template `uri_template` exactly, else the URI
    /// `uri_template` exactly (for `completion/complete` with a `ref/resource`).
    pub fn template_owner_while_down(&self, uri_template: &str, down: &[String]) -> Option<String> {
        let has = |list: &[String]| list.iter().any(|t| t == uri_template);
        let templated = down.iter().find(|s| has(self.last_lists(s).1));
        let listed = || down.iter().find(|s| has(self.last_lists(s).0));
        templated.or_else(listed).cloned()
    }

    /// Whether `server` listed `uri` or a template matching it (its answer then counts even
    /// when it is an error).
    pub fn knows(&self, server: &str, uri: &str) -> bool {
        self.listed
            .get(server)
            .is_some_and(|l| l.iter().any(|u| u == uri))
            || self
                .templates
                .get(server)
                .is_some_and(|ts| ts.iter().any(|t| uri_template::matches(t, uri)))
    }

    /// The server that listed template `uri_template` exactly, else one that listed the URI
    /// `uri_template` exactly (for `completion/complete` with a `ref/resource`).
    pub fn owner_of_template(&self, uri_template: &str, order: &[&str]) -> Option<String> {
        let has = |m: &HashMap<String, Vec<String>>, s: &str| {
            m.get(s)
                .is_some_and(|l| l.iter().any(|t| t == uri_template))
        };
        order
            .iter()
            .find(|s| has(&self.templates, s))
            .or_else(|| order.iter().find(|s| has(&self.listed, s)))
            .map(|s| (*s).to_owned())
    }
}

fn strings_at(items: &[Value], key: &str) -> Vec<String> {
    items
        .iter()
        .filter_map(|i| i.get(key)?.as_str().map(str::to_owned))
        .collect()
}

/// Merges per-server lists (in config order) into one: items are kept as they are; an item
/// whose `key` (`uri`, `uriTemplate`) an earlier item already had is left out and reported in
/// the warnings.
pub fn merge(lists: &[(String, Vec<Value>)], key: &str) -> (Vec<Value>, Vec<String>) {
    let mut seen: HashMap<&str, &str> = HashMap::new();
    let mut merged = Vec::new();
    let mut warnings = Vec::new();
    for (server, items) in lists {
        for item in items {
            if let Some(id) = item.get(key).and_then(Value::as_str) {
                if let Some(first) = seen.get(id) {
                    warnings.push(format!(
                        "server '{server}' lists {key} '{id}', which server '{first}' already lists; the first is used"
                    ));
                    continue;
                }
                seen.insert(id, server);
            }
            merged.push(item.clone());
        }
    }
    (merged, warnings)
}

/// Whether `ds` declares `resources.subscribe`.
pub(super) fn subscribes(ds: &Downstream) -> bool {
    let capabilities = super::server_capabilities(ds);
    let subscribe = capabilities
        .as_ref()
        .and_then(|c| c.get("resources")?.get("subscribe"));
    subscribe.and_then(Value::as_bool) == Some(true)
}

/// The `uri` param of a resource request, or a -32602 error object.
pub(super) fn uri_param(params: &Value) -> Result<String, Value> {
    match params.get("uri") {
        Some(Value::String(uri)) => Ok(uri.clone()),
        _ => Err(jsonrpc::error_object(
            ErrorCode::InvalidParams,
            "`uri` must be a string",
            None,
        )),
    }
}

/// Whether an error answer means "not mine" (try the next server) rather than a failure of a
/// server that has the resource: -32002 (not found), -32602 (invalid params, which several
/// SDKs answer for an unknown URI), -32601 (method not found).
pub(super) fn declines(error: &Value) -> bool {
    matches!(
        error.get("code").and_then(Value::as_i64),
        Some(RESOURCE_NOT_FOUND | -32602 | -32601)
    )
}

impl Passthrough {
    pub(super) async fn list_resources(
        &self,
        up: &Upstream<'_>,
        params: &Value,
        method: &str,
        key: &str,
    ) -> Result<Value, Value> {
        check_cursor(Some(params))?;
        let mut lists = Vec::new();
        let offering = up.offering("resources");
        // Every server at once; their answers are then taken in config order.
        let fetched = super::fetch_each(up, &offering, method, key).await;
        for (ds, fetched) in offering.into_iter().zip(fetched) {
            match fetched {
                Ok(items) => {
                    let mut index = self.resources.lock().unwrap();
                    if key == "resources" {
                        index.set_resources(ds.name(), &items);
                    } else {
                        index.set_templates(ds.name(), &items);
                    }
                    drop(index);
                    lists.push((ds.name().to_owned(), items));
                }
                Err(e) => {
                    warn!(server = %ds.name(), error = %e, "listing failed; its items are left out")
                }
            }
        }
        let (merged, warnings) = merge(
            &lists,
            if key == "resources" {
                "uri"
            } else {
                "uriTemplate"
            },
        );
        for w in warnings {
            debug!("{w}");
        }
        Ok(json!({ key: merged }))
    }

    /// Re-reads both of one server's lists (after its `notifications/resources/list_changed`),
    /// both at once: a server slow to answer both costs one timeout. `Err` when its resources
    /// could not be read (its lists are then left as they were); templates it could not list
    /// count as none.
    pub(super) async fn refresh_resources(
        &self,
        up: &Upstream<'_>,
        ds: &Downstream,
    ) -> Result<(), String> {
        let (resources, templates) = futures_util::future::join(
            up.fetch_all(ds, "resources/list", "resources"),
            up.fetch_all(ds, "resources/templates/list", "resourceTemplates"),
        )
        .await;
        let (resources, templates) = (resources?, templates.unwrap_or_default());
        let mut index = self.resources.lock().unwrap();
        index.set_resources(ds.name(), &resources);
        index.set_templates(ds.name(), &templates);
        Ok(())
    }

    /// Lists the resources and templates of each of `offering` whose lists were never read,
    /// so that a URI is routed to the server that lists it even when the client reads it
    /// without listing first (a URI from a `resource_link`, or from an earlier session). A
    /// server whose listing fails is remembered with empty lists (it is then tried in config
    /// order, and listed again after its `notifications/resources/list_changed`). The servers
    /// are listed at once, not one after another: slow ones cost the longest
    /// `tool_timeout_sec`, not their sum.
    pub(super) async fn list_unlisted(&self, up: &Upstream<'_>, offering: &[&Downstream]) {
        let unlisted: Vec<&Downstream> = {
            let index = self.resources.lock().unwrap();
            let unlisted = offering.iter().filter(|ds| !index.has_listed(ds.name()));
            unlisted.copied().collect()
        };
        let listing = unlisted.into_iter().map(|ds| async move {
            if let Err(e) = self.refresh_resources(up, ds).await {
                debug!(server = %ds.name(), error = %e, "listing resources for routing failed");
                let mut index = self.resources.lock().unwrap();
                index.set_resources(ds.name(), &[]);
                index.set_templates(ds.name(), &[]);
            }
        });
        futures_util::future::join_all(listing).await;
    }

    /// The servers of `offering` that a subscription to `uri` may go to: those that declare
    /// `resources.subscribe` (MCP 2025-11-25 "Resources: Subscriptions"). When every server
    /// that lists `uri` (or a template matching it) declares no subscriptions, the answer is
    /// -32601 naming it: a subscription elsewhere would be accepted and never updated.
    pub(super) fn subscribable<'d>(
        &self,
        offering: Vec<&'d Downstream>,
        uri: &str,
    ) -> Result<Vec<&'d Downstream>, Value> {
        let index = self.resources.lock().unwrap();
        let owners: Vec<&&Downstream> = offering
            .iter()
            .filter(|ds| index.knows(ds.name(), uri))
            .collect();
        let none_subscribes = !owners.iter().any(|ds| subscribes(ds));
        if let Some(owner) = owners.first().filter(|_| none_subscribes) {
            let message = format!(
                "server '{}', which lists {uri}, does not support resource subscriptions",
                owner.name()
            );
            let data = Some(json!({ "uri": uri }));
            return Err(jsonrpc::error_object(
                ErrorCode::MethodNotFound,
                message,
                data,
            ));
        }
        Ok(offering.into_iter().filter(|ds| subscribes(ds)).collect())
    }

    pub(super) async fn read(&self, up: &Upstream<'_>, params: &Value) -> Result<Value, Value> {
        let uri = uri_param(params)?;
        let (server, result) = self.route(up, "resources/read", params, &uri, None).await?;
        match up.server(&server) {
            // Asked again of the server that answered (see `input_rounds`).
            Some(ds) => {
                super::input_rounds::fulfil(up, ds, "resources/read", params, Ok(result)).await
            }
            None => Ok(result),
        }
    }

    pub(super) async fn subscribe(
        &self,
        up: &Upstream<'_>,
        params: &Value,
    ) -> Result<Value, Value> {
        let uri = uri_param(params)?;
        let (server, result) = self
            .route(up, "resources/subscribe", params, &uri, None)
            .await?;
        self.subscriptions.lock().unwrap().insert(uri, server);
        Ok(result)
    }

    pub(super) async fn unsubscribe(
        &self,
        up: &Upstream<'_>,
        params: &Value,
    ) -> Result<Value, Value> {
        let uri = uri_param(params)?;
        let preferred = self.subscriptions.lock().unwrap().remove(&uri);
        // Its server is down (or gone): it holds no subscription, and the record is dropped.
        let at_down_server = match preferred.as_deref() {
            Some(server) => up.server(server).is_none_or(|ds| !super::down::is_up(ds)),
            None => self.owner_down(up, &uri).await.is_some(),
        };
        if at_down_server {
            return Ok(json!({}));
        }
        self.route(up, "resources/unsubscribe", params, &uri, preferred)
            .await
            .map(|(_, result)| result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_put_the_lister_then_the_template_owner_then_the_rest() {
        let mut index = Index::default();
        index.set_resources("a", &[json!({"uri": "file:///x"})]);
        index.set_resources("c", &[json!({"uri": "demo://one"})]);
        index.set_templates("c", &[json!({"uriTemplate": "demo://item/{id}"})]);
        let order = ["a", "b", "c"];
        let both = |index: &Index, uri: &str, order: &[&str]| {
            let (owners, rest) = index.candidates(uri, order);
            (owners.join(" "), rest.join(" "))
        };
        let split = |owners: &str, rest: &str| (owners.to_owned(), rest.to_owned());
        assert_eq!(both(&index, "demo://one", &order), split("c", "a b"));
        assert_eq!(both(&index, "demo://item/7", &order), split("c", "a b"));
        assert_eq!(both(&index, "file:///x", &order), split("a", "b c"));
        assert_eq!(both(&index, "other://z", &order), split("", "a b c"));
        index.set_templates("a", &[json!({"uriTemplate": "demo://{x}"})]);
        assert_eq!(
            both(&index, "demo://one", &order),
            split("c a", "b"),
            "lister, then template"
        );
        assert!(index.knows("c", "demo://item/7"));
        assert!(!index.knows("b", "demo://item/7"));
        // A server that is no longer ready is not a candidate.
        assert_eq!(both(&index, "demo://one", &["a", "b"]), split("a", "b"));
    }

    #[test]
    fn a_server_that_gave_up_still_owns_what_it_listed() {
        let mut index = Index::default();
        index.set_resources("a", &[json!({"uri": "a://doc"})]);
        index.set_templates("a", &[json!({"uriTemplate": "a://item/{id}"})]);
        index.set_resources("b", &[json!({"uri": "b://doc"})]);
        assert!(index.forget("a"), "it had listed some");
        assert!(!index.forget("a"), "told once");
        assert!(!index.has_listed("a") && !index.knows("a", "a://doc"));
        let down = ["a".to_owned()];
        assert_eq!(
            index.owner_while_down("a://doc", &down).as_deref(),
            Some("a")
        );
        assert_eq!(
            index.owner_while_down("a://item/7", &down).as_deref(),
            Some("a")
        );
        assert_eq!(index.owner_while_down("b://doc", &down), None);
        assert_eq!(index.owner_while_down("a://doc", &[]), None, "a is up");
        let template = index.template_owner_while_down("a://item/{id}", &down);
        assert_eq!(template.as_deref(), Some("a"));
        // Back and listed again: what it lists now counts.
        index.set_resources("a", &[]);
        index.set_templates("a", &[]);
        assert_eq!(index.owner_while_down("a://doc", &down), None);
    }

    #[test]
    fn template_owner_for_completion() {
        let mut index = Index::default();
        index.set_templates("b", &[json!({"uriTemplate": "demo://item/{id}"})]);
        index.set_resources("a", &[json!({"uri": "demo://item/{id}"})]);
        assert_eq!(
            index
                .owner_of_template("demo://item/{id}", &["a", "b"])
                .as_deref(),
            Some("b")
        );
        assert_eq!(
            index.owner_of_template("demo://other/{id}", &["a", "b"]),
            None
        );
    }

    #[test]
    fn merge_keeps_order_and_drops_later_duplicates() {
        let lists = vec![
            (
                "a".to_owned(),
                vec![
                    json!({"uri": "u1", "name": "A1"}),
                    json!({"name": "no uri"}),
                ],
            ),
            (
                "b".to_owned(),
                vec![
                    json!({"uri": "u1", "name": "B1"}),
                    json!({"uri": "u2", "x": {"y": 1}}),
                ],
            ),
        ];
        let (merged, warnings) = merge(&lists, "uri");
        assert_eq!(
            merged,
            vec![
                json!({"uri": "u1", "name": "A1"}),
                json!({"name": "no uri"}),
                json!({"uri": "u2", "x": {"y": 1}})
            ]
        );
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("'b'") && warnings[0].contains("'a'"),
            "{warnings:?}"
        );
    }

    #[test]
    fn not_found_and_invalid_params_decline() {
        assert!(declines(&json!({"code": -32002, "message": "x"})));
        assert!(declines(&json!({"code": -32602, "message": "x"})));
        assert!(!declines(&json!({"code": -32603, "message": "x"})));
        assert!(uri_param(&json!({"uri": 3})).is_err());
    }
}
