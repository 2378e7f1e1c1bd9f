//! What each ready server offers besides tools, for `check`: its prompts under the names the
//! client would see, its resources and resource templates as listed (MCP specification
//! 2025-11-25, "Server Features: Prompts, Resources").

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::prompts::PromptCatalog;
use super::Upstream;

/// One server's prompts, resources and templates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Offered {
    /// Exposed prompt names (after `tool_prefix`, collisions and the prompt allow/deny lists).
    pub prompts: Vec<String>,
    /// Resource URIs, as listed (all pages).
    pub resources: Vec<String>,
    /// Resource templates (`uriTemplate`), as listed (all pages).
    pub templates: Vec<String>,
    /// Lists that could not be read, e.g. `prompts/list failed: …`.
    pub errors: Vec<String>,
}

/// Reads every list of every ready server that offers prompts or resources; keyed by server
/// name.
pub async fn offered(up: &Upstream<'_>) -> HashMap<String, Offered> {
    let mut out: HashMap<String, Offered> = HashMap::new();
    let mut prompt_lists = Vec::new();
    for ds in up.offering("prompts") {
        match up.fetch_all(ds, "prompts/list", "prompts").await {
            Ok(list) => prompt_lists.push((ds.name().to_owned(), Arc::new(list))),
            Err(e) => out.entry(ds.name().to_owned()).or_default().errors.push(e),
        }
    }
    let mut catalog = PromptCatalog::default();
    catalog.rebuild(&prompt_lists, &up.config);
    for prompt in catalog.prompts() {
        let Some(name) = prompt.get("name").and_then(Value::as_str) else {
            continue;
        };
        if let Some(route) = catalog.route(name) {
            out.entry(String::from(&*route.server))
                .or_default()
                .prompts
                .push(name.to_owned());
        }
    }
    for ds in up.offering("resources") {
        let entry = out.entry(ds.name().to_owned()).or_default();
        for (method, key, field, into) in [
            ("resources/list", "resources", "uri", &mut entry.resources),
            (
                "resources/templates/list",
                "resourceTemplates",
                "uriTemplate",
                &mut entry.templates,
            ),
        ] {
            match up.fetch_all(ds, method, key).await {
                Ok(items) => into.extend(
                    items
                        .iter()
                        .filter_map(|i| Some(i.get(field)?.as_str()?.to_owned())),
                ),
                Err(e) => entry.errors.push(e),
            }
        }
    }
    out
}
