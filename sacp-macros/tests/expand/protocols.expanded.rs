struct Both;
impl Both {}
#[automatically_derived]
impl ::sacp::proxy::Proxy for Both {
    const PROTOCOLS: &'static [u16] = {
        let () = ::sacp::__private::protocol_v2_needs_the_sacp_feature_unstable_protocol_v2;
        &[1u16, 2u16]
    };
    fn takes(method: &str, from: ::sacp::acp::Side) -> bool {
        let _ = (method, from);
        false
    }
    async fn dispatch(&self, message: ::sacp::proxy::Incoming, cx: &::sacp::proxy::Cx) {
        ::sacp::__private::unhandled(message, cx).await
    }
}
