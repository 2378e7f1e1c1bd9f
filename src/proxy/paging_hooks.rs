//! The proxy's side of paging: the page tool in `tools/list`, page calls answered from the
//! store, and truncated results kept for it. The rules are in [`crate::page_tool`]; each session
//! pages with its own key into the core's store.

use serde_json::Value;
use tracing::debug;

use super::calls::{CallFacts, CallOutcome};
use super::session::Session;
use super::Core;
use crate::config::ToolSettings;
use crate::downstream::RawResponse;
use crate::outcome::{Mapped, Outcome};
use crate::page_tool::Pager;
use crate::paging::NotKept;

impl Core {
    /// The pager a call uses: its session's, or the core's own for calls without a client.
    pub(super) fn pager_for<'a>(
        &'a self,
        session: Option<&'a std::sync::Arc<Session>>,
    ) -> Option<&'a Pager> {
        match session {
            Some(s) => s.pager(),
            None => self.own_pager(),
        }
    }

    /// When `name` is the page tool: the page's `(server, server's tool name, settings,
    /// answer)` for the transcript record; the settings are those of the paged call's tool.
    pub(super) fn page_call(
        &self,
        pager: Option<&Pager>,
        name: &str,
        call_id: &str,
        arguments: Option<&Value>,
    ) -> Option<(String, String, ToolSettings, CallOutcome)> {
        let pager = pager.filter(|p| p.tool_name() == name)?;
        let answer = pager.page(call_id, arguments);
        let (server, tool) = match &answer.original {
            Some(call) => (call.server.clone(), call.server_tool.clone()),
            None => (String::new(), name.to_owned()),
        };
        let settings = self.tool_settings(&server, &tool);
        let call_outcome = CallOutcome::Mapped(Box::new(answer.mapped), answer.outcome);
        Some((server, tool, settings, call_outcome))
    }

    /// Keeps a truncated result of the call of JSON-RPC id `id` for the page tool (under the
    /// id, [`crate::paging::PageKey`]): what a page reads of its `CallToolResult`
    /// from `outcome` ([`crate::outcome::paged_result_json`]), or the whole result from the
    /// `raw` response line of a result mapped in one pass. When it cannot be kept (larger than
    /// the store), the answer says so at once: a text block after the envelope's
    /// ([`crate::paging::not_kept_notice`]), so the model does not call the page tool for rows
    /// that are not there.
    pub(super) fn keep_page_rows(
        &self,
        pager: Option<&Pager>,
        id: &Value,
        facts: &CallFacts,
        mapped: &mut Mapped,
        outcome: Option<&Outcome>,
        raw: Option<&RawResponse>,
    ) {
        let Some(pager) = pager else {
            return;
        };
        let (call_id, tool) = (&facts.call_id, &facts.tool);
        let media = facts.settings.media.value;
        // A raw result below this is small enough to be held as a parsed one is.
        const SMALL: usize = crate::rpc::body::RAW_RESULT_MIN_BYTES;
        let result_json = || match (outcome, raw) {
            (Some(Outcome::Result { result }), _) => {
                Some(crate::outcome::paged_result_json(result, media))
            }
            // A small result mapped from its text (`envelope_core::mapping::fast`) is held as
            // a parsed one is: without the text blocks its rows do not come from.
            (None, Some(raw)) if raw.len() < SMALL => {
                let result = crate::transcript::result_of_response(raw.as_str())?;
                let result: Value = serde_json::from_str(result.get()).ok()?;
                Some(crate::outcome::paged_result_json(&result, media))
            }
            (None, Some(raw)) => {
                crate::transcript::result_of_response(raw.as_str()).map(|r| r.get().to_owned())
            }
            _ => None,
        };
        let ctx = facts.mapping_context();
        let truncated = mapped.envelope.status == crate::envelope::Status::Truncated;
        let kept = match raw {
            // A raw line at least as long as the store cannot fit: not copied to find out.
            Some(r) if truncated && r.len() >= pager.max_bytes().max(SMALL) => {
                Err(NotKept::TooLarge {
                    bytes: r.len() + crate::paging::ENTRY_OVERHEAD_BYTES,
                    max_bytes: pager.max_bytes(),
                })
            }
            _ => pager.keep(id, &ctx, &facts.server_tool, &mapped.envelope, result_json),
        };
        if let Err(why) = kept {
            debug!(call_id, tool, "not kept for paging: {why}");
            let notice = crate::paging::not_kept_notice(pager.tool_name(), &mapped.envelope, &why);
            mapped.media.insert(0, notice);
        }
    }
}
