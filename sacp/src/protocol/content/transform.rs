//! [`adapt`]: the content of one message made what a hop takes (see the module above).
//!
//! The message's text is scanned, not parsed: where its content sits (a prompt's `prompt`, an
//! update's `update.content`, a permission request's `toolCall.content`) is found member by
//! member, a block is parsed only when it may carry a media type (its text has `"mimeType"`),
//! and a transformed block is spliced in where it was — every other byte stays as it came.

use serde_json::value::RawValue;

use super::Accepts;
use crate::acp::{
    ContentBlock, EmbeddedResourceResource, PromptRequest, RequestPermissionRequest, ResourceLink,
    SessionNotification, TextContent,
};
use crate::jsonrpc::RawJson;

/// How wide the readable text of an HTML page is laid out.
const HTML_WIDTH: usize = 100;

/// One block transformed for a hop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transformation {
    /// The media type it had (`text/html`, `image/png`).
    pub from: String,
    /// The kind of block it became: `text` or `resource_link`.
    pub into: &'static str,
}

/// What makes a block a hop cannot take into one it takes: the conductor's [`Standard`], or a
/// proxy's own content handlers (`#[content("text/html")]` in a `#[sacp::proxy]`).
pub trait Transform: Send + Sync {
    /// `block`, of `media_type`, made into a block the hop takes; `None` leaves it as it came
    /// (for the next hop's conductor to adapt).
    fn transform(&self, media_type: &str, block: ContentBlock) -> Option<ContentBlock>;
}

/// The conductor's transformations (see the module docs): HTML to its readable text, an image
/// or audio to a link or a placeholder; each block it makes says what it was in its `_meta`
/// (`{"sacp": {"transformedFrom": "text/html"}}`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Standard;

impl Transform for Standard {
    fn transform(&self, media_type: &str, block: ContentBlock) -> Option<ContentBlock> {
        let made = match block {
            ContentBlock::Image(image) => {
                media_stand_in("image", &image.mime_type, &image.data, image.uri)
            }
            ContentBlock::Audio(audio) => {
                media_stand_in("audio", &audio.mime_type, &audio.data, None)
            }
            ContentBlock::Resource(embedded) => match embedded.resource {
                EmbeddedResourceResource::TextResourceContents(page) => {
                    ContentBlock::Text(TextContent::new(html_to_text(&page.text)))
                }
                // An HTML page in base64: the link to it, as for an image with a `uri`.
                EmbeddedResourceResource::BlobResourceContents(page) => ContentBlock::ResourceLink(
                    link_to("an HTML page", "page", media_type, page.uri),
                ),
            },
            _ => return None,
        };
        let mut meta = serde_json::Map::new();
        meta.insert(
            "sacp".to_owned(),
            serde_json::json!({"transformedFrom": media_type}),
        );
        Some(match made {
            ContentBlock::Text(mut text) => {
                text.meta = Some(meta);
                ContentBlock::Text(text)
            }
            ContentBlock::ResourceLink(mut link) => {
                link.meta = Some(meta);
                ContentBlock::ResourceLink(link)
            }
            other => other,
        })
    }
}

/// `params` of a `method` message with its content made what `accepts` takes by the
/// conductor's [`Standard`] transformations, and what was transformed; `None` when nothing
/// had to be (the message goes as it came).
pub fn adapt(
    method: &str,
    params: &RawJson,
    accepts: &Accepts,
) -> Option<(RawJson, Vec<Transformation>)> {
    adapt_with(method, params, accepts, &Standard)
}

/// [`adapt`] with `transform`'s transformations.
pub fn adapt_with(
    method: &str,
    params: &RawJson,
    accepts: &Accepts,
    transform: &dyn Transform,
) -> Option<(RawJson, Vec<Transformation>)> {
    let path: &[&str] = match method {
        PromptRequest::METHOD => &["prompt"],
        SessionNotification::METHOD => &["update", "content"],
        RequestPermissionRequest::METHOD => &["toolCall", "content"],
        _ => return None,
    };
    if accepts.is_everything() || !may_carry_media(params.as_bytes()) {
        return None;
    }
    let content = params.member_at(path)?;
    let mut done = Vec::new();
    let adapted = match content.as_bytes().first() {
        Some(b'[') => adapt_list(&content, accepts, transform, &mut done)?,
        Some(b'{') => {
            let (block, one) = adapt_block(&content, accepts, transform)?;
            done.push(one);
            block
        }
        _ => return None,
    };
    Some((params.with_member_at(path, &adapted)?, done))
}

