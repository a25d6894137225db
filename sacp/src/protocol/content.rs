//! Rich content: which content each hop of a chain can take, and what the chain does with
//! content a hop cannot take.
//!
//! ACP carries more than text — `image`, `audio`, `resource_link`, and embedded resources with
//! a media type — and an agent's prompt capabilities say which of them it takes. Nothing in
//! ACP says what an editor can show, or what a proxy can take; SACP adds a **declaration**:
//!
//! ```json
//! "_meta": {"sacp": {"content": ["text/html", "image/*"]}}
//! ```
//!
//! in the top-level `_meta` of `initialize` — its params for what the sender takes from the
//! other side (an editor; a proxy initializing its successor), its result for what the
//! answerer takes (an agent, beside its prompt capabilities; a proxy). The list is of media
//! types, a `*` allowed for the subtype (`image/*`) or both (`*/*`), parameters ignored, case
//! ignored. What a hop takes:
//!
//! | hop | takes |
//! |---|---|
//! | an editor that declares | what it declares |
//! | an editor that declares nothing | what ACP's content blocks carry: images and audio, not HTML |
//! | an agent | what its prompt capabilities say (`image`: `image/*`, `audio`: `audio/*`, `embeddedContext`: HTML as an embedded resource), and what it declares besides |
//! | a proxy that declares | what it declares |
//! | a proxy that declares nothing | everything: it passes content on, the hop after it is adapted |
//!
//! Text (a `text` block) and `resource_link` blocks are taken by every hop; so is an embedded
//! resource of any type but HTML, which is text (or a blob) that any reader can keep.
//!
//! **Transformed where a hop cannot take it** ([`adapt`]): the conductor adapts what it
//! delivers to each hop — a prompt going down, a `session/update` and the tool call of a
//! `session/request_permission` going up — before it reaches a hop that did not declare it:
//!
//! - HTML (an embedded resource of type `text/html`) becomes a `text` block with the page's
//!   readable text (rendered by the `html2text` crate: headings, lists, tables and links as
//!   text, no markup); HTML given in base64 (a `blob`) becomes a `resource_link` to its `uri`;
//! - an image or audio becomes a `resource_link` to it where it has a `uri`, else a `text`
//!   block saying what it was (its type and size) and that the receiver cannot take it.
//!
//! Nothing is dropped: every block that was there is there, as the receiver can take it, and a
//! transformed block says what it was in its `_meta` (`{"sacp": {"transformedFrom":
//! "text/html"}}`). Everything else in the message leaves byte for byte as it came.
//!
//! A proxy may do it itself: a proxy that transforms a type declares it takes that type (so
//! the conductor leaves it to the proxy) and adapts what it passes on to what the hop after
//! it declared — what `#[sacp::proxy]`'s content handlers do. What reaches the next hop is then
//! already what it takes, and the conductor does not transform it again.

mod transform;

pub use self::transform::{
    Standard, Transform, Transformation, adapt, adapt_block, adapt_with, html_to_text, matches,
};

use crate::jsonrpc::RawJson;

/// Where a declaration sits in `initialize`'s params or result.
pub const DECLARATION: [&str; 3] = ["_meta", "sacp", "content"];

/// What a hop takes: the media types it declared, or everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepts {
    /// Lowercase media ranges (`type/subtype`, `type/*`, `*/*`); `None`: everything.
    ranges: Option<Vec<String>>,
}

impl Accepts {
    /// A hop that takes everything (a proxy that declared nothing).
    pub fn everything() -> Accepts {
        Accepts { ranges: None }
    }

    /// A hop that takes these media ranges (and text, which every hop takes); one that
    /// lists `*/*` takes everything.
    pub fn of<S: AsRef<str>>(ranges: impl IntoIterator<Item = S>) -> Accepts {
        let ranges: Vec<String> = ranges
            .into_iter()
            .map(|r| normalize(r.as_ref()))
            .filter(|r| !r.is_empty())
            .collect();
        if ranges.iter().any(|r| r == "*/*") {
            return Accepts::everything();
        }
        Accepts {
            ranges: Some(ranges),
        }
    }

    /// What an editor that declares nothing takes: what ACP's content blocks carry (images,
    /// audio), not HTML.
    pub fn acp_default() -> Accepts {
        Accepts::of(["image/*", "audio/*"])
    }

    /// Whether it takes everything.
    pub fn is_everything(&self) -> bool {
        self.ranges.is_none()
    }

    /// The media ranges it takes (`None`: everything).
    pub fn ranges(&self) -> Option<&[String]> {
        self.ranges.as_deref()
    }

    /// Whether it takes `media_type` (`image/png`; parameters and case ignored).
    pub fn takes(&self, media_type: &str) -> bool {
        let Some(ranges) = &self.ranges else {
            return true;
        };
        // Compared as it came, without a lowercase copy: the ranges are lowercase already.
        let wanted = media_type.split(';').next().unwrap_or("").trim();
        let kind = wanted.split_once('/').map_or(wanted, |(kind, _)| kind);
        ranges.iter().any(|range| match range.split_once('/') {
            Some(("*", "*")) => true,
            Some((k, "*")) => k.eq_ignore_ascii_case(kind),
            _ => range.eq_ignore_ascii_case(wanted),
        })
    }

    /// This and `other`'s ranges together.
    pub fn and(mut self, other: &Accepts) -> Accepts {
        match (&mut self.ranges, &other.ranges) {
            (None, _) => self,
            (_, None) => Accepts::everything(),
            (Some(mine), Some(theirs)) => {
                for range in theirs {
                    if !mine.contains(range) {
                        mine.push(range.clone());
                    }
                }
                self
            }
        }
    }

