//! Media blocks: which content blocks carry base64 media, how they are handled
//! ([`MediaMode`]), their decoded size ([`base64_decoded_len`], the one base64 length) and the
//! one media description ([`media_block`]) that both the envelope's description row
//! ([`describe_media`]) and the trajectory's `<mime, N bytes>` are made from.
//!
//! Source: MCP specification 2025-11-25, "Tools: Tool Result" (`image`, `audio` and embedded
//! `resource` content; `data` and `blob` are base64, RFC 4648 section 4).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::rows::{bounded_clone, owned_row};
use crate::envelope::Row;

/// What the envelope does with image and audio content blocks. TOML: `"passthrough"` or
/// `"describe"`; any other value is a config error.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum MediaMode {
    /// Media blocks are passed through to the client unchanged (the built-in default).
    #[default]
    Passthrough,
    /// Media blocks become a row `{type, mimeType, bytes}` in the envelope.
    Describe,
}

/// A content block that carries base64 media, borrowed from the block: an `image` or `audio`
/// block (`data`), or a `resource` block whose resource has a `blob`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MediaBlock<'a> {
    /// The block's `type`: `"image"`, `"audio"` or `"resource"`.
    pub kind: &'a str,
    /// `mimeType` as sent (read from the inner resource of a `resource` block), if any.
    pub mime_type: Option<&'a Value>,
    /// The inner resource's `uri` (`resource` blocks only), if any.
    pub uri: Option<&'a Value>,
    /// The base64 text (`data`, or the resource's `blob`).
    pub data: &'a str,
}

impl MediaBlock<'_> {
    /// The decoded size of [`MediaBlock::data`] in bytes ([`base64_decoded_len`]).
    pub fn bytes(&self) -> u64 {
        base64_decoded_len(self.data)
    }
}

/// `block` as a [`MediaBlock`]; `None` for every block that carries no base64 media (and for
/// values that are not objects).
pub fn media_block(block: &Value) -> Option<MediaBlock<'_>> {
    let kind = crate::small_map::member(block, "type")?.as_str()?;
    match kind {
        "image" | "audio" => Some(MediaBlock {
            kind,
            mime_type: block.get("mimeType"),
            uri: None,
            data: block.get("data")?.as_str()?,
        }),
        "resource" => {
            let resource = block.get("resource")?;
            Some(MediaBlock {
                kind,
                mime_type: resource.get("mimeType"),
                uri: resource.get("uri"),
                data: resource.get("blob")?.as_str()?,
            })
        }
        _ => None,
    }
}

/// The media blocks of `blocks` that pass through untouched: all of them with
/// [`MediaMode::Passthrough`], none with [`MediaMode::Describe`].
pub fn passed_media(blocks: &[Value], mode: MediaMode) -> Vec<Value> {
    match mode {
        MediaMode::Passthrough => blocks
            .iter()
            .filter(|b| media_block(b).is_some())
            .cloned()
            .collect(),
        MediaMode::Describe => Vec::new(),
    }
}

/// Whether content blocks of type `audio` exist in MCP protocol `version`: they were added in
/// 2025-03-26 ("Server Features: Tools", "Audio Content"); 2024-11-05 has text, image and
/// embedded resource content only.
pub fn audio_content_allowed(version: &str) -> bool {
    version != "2024-11-05"
}

/// Replaces each `audio` block of `media` (passed-through blocks, [`passed_media`]) with a text
/// block saying what it was (`[audio <mimeType>, N bytes: not shown; …]`), for a client whose
/// protocol version has no audio content ([`audio_content_allowed`]): a client that checks
/// results against its version's schema would refuse the whole answer otherwise.
pub fn audio_as_text(media: &mut [Value], version: &str) {
    for block in media.iter_mut() {
        let Some(audio) = media_block(block).filter(|m| m.kind == "audio") else {
            continue;
        };
        let mime = audio
            .mime_type
            .and_then(Value::as_str)
            .unwrap_or("of no type");
        let text = format!(
            "[audio {mime}, {} bytes: not shown; MCP {version}, the version this client speaks, has no audio content]",
            audio.bytes()
        );
        *block = serde_json::json!({"type": "text", "text": text});
    }
}

/// The decoded size in bytes of base64 text, from its length and padding (no decoding): the
/// characters other than ASCII whitespace, less up to two trailing `=`, times 3/4 (rounded
/// down). Exact for valid base64, padded or not, with or without line breaks (RFC 4648
/// section 4; RFC 2045 section 6.8 breaks lines).
pub fn base64_decoded_len(data: &str) -> u64 {
    let significant = data.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    let padding = data
        .bytes()
        .rev()
        .filter(|b| !b.is_ascii_whitespace())
        .take_while(|&b| b == b'=')
        .take(2)
        .count();
    ((significant - padding) as u64) * 3 / 4
}

/// The description row of a media block: `{"type", "mimeType"?, "bytes"}`, plus `uri` for a
/// blob resource (its `mimeType` is the inner resource's). Strings are copied only up to
/// `budget + 1` characters (a longer row is left out anyway). `None` for other blocks.
pub fn describe_media<'a>(block: &Value, budget: usize) -> Option<Row<'a>> {
    let media = media_block(block)?;
    let mut row = Map::new();
    row.insert("type".to_owned(), Value::from(media.kind));
    if let Some(uri) = media.uri {
        row.insert("uri".to_owned(), bounded_clone(uri, budget));
    }
    if let Some(mime) = media.mime_type {
        row.insert("mimeType".to_owned(), bounded_clone(mime, budget));
    }
    row.insert("bytes".to_owned(), Value::from(media.bytes()));
    Some(owned_row(row))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn audio_becomes_text_for_a_2024_11_05_client_only() {
        let image = json!({"type": "image", "data": "TQ==", "mimeType": "image/png"});
        let audio = json!({"type": "audio", "data": "TWFu", "mimeType": "audio/wav"});
        let mut media = vec![image.clone(), audio.clone()];
        assert!(audio_content_allowed("2025-03-26") && !audio_content_allowed("2024-11-05"));
        audio_as_text(&mut media, "2024-11-05");
        assert_eq!(media[0], image);
        assert_eq!(
            media[1],
            json!({"type": "text", "text": "[audio audio/wav, 3 bytes: not shown; MCP 2024-11-05, the version this client speaks, has no audio content]"})
        );
    }
}
