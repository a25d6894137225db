struct PassThrough;

#[sacp::proxy]
impl PassThrough {}

fn main() {
    fn is_proxy<P: sacp::proxy::Proxy>() {}
    is_proxy::<PassThrough>();
}