    /// The declaration in `initialize`'s params or result (see the module docs), if it has
    /// one that is a list of strings.
    pub fn declared(init: &RawJson) -> Option<Accepts> {
        let list = init.member_at(&DECLARATION)?;
        let ranges: Vec<String> = list.parse().ok()?;
        Some(Accepts::of(ranges))
    }

    /// What a client (an editor, or a proxy initializing its successor) takes, by the params
    /// of its `initialize`: its declaration, or ACP's default.
    pub fn of_client(params: Option<&RawJson>) -> Accepts {
        params
            .and_then(Accepts::declared)
            .unwrap_or_else(Accepts::acp_default)
    }

    /// What an agent takes, by its `initialize` result: its prompt capabilities (v1's
    /// booleans, v2's objects), and its declaration besides.
    pub fn of_agent(result: &RawJson) -> Accepts {
        let capabilities = result
            .member_at(&["agentCapabilities", "promptCapabilities"])
            .or_else(|| result.member_at(&["capabilities", "prompt"]));
        let has = |name: &str| {
            capabilities
                .as_ref()
                .and_then(|c| c.member(name))
                .is_some_and(|v| !matches!(v.as_bytes(), b"false" | b"null"))
        };
        let mut ranges = Vec::new();
        if has("image") {
            ranges.push("image/*");
        }
        if has("audio") {
            ranges.push("audio/*");
        }
        if has("embeddedContext") {
            ranges.push("text/html");
        }
        let capable = Accepts::of(ranges);
        match Accepts::declared(result) {
            Some(declared) => capable.and(&declared),
            None => capable,
        }
    }

    /// `init` (an `initialize`'s params or result) with this declared in it (`["*/*"]` for
    /// everything), every other byte as it was; `None` where `init` is not an object.
    pub fn declare_in(&self, init: &RawJson) -> Option<RawJson> {
        let list = match &self.ranges {
            Some(ranges) => RawJson::to_raw(ranges).ok()?,
            None => RawJson::to_raw(&["*/*"]).ok()?,
        };
        init.with_member_at(&DECLARATION, &list)
    }
}

/// A media type or range, lowercase, without parameters or spaces.
fn normalize(media_type: &str) -> String {
    media_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> RawJson {
        RawJson::from_string(text).unwrap()
    }

    #[test]
    fn ranges_match_by_type_subtype_and_wildcards() {
        let accepts = Accepts::of(["text/HTML", "image/*"]);
        assert!(accepts.takes("text/html; charset=utf-8"));
        assert!(accepts.takes("image/png"));
        assert!(!accepts.takes("audio/wav"));
        assert!(!accepts.takes("text/markdown"));
        assert!(Accepts::of(["*/*"]).takes("audio/wav"));
        assert!(Accepts::everything().takes("anything/at-all"));
        assert!(!Accepts::acp_default().takes("text/html"));
        assert!(Accepts::acp_default().takes("image/jpeg"));
    }

    #[test]
    fn a_client_declares_in_its_params_or_takes_acps_default() {
        let params = raw(r#"{"protocolVersion":1,"_meta":{"sacp":{"content":["text/html"]}}}"#);
        assert_eq!(
            Accepts::of_client(Some(&params)),
            Accepts::of(["text/html"])
        );
        let silent = raw(r#"{"protocolVersion":1}"#);
        assert_eq!(Accepts::of_client(Some(&silent)), Accepts::acp_default());
        let malformed = raw(r#"{"_meta":{"sacp":{"content":"text/html"}}}"#);
        assert_eq!(Accepts::of_client(Some(&malformed)), Accepts::acp_default());
    }

    #[test]
    fn an_agent_takes_what_its_capabilities_say_and_what_it_declares() {
        let v1 = raw(
            r#"{"protocolVersion":1,"agentCapabilities":{"promptCapabilities":{"image":true,"audio":false}}}"#,
        );
        let accepts = Accepts::of_agent(&v1);
        assert!(accepts.takes("image/png"));
        assert!(!accepts.takes("audio/wav"));
        assert!(!accepts.takes("text/html"));
        let v2 = raw(r#"{"protocolVersion":2,"capabilities":{"prompt":{"audio":{}}}}"#);
        assert!(Accepts::of_agent(&v2).takes("audio/wav"));
        assert!(!Accepts::of_agent(&v2).takes("image/png"));
        let declared = raw(
            r#"{"agentCapabilities":{"promptCapabilities":{"embeddedContext":true}},"_meta":{"sacp":{"content":["image/png"]}}}"#,
        );
        let accepts = Accepts::of_agent(&declared);
        assert!(accepts.takes("text/html"));
        assert!(accepts.takes("image/png"));
        assert!(!accepts.takes("image/gif"));
    }

    #[test]
    fn a_declaration_is_written_in_place() {
        let params = raw(r#"{"protocolVersion":1,"_meta":{"proxy":true}}"#);
        let declared = Accepts::of(["text/html"]).declare_in(&params).unwrap();
        assert_eq!(
            declared.as_str(),
            r#"{"protocolVersion":1,"_meta":{"proxy":true,"sacp":{"content":["text/html"]}}}"#
        );
        assert_eq!(
            Accepts::declared(&declared),
            Some(Accepts::of(["text/html"]))
        );
        let everything = Accepts::everything().declare_in(&params).unwrap();
        assert!(
            everything.as_str().ends_with(r#""content":["*/*"]}}}"#),
            "{everything}"
        );
        assert!(Accepts::declared(&everything).unwrap().is_everything());
    }
}
