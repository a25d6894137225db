struct Both;

#[sacp::proxy(protocol = [1, 2])]
impl Both {}
