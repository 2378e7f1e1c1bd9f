//! Routing of `resources/read`, `resources/subscribe` and `resources/unsubscribe` by URI (MCP
//! specification 2025-11-25, "Server Features: Resources"; the rules are in
//! [`super::resources`]'s module documentation).
//!
//! The servers are asked in two rounds: the likely owners of the URI (a `resources/unsubscribe`'s
//! server first, then the servers that listed the URI, then those with a matching template),
//! and, when every one of them declines, every other server that offers resources. Each round
//! sends the request to all its servers at once ([`super::fan_out`]): a round costs at most the
//! longest `tool_timeout_sec` of its servers, not their sum, and its answer does not depend on
//! which server answers first. In a round, the servers are taken in that order (the others in
//! config order): the request's answer is the first server's that accepts, or whose error
//! stands: an error other than a decline ([`super::resources::declines`]) from a server that
//! listed the URI or a matching template, or from a server that went down while asked (asked
//! again once it is back, it would crash again). A subscription that another server's answer
//! took is undone at each server that accepted it too (`resources/unsubscribe`, in the
//! background), so that no server sends updates for a subscription nobody holds.

use futures_util::StreamExt;
use jsonrpc_core::ErrorCode;
use serde_json::{json, Value};
use tracing::debug;

use super::fan_out::{first_taken, Asked, Asking, Fanned, Verdict};
use super::resources::{declines, Index};
use super::subscribed::SubscribedOn;
use super::{Passthrough, Upstream, RESOURCE_NOT_FOUND};
use crate::jsonrpc;

/// A request routed by URI: its method, its params and their `uri`.
#[derive(Clone, Copy)]
struct ByUri<'a> {
    method: &'a str,
    params: &'a Value,
    uri: &'a str,
}

impl Passthrough {
    /// Sends `method` with `params` to the servers that may own `uri` (see the module
    /// documentation), `preferred` first; returns the first success and who gave it. When no
    /// server accepts and one is (re)starting, it is waited for (up to its `tool_timeout_sec`)
    /// and the servers are tried once more. The -32002 (resource not found) message then names
    /// the servers that are down, with why, and `data.servers_down` lists them
    /// ([`super::down::servers_down`]): any of them may serve `uri`.
    pub(super) async fn route(
        &self,
        up: &Upstream<'_>,
        method: &str,
        params: &Value,
        uri: &str,
        preferred: Option<String>,
    ) -> Result<(String, Value), Value> {
        if let Some(d) = self.owner_down(up, uri).await {
            return Err(super::down::resource_error(uri, &d));
        }
        let preferred = &preferred;
        let pass = || async move {
            let request = ByUri {
                method,
                params,
                uri,
            };
            let pass = self.route_once(up, request, preferred.clone());
            match pass.await {
                Ok(found) => Some(Ok(found)),
                Err(Some(error)) => Some(Err(error)),
                Err(None) => None,
            }
        };
        let not_ready = match up.again_once_settled(pass).await {
            Ok(answer) => return answer,
            Err(not_ready) => not_ready,
        };
        // Any server that is down may serve it: URIs are not named after their server.
        let down = super::down::servers_down(up, &not_ready, |_| true);
        let note = super::down::note(&down, "resources");
        let data = super::down::with_servers_down(Some(json!({ "uri": uri })), &down);
        Err(jsonrpc::error_object(
            ErrorCode::ServerError(RESOURCE_NOT_FOUND),
            format!("Resource not found: {uri}{note}"),
            data,
        ))
    }

    /// The server that is down and owns `uri` ([`super::down`]): one that last listed it (or a
    /// template matching it) while no server up knows it. A server that is (re)starting is
    /// waited for first (up to its `tool_timeout_sec`); `None` once it is back, or when no
    /// server that is down owns `uri`.
    pub(super) async fn owner_down(
        &self,
        up: &Upstream<'_>,
        uri: &str,
    ) -> Option<crate::availability::Down> {
        let down = super::down::down_names(up);
        if down.is_empty() {
            return None;
        }
        let offering = up.offering("resources");
        self.list_unlisted(up, &offering).await;
        let owner = {
            let index = self.resources.lock().unwrap();
            if offering.iter().any(|ds| index.knows(ds.name(), uri)) {
                return None;
            }
            index.owner_while_down(uri, &down)?
        };
        super::down::wait_back(up, up.server(&owner)?).await.err()
    }

