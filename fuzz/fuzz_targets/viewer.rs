//! The viewer's inputs: its resume point (`Last-Event-ID`, `?from=`) from any header and query,
//! and its export of any trace, which cannot end the page's data script early.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (header, rest) = data.split_at(
        data.len()
            .min(usize::from(data.first().copied().unwrap_or(0) % 32)),
    );
    let text = String::from_utf8_lossy(rest);
    sacp_conductor::fuzzing::viewer_resume(header, &text);
    sacp_conductor::fuzzing::viewer_export(&text);
});
