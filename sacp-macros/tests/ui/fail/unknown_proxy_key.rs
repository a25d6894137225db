struct P;

#[sacp::proxy(krate = ::sacp)]
impl P {}

fn main() {}
