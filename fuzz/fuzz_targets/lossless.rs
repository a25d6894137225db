//! Typed is lossless: any JSON read into any ACP v1 type it fits and written again is the same
//! JSON, unknown fields and explicit nulls included.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sacp::jsonrpc::{HasOrigin, RawJson, lossless};
use serde::Serialize;
use serde::de::DeserializeOwned;

type RoundTrip = fn(&RawJson) -> Option<RawJson>;

fn round_trip<T: Serialize + DeserializeOwned + HasOrigin>(raw: &RawJson) -> Option<RawJson> {
    let value: T = lossless::read(raw).ok()?;
    Some(lossless::write(&value).expect("a value read is written"))
}

macro_rules! requests {
    ($(($params:ty, $response:ty, $method:literal, $receiver:ident),)*) => {
        vec![$(round_trip::<$params> as RoundTrip, round_trip::<$response> as RoundTrip,)*]
    };
}

macro_rules! notifications {
    ($(($params:ty, $method:literal, $receiver:ident),)*) => {
        vec![$(round_trip::<$params> as RoundTrip,)*]
    };
}

fn types() -> &'static [RoundTrip] {
    static TYPES: std::sync::OnceLock<Vec<RoundTrip>> = std::sync::OnceLock::new();
    TYPES.get_or_init(|| {
        let mut all: Vec<RoundTrip> = sacp::schema::for_each_acp_v1_request!(requests);
        all.extend(sacp::schema::for_each_acp_v1_notification!(notifications));
        all
    })
}

fuzz_target!(|json: &[u8]| {
    let Ok(text) = std::str::from_utf8(json) else {
        return;
    };
    let Ok(raw) = RawJson::from_string(text) else {
        return;
    };
    // (JSON that serde_json's Value cannot hold, a number past f64's range, is left out: it
    // could not be compared.)
    let Ok(before) = serde_json::from_str::<serde_json::Value>(raw.as_str()) else {
        return;
    };
    for round_trip in types() {
        if let Some(written) = round_trip(&raw) {
            let after: serde_json::Value = serde_json::from_str(written.as_str()).expect("JSON");
            assert_eq!(
                before,
                after,
                "read and written: {} -> {}",
                raw.as_str(),
                written.as_str()
            );
        }
    }
});