/// A list of content blocks, or of a tool call's content (`{"type": "content", "content":
/// block}`, diffs, terminals), adapted; `None` when no item had to be.
fn adapt_list(
    list: &RawJson,
    accepts: &Accepts,
    transform: &dyn Transform,
    done: &mut Vec<Transformation>,
) -> Option<RawJson> {
    let items: Vec<&RawValue> = serde_json::from_str(list.as_str()).ok()?;
    let mut out = Vec::with_capacity(list.len());
    out.push(b'[');
    let before = done.len();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let item = list.slice_of(item);
        let adapted = if item.plain_str("type") == Some("content") {
            item.member("content")
                .and_then(|block| adapt_block(&block, accepts, transform))
                .and_then(|(block, one)| Some((item.with_member("content", &block)?, one)))
        } else {
            adapt_block(&item, accepts, transform)
        };
        match adapted {
            Some((item, one)) => {
                done.push(one);
                item.write_into(&mut out);
            }
            None => item.write_into(&mut out),
        }
    }
    out.push(b']');
    if done.len() == before {
        return None;
    }
    // Valid items joined as a list: valid JSON, not parsed again.
    Some(RawJson::from_trusted(bytes::Bytes::from(out)))
}

/// One content block made what `accepts` takes by `transform`, and what it was; `None` when
/// it is taken as it is (or is not a block this knows, or `transform` left it).
///
/// What a hop may not take: an image or audio of a media type it did not declare, and HTML (an
/// embedded resource of type `text/html`) unless it declared `text/html`. Text, links and
/// every other embedded resource are taken by every hop.
pub fn adapt_block(
    block: &RawJson,
    accepts: &Accepts,
    transform: &dyn Transform,
) -> Option<(RawJson, Transformation)> {
    if accepts.is_everything() || !may_carry_media(block.as_bytes()) {
        return None;
    }
    if taken_by_its_text(block, accepts) {
        return None;
    }
    let parsed: ContentBlock = block.parse().ok()?;
    let from = match &parsed {
        ContentBlock::Image(image) => image.mime_type.clone(),
        ContentBlock::Audio(audio) => audio.mime_type.clone(),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            EmbeddedResourceResource::TextResourceContents(page)
                if is_html(page.mime_type.as_deref()) =>
            {
                page.mime_type.clone().unwrap_or_default()
            }
            EmbeddedResourceResource::BlobResourceContents(page)
                if is_html(page.mime_type.as_deref()) =>
            {
                page.mime_type.clone().unwrap_or_default()
            }
            _ => return None,
        },
        _ => return None,
    };
    let taken = match &parsed {
        ContentBlock::Resource(_) => accepts.takes("text/html"),
        _ => accepts.takes(&from),
    };
    if taken {
        return None;
    }
    let made = transform.transform(&from, parsed)?;
    let into = match &made {
        ContentBlock::Text(_) => "text",
        ContentBlock::ResourceLink(_) => "resource_link",
        ContentBlock::Image(_) => "image",
        ContentBlock::Audio(_) => "audio",
        ContentBlock::Resource(_) => "resource",
        _ => "other",
    };
    let raw = RawJson::to_raw(&made).ok()?;
    Some((raw, Transformation { from, into }))
}

/// Whether `block` is taken as it is by what its text says, without a parse (its `type`, and
/// its media type, read where they are plain strings): text and links always, an image or
/// audio of a type `accepts` takes, an embedded resource but HTML, or HTML where it is taken.
/// `false` where it cannot tell (then the block is parsed).
fn taken_by_its_text(block: &RawJson, accepts: &Accepts) -> bool {
    match block.plain_str("type") {
        Some("image" | "audio") => block
            .plain_str("mimeType")
            .is_some_and(|m| accepts.takes(m)),
        Some("resource") => block
            .member("resource")
            .and_then(|r| r.plain_str("mimeType").map(|m| !is_html(Some(m))))
            .is_some_and(|not_html| not_html || accepts.takes("text/html")),
        Some("text" | "resource_link") => true,
        _ => false,
    }
}

/// Whether `media_type` is in the media range `range` (`image/*` has `image/png`).
pub fn matches(range: &str, media_type: &str) -> bool {
    Accepts::of([range]).takes(media_type)
}

