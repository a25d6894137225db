struct PassThrough;

#[sacp::proxy]
impl PassThrough {}
