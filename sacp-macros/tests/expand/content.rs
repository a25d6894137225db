use sacp::acp::{ContentBlock, TextContent};

struct Plain;

#[sacp::proxy]
impl Plain {
    /// HTML as its readable text, for a neighbour that cannot take HTML.
    #[content("text/html")]
    fn html(&self, block: ContentBlock) -> ContentBlock {
        block
    }

    /// Every image as a word.
    #[content("image/*")]
    fn image(&self, _block: ContentBlock) -> ContentBlock {
        ContentBlock::Text(TextContent::new("an image"))
    }
}