/// The readable text of an HTML page: its words, headings, lists, tables and links laid out as
/// text, with no markup (scripts and styles left out).
pub fn html_to_text(html: &str) -> String {
    match html2text::from_read(html.as_bytes(), HTML_WIDTH) {
        Ok(text) => text.trim_end().to_owned(),
        Err(e) => format!("[an HTML page that could not be read as text: {e}]"),
    }
}

/// What stands in for an image or audio a hop cannot take: a link to it where it has a
/// `uri`, else a text saying what it was.
fn media_stand_in(kind: &str, mime_type: &str, data: &str, uri: Option<String>) -> ContentBlock {
    // Base64: four characters for three bytes.
    let bytes = data.len() / 4 * 3;
    match uri {
        Some(uri) => ContentBlock::ResourceLink(link_to(&article(kind), kind, mime_type, uri)),
        None => ContentBlock::Text(TextContent::new(format!(
            "[{} ({mime_type}, {}) not shown: the receiver does not take {kind}]",
            article(kind),
            size(bytes)
        ))),
    }
}

/// A link to `what` (`an image`), of `mime_type`, at `uri`, in place of the block itself;
/// named by the last part of its `uri`, else `kind`.
fn link_to(what: &str, kind: &str, mime_type: &str, uri: String) -> ResourceLink {
    let name = uri
        .rsplit('/')
        .find(|part| !part.is_empty())
        .unwrap_or(kind)
        .to_owned();
    let mut link = ResourceLink::new(name, uri);
    link.mime_type = Some(mime_type.to_owned());
    link.description = Some(format!(
        "{what} ({mime_type}) that the receiver cannot take inline"
    ));
    link
}

fn article(kind: &str) -> String {
    match kind {
        "image" => "an image".to_owned(),
        other => other.to_owned(),
    }
}

fn size(bytes: usize) -> String {
    match bytes {
        b if b < 1024 => format!("{b} bytes"),
        b if b < 1024 * 1024 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
    }
}

fn is_html(mime_type: Option<&str>) -> bool {
    mime_type.is_some_and(|m| {
        let m = m.split(';').next().unwrap_or("").trim();
        m.eq_ignore_ascii_case("text/html") || m.eq_ignore_ascii_case("application/xhtml+xml")
    })
}

