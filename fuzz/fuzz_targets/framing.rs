//! The line reader of stdio and byte-stream transports: the same lines however the reads are
//! cut, none with a newline, a final CR, blank or over the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    // [limit, cuts..., 0xff, data...]: a small limit, so that lines over it are common.
    let Some((&limit, rest)) = input.split_first() else {
        return;
    };
    let (cuts, data) = match rest.iter().position(|&b| b == 0xff) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (&[][..], rest),
    };
    sacp::fuzzing::framing(data, cuts, usize::from(limit % 64) + 1);
});
