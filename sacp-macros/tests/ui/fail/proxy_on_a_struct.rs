#[sacp::proxy]
struct P;

fn main() {}
