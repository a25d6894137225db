//! A proxy that renders HTML as text itself, for a client that cannot take HTML
//! (`plain-proxy`): its own content handler (`#[content("text/html")]`) in place of the
//! conductor's transformation.
//!
//! It declares in `initialize` that it takes `text/html`, so the conductor passes HTML to it
//! untouched; on the way on to a client that did not declare `text/html` it makes each HTML
//! block a text block of its own — a heading naming it, then the page's readable text — and
//! the conductor, finding text, leaves it as it is. A client that takes HTML gets the HTML.

use sacp::acp::{ContentBlock, EmbeddedResourceResource, TextContent};
use sacp::protocol::content::html_to_text;

/// What starts each text it makes of a page.
pub const HEADING: &str = "Rendered by plain-proxy";

/// The plain proxy: see the module docs.
#[derive(Debug, Default)]
pub struct Plain;

#[sacp::proxy]
impl Plain {
    /// An HTML page as its heading and readable text.
    #[content("text/html")]
    fn html(&self, block: ContentBlock) -> ContentBlock {
        if let ContentBlock::Resource(embedded) = &block
            && let EmbeddedResourceResource::TextResourceContents(page) = &embedded.resource
        {
            let text = format!("{HEADING}\n\n{}", html_to_text(&page.text));
            return ContentBlock::Text(TextContent::new(text));
        }
        block
    }
}