    /// One pass of [`Passthrough::route`] over the servers ready now, in two rounds (see the
    /// module documentation): `Ok` with the server that accepted; `Err(Some(error))` for an
    /// answer that stands (a failure, or a subscription no owner supports); `Err(None)` when
    /// every server declined.
    async fn route_once(
        &self,
        up: &Upstream<'_>,
        request: ByUri<'_>,
        preferred: Option<String>,
    ) -> Result<(String, Value), Option<Value>> {
        let ByUri {
            method,
            params,
            uri,
        } = request;
        let mut offering = up.offering("resources");
        self.list_unlisted(up, &offering).await;
        if method != "resources/read" {
            offering = self.subscribable(offering, uri).map_err(Some)?;
        }
        let order: Vec<&str> = offering.iter().map(|ds| ds.name()).collect();
        let (index, (mut owners, mut rest)) = {
            let index = self.resources.lock().unwrap();
            let candidates = index.candidates(uri, &order);
            (index.clone(), candidates)
        };
        if let Some(p) = preferred.filter(|p| order.contains(&p.as_str())) {
            owners.retain(|c| *c != p);
            rest.retain(|c| *c != p);
            owners.insert(0, p);
        }
        for round in [owners, rest].into_iter().filter(|r| !r.is_empty()) {
            let verdict = |i: usize, asked: &Asked| stands(&index, &round[i], uri, asked);
            let asking = asking(up, &self.subscribed_on, method, params, uri, &round);
            let mut fanned = first_taken(asking, verdict).await;
            if method == "resources/subscribe" {
                undo_extra_subscriptions(up, &self.subscribed_on, uri, &round, &mut fanned);
            }
            if let Some((i, asked)) = fanned.taken {
                return match asked.answer {
                    Ok(result) => Ok((round[i].clone(), result)),
                    Err(error) => Err(Some(error)),
                };
            }
        }
        Err(None)
    }
}

/// Whether `server`'s answer to a request for `uri` is the request's (see the module
/// documentation).
fn stands(index: &Index, server: &str, uri: &str, asked: &Asked) -> Verdict {
    let Err(error) = &asked.answer else {
        return Verdict::Take;
    };
    debug!(%server, %uri, %error, "not accepted");
    let owns = index.knows(server, uri) || asked.went_down;
    if owns && !declines(error) {
        Verdict::Take
    } else {
        Verdict::Pass
    }
}

/// `method` with `params` (for `uri`) on its way to each of `servers` (config names; one gone
/// since, after a reload, declines with -32002), for [`first_taken`]. A subscription goes
/// through `subscribed_on` (once per URI and connection), and an unsubscribe makes it forget
/// the URI; any other method is sent as it is.
pub(super) fn asking(
    up: &Upstream<'_>,
    subscribed_on: &std::sync::Arc<SubscribedOn>,
    method: &str,
    params: &Value,
    uri: &str,
    servers: &[String],
) -> Vec<Asking> {
    let ask = |server: &String| -> Asking {
        let (owned, subscribed_on) = (up.owned(), subscribed_on.clone());
        let (server, method, params) = (server.clone(), method.to_owned(), params.clone());
        let uri = uri.to_owned();
        Box::pin(async move {
            let up = owned.upstream();
            let Some(ds) = up.server(&server) else {
                let gone = jsonrpc::error_object(
                    ErrorCode::ServerError(RESOURCE_NOT_FOUND),
                    format!("server '{server}' is gone"),
                    Some(json!({ "uri": uri })),
                );
                return Asked {
                    answer: Err(gone),
                    went_down: false,
                };
            };
            let answer = match method.as_str() {
                "resources/subscribe" => subscribed_on.subscribe(&up, ds, &params, &uri).await,
                "resources/unsubscribe" => {
                    subscribed_on.forget(&server, &uri);
                    up.ask(ds, &method, &params).await
                }
                _ => up.ask(ds, &method, &params).await,
            };
            let went_down = !super::down::is_up(ds);
            Asked { answer, went_down }
        })
    };
    servers.iter().map(ask).collect()
}

/// Unsubscribes from `uri` each server of `round` that accepted the subscription although
/// another server's answer was taken: those that answered by then, and those still pending
/// once they accept. In the background: the client's answer does not wait for it.
fn undo_extra_subscriptions(
    up: &Upstream<'_>,
    subscribed_on: &std::sync::Arc<SubscribedOn>,
    uri: &str,
    round: &[String],
    fanned: &mut Fanned,
) {
    let accepted = |(i, asked): &(usize, Asked)| asked.answer.is_ok().then(|| round[*i].clone());
    let extra: Vec<String> = fanned.answered.iter().filter_map(accepted).collect();
    let mut pending = std::mem::take(&mut fanned.pending);
    if extra.is_empty() && pending.is_empty() {
        return;
    }
    let (owned, subscribed_on) = (up.owned().detached(), subscribed_on.clone());
    let (uri, round) = (uri.to_owned(), round.to_vec());
    tokio::spawn(async move {
        let up = owned.upstream();
        let undo = |server: String| {
            let (up, subscribed_on, uri) = (&up, &subscribed_on, &uri);
            async move {
                let Some(ds) = up.server(&server) else { return };
                subscribed_on.forget(&server, uri);
                let params = json!({ "uri": uri });
                if let Err(e) = up.ask(ds, "resources/unsubscribe", &params).await {
                    debug!(%server, %uri, error = %e, "undoing an extra subscription failed");
                }
            }
        };
        for server in extra {
            undo(server).await;
        }
        while let Some((i, asked)) = pending.next().await {
            if asked.answer.is_ok() {
                undo(round[i].clone()).await;
            }
        }
    });
}
