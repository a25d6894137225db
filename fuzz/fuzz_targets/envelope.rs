//! The successor envelope (`_proxy/successor/*`): any params unwrap to a message or an error;
//! a message wrapped unwraps to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sacp::jsonrpc::RawJson;
use sacp::protocol::envelope;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(raw) = RawJson::from_string(text) else {
        return;
    };
    if let Ok((method, params)) = envelope::unwrap(Some(&raw)) {
        let wrapped = envelope::wrap(&method, params.as_ref());
        let (again, again_params) = envelope::unwrap(Some(&wrapped)).expect("ours unwraps");
        assert_eq!(again, method);
        assert_eq!(again_params, params);
    }
    // The params as a message's own (JSON-RPC params are an object or an array): wrapped
    // and unwrapped unchanged.
    if !raw.as_str().trim_start().starts_with(['{', '[']) {
        return;
    }
    let wrapped = envelope::wrap("x/y", Some(&raw));
    let (method, params) = envelope::unwrap(Some(&wrapped)).expect("ours unwraps");
    assert_eq!(method, "x/y");
    assert_eq!(params.as_ref(), Some(&raw));
});
