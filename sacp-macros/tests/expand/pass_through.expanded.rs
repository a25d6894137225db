struct PassThrough;
impl PassThrough {}
#[automatically_derived]
impl ::sacp::proxy::Proxy for PassThrough {
    fn takes(method: &str, from: ::sacp::acp::Side) -> bool {
        let _ = (method, from);
        false
    }
    async fn dispatch(&self, message: ::sacp::proxy::Incoming, cx: &::sacp::proxy::Cx) {
        ::sacp::__private::unhandled(message, cx).await
    }
    const PROTOCOLS: &'static [u16] = ::sacp::__private::FORWARDED_VERSIONS;
}
