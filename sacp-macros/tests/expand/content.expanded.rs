use sacp::acp::{ContentBlock, TextContent};
struct Plain;
impl Plain {
    /// HTML as its readable text, for a neighbour that cannot take HTML.
    fn html(&self, block: ContentBlock) -> ContentBlock {
        block
    }
    /// Every image as a word.
    fn image(&self, _block: ContentBlock) -> ContentBlock {
        ContentBlock::Text(TextContent::new("an image"))
    }
}
#[automatically_derived]
impl ::sacp::proxy::Proxy for Plain {
    fn takes(method: &str, from: ::sacp::acp::Side) -> bool {
        let _ = (method, from);
        false
    }
    async fn dispatch(&self, message: ::sacp::proxy::Incoming, cx: &::sacp::proxy::Cx) {
        ::sacp::__private::unhandled(message, cx).await
    }
    const CONTENT: &'static [&'static str] = &["text/html", "image/*"];
    fn transform(
        &self,
        media_type: &str,
        block: ::sacp::acp::ContentBlock,
    ) -> ::std::option::Option<::sacp::acp::ContentBlock> {
        if ::sacp::protocol::content::matches("text/html", media_type) {
            return ::std::option::Option::Some(Self::html(self, block));
        }
        if ::sacp::protocol::content::matches("image/*", media_type) {
            return ::std::option::Option::Some(Self::image(self, block));
        }
        let _ = block;
        ::std::option::Option::None
    }
}
