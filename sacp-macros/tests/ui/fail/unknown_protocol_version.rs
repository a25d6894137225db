struct Future;

#[sacp::agent(protocol = [1, 3])]
impl Future {}

struct Twice;

#[sacp::proxy(protocol = [2, 2])]
impl Twice {}

fn main() {}
