use sacp::acp::ContentBlock;

struct Plain;

#[sacp::proxy]
impl Plain {
    #[content("text/html")]
    async fn html(&self, block: ContentBlock) -> ContentBlock {
        block
    }
}

fn main() {}
