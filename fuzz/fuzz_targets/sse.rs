//! The remote HTTP client's server-sent events parser: the same events however the stream is
//! cut, none over the limit.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((&limit, rest)) = input.split_first() else {
        return;
    };
    let (cuts, data) = match rest.iter().position(|&b| b == 0xff) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (&[][..], rest),
    };
    sacp::fuzzing::sse(data, cuts, usize::from(limit) * 4 + 1);
});