/// Whether a text may hold a block with a media type: it has the key `"mimeType"`.
fn may_carry_media(text: &[u8]) -> bool {
    memchr::memmem::find(text, b"\"mimeType\"").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> RawJson {
        RawJson::from_string(text).unwrap()
    }

    const PANEL: &str = r#"{"type":"resource","resource":{"uri":"sacp:panel/1","mimeType":"text/html","text":"<html><head><style>p{color:red}</style></head><body><h1>Tools used</h1><ul><li>read_file</li><li>grep</li></ul></body></html>"}}"#;

    #[test]
    fn html_becomes_readable_text_for_a_hop_that_does_not_take_it() {
        let params = format!(
            r#"{{"sessionId":"s1","update":{{"sessionUpdate":"agent_message_chunk","content":{PANEL}}},"x":1.50}}"#
        );
        let (adapted, done) =
            adapt("session/update", &raw(&params), &Accepts::acp_default()).unwrap();
        assert_eq!(
            done,
            vec![Transformation {
                from: "text/html".into(),
                into: "text"
            }]
        );
        let text = adapted.member_at(&["update", "content", "text"]).unwrap();
        let text: String = text.parse().unwrap();
        assert!(
            text.contains("Tools used") && text.contains("read_file"),
            "{text}"
        );
        assert!(!text.contains('<') && !text.contains("color"), "{text}");
        // The rest as it came, to the byte.
        assert!(adapted.as_str().starts_with(
            r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"#
        ));
        assert!(adapted.as_str().ends_with(r#"},"x":1.50}"#));
        assert!(
            adapted
                .as_str()
                .contains(r#""transformedFrom":"text/html""#)
        );
        // A hop that takes HTML gets it untouched.
        assert!(adapt("session/update", &raw(&params), &Accepts::of(["text/html"])).is_none());
    }

    #[test]
    fn a_v2_whole_message_has_its_list_of_blocks_adapted() {
        // ACP v2's `agent_message` carries the message's blocks as a list.
        let params = format!(
            r#"{{"sessionId":"s1","update":{{"sessionUpdate":"agent_message","messageId":"m1","content":[{{"type":"text","text":"before"}},{PANEL}]}}}}"#
        );
        let (adapted, done) =
            adapt("session/update", &raw(&params), &Accepts::acp_default()).unwrap();
        assert_eq!(done.len(), 1);
        let blocks: Vec<serde_json::Value> = adapted
            .member_at(&["update", "content"])
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            blocks[0],
            serde_json::json!({"type": "text", "text": "before"})
        );
        assert_eq!(blocks[1]["type"], "text");
        assert!(blocks[1]["text"].as_str().unwrap().contains("Tools used"));
        assert!(adapted.as_str().contains(r#""messageId":"m1""#));
    }

    #[test]
    fn an_html_page_in_base64_becomes_a_link_to_it() {
        // `<h1>Hi</h1>` in base64.
        let params = r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"resource","resource":{"uri":"file:///tmp/report.html","mimeType":"text/html","blob":"PGgxPkhpPC9oMT4="}}}}"#;
        let (adapted, done) =
            adapt("session/update", &raw(params), &Accepts::acp_default()).unwrap();
        assert_eq!(
            done,
            vec![Transformation {
                from: "text/html".into(),
                into: "resource_link"
            }]
        );
        let link = adapted.member_at(&["update", "content"]).unwrap();
        assert_eq!(link.plain_str("type"), Some("resource_link"));
        assert_eq!(link.plain_str("uri"), Some("file:///tmp/report.html"));
        assert_eq!(link.plain_str("name"), Some("report.html"));
        assert_eq!(link.plain_str("mimeType"), Some("text/html"));
        assert!(!link.as_str().contains("PGgx"), "{link}");
        // A hop that takes HTML, and a blob of another type, go as they came.
        assert!(adapt("session/update", &raw(params), &Accepts::of(["text/html"])).is_none());
        let pdf = params.replace("text/html", "application/pdf");
        assert!(adapt("session/update", &raw(&pdf), &Accepts::acp_default()).is_none());
    }

    #[test]
    fn an_image_becomes_a_placeholder_or_a_link_and_others_stay() {
        let params = r#"{"sessionId":"s","prompt":[{"type":"text","text":"look"}, {"type":"image","mimeType":"image/png","data":"AAAABBBB"},{"type":"image","mimeType":"image/png","data":"AAAA","uri":"file:///tmp/shot.png"}]}"#;
        let (adapted, done) = adapt(
            "session/prompt",
            &raw(params),
            &Accepts::of(Vec::<String>::new()),
        )
        .unwrap();
        assert_eq!(done.len(), 2);
        assert_eq!(done[1].into, "resource_link");
        let prompt: Vec<serde_json::Value> = adapted.member("prompt").unwrap().parse().unwrap();
        assert_eq!(prompt[0], serde_json::json!({"type":"text","text":"look"}));
        assert_eq!(prompt[1]["type"], "text");
        assert!(prompt[1]["text"].as_str().unwrap().contains("image/png"));
        assert_eq!(prompt[2]["type"], "resource_link");
        assert_eq!(prompt[2]["uri"], "file:///tmp/shot.png");
        assert_eq!(prompt[2]["name"], "shot.png");
        // The untouched block keeps its bytes.
        assert!(
            adapted
                .as_str()
                .contains(r#"[{"type":"text","text":"look"},"#)
        );
        let with_images = Accepts::of(["image/*"]);
        assert!(adapt("session/prompt", &raw(params), &with_images).is_none());
    }

    #[test]
    fn a_tool_calls_content_is_adapted_inside_its_wrapper() {
        let params = format!(
            r#"{{"sessionId":"s","update":{{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","content":[{{"type":"diff","path":"/a","newText":"b"}},{{"type":"content","content":{PANEL}}}]}}}}"#
        );
        let (adapted, done) =
            adapt("session/update", &raw(&params), &Accepts::acp_default()).unwrap();
        assert_eq!(done.len(), 1);
        let content: Vec<serde_json::Value> = adapted
            .member_at(&["update", "content"])
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(content[0]["type"], "diff");
        assert_eq!(content[1]["type"], "content");
        assert_eq!(content[1]["content"]["type"], "text");
    }

    #[test]
    fn text_and_unknown_messages_pass_unscanned() {
        let params = raw(
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}"#,
        );
        assert!(
            adapt(
                "session/update",
                &params,
                &Accepts::of(Vec::<String>::new())
            )
            .is_none()
        );
        let other = raw(&format!(r#"{{"content":{PANEL}}}"#));
        assert!(adapt("_x/whatever", &other, &Accepts::acp_default()).is_none());
    }
}
