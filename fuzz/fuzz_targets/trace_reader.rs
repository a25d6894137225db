//! `conductor trace summarise` on any text: a summary or an error naming the line, never a
//! panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        sacp_conductor::fuzzing::trace_summary(text);
    }
});
