use sacp::acp::ContentBlock;

struct A;

#[sacp::agent]
impl A {
    #[content("text/html")]
    fn html(&self, block: ContentBlock) -> ContentBlock {
        block
    }
}

fn main() {}
