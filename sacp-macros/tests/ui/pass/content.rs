use sacp::acp::{ContentBlock, ImageContent, TextContent};
use sacp::proxy::Proxy;

struct Plain;

#[sacp::proxy]
impl Plain {
    /// Every image as a word.
    #[content("image/*")]
    fn image(&self, _block: ContentBlock) -> ContentBlock {
        ContentBlock::Text(TextContent::new("an image"))
    }
}

fn main() {
    assert_eq!(<Plain as Proxy>::CONTENT, &["image/*"]);
    let image = ContentBlock::Image(ImageContent::new("", "image/png"));
    assert!(Plain.transform("image/png", image.clone()).is_some());
    assert!(Plain.transform("audio/wav", image).is_none());
}
