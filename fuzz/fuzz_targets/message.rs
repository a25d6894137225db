//! A JSON-RPC message read from any bytes (a line, an HTTP body, a WebSocket frame): a message
//! or the error response to answer it with; a message read is written as a line that reads back
//! as the same message (its id, method and payload as they came).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sacp::jsonrpc::Message;

fuzz_target!(|data: &[u8]| {
    match Message::parse(data) {
        Ok(message) => {
            let mut line = Vec::new();
            message.encode_into(&mut line);
            assert_eq!(line.last(), Some(&b'\n'), "a line ends in a newline");
            assert!(
                !line[..line.len() - 1].contains(&b'\n'),
                "a written message is one line"
            );
            let again = Message::parse(&line[..line.len() - 1]).expect("what we wrote reads");
            let mut twice = Vec::new();
            again.encode_into(&mut twice);
            assert_eq!(line, twice, "writing is stable");
        }
        Err(answer) => {
            let mut line = Vec::new();
            Message::Response(answer).encode_into(&mut line);
            match serde_json::from_slice::<serde_json::Value>(&line) {
                Ok(value) => assert!(value["error"]["code"].is_i64(), "{value}"),
                // The id is echoed as it came: a number JSON allows but f64 cannot hold
                // (`1e500000`) is still JSON.
                Err(e) if e.to_string().contains("number out of range") => {}
                Err(e) => panic!(
                    "the error answer is not JSON ({e}): {}",
                    String::from_utf8_lossy(&line)
                ),
            }
        }
    }
});
