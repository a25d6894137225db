use sacp::acp::ContentBlock;

struct Plain;

#[sacp::proxy]
impl Plain {
    #[content("html")]
    fn html(&self, block: ContentBlock) -> ContentBlock {
        block
    }
}

fn main() {}
