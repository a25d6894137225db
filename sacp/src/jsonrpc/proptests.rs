//! Property tests of what every byte of input goes through: framing, the wire message, and the
//! successor envelope. Arbitrary input never panics; valid traffic comes out byte for byte.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use proptest::prelude::*;
use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};

use super::framing::{Frame, LineReader};
use super::message::{Parsed, parse_line};
use super::{Id, Message, Notification, RawJson, Request, Response, ResponseBody};
use crate::protocol::envelope;

/// Hands out `data` in the given chunk sizes (cycling), as a socket or pipe would.
struct Chunked {
    data: Vec<u8>,
    at: usize,
    sizes: Vec<usize>,
    next: usize,
}

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let size = self.sizes[self.next % self.sizes.len()].max(1);
        self.next += 1;
        let end = (self.at + size)
            .min(self.data.len())
            .min(self.at + buf.remaining());
        let at = self.at;
        buf.put_slice(&self.data[at..end]);
        self.at = end;
        Poll::Ready(Ok(()))
    }
}

fn frames(data: Vec<u8>, sizes: Vec<usize>, max: usize) -> Vec<Frame> {
    let reader = Chunked {
        data,
        at: 0,
        sizes,
        next: 0,
    };
    let mut lines = LineReader::new(reader, max);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime.block_on(async move {
        let mut out = Vec::new();
        while let Some(frame) = lines
            .next_frame()
            .await
            .expect("reading memory cannot fail")
        {
            out.push(frame);
        }
        out
    })
}

/// Any JSON value (numbers kept to forms that print back the same).
pub(super) fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-zA-Z0-9 é\"\\\\/\u{1F600}\\t]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,6}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// JSON text with its own spacing, as another implementation might write it (one line).
fn json_text() -> impl Strategy<Value = String> {
    (json(), any::<bool>()).prop_map(|(value, pretty)| {
        if pretty {
            serde_json::to_string_pretty(&value)
                .unwrap()
                .replace('\n', " ")
        } else {
            serde_json::to_string(&value).unwrap()
        }
    })
}

/// Params as JSON-RPC allows them: an object or an array, in JSON text.
fn params_text() -> impl Strategy<Value = String> {
    json_text().prop_filter("params are an object or an array", |text| {
        text.starts_with('{') || text.starts_with('[')
    })
}

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        any::<i64>().prop_map(Id::Number),
        "[a-zA-Z0-9-\"é]{0,10}".prop_map(|s: String| Id::String(s.into())),
    ]
}

fn method() -> impl Strategy<Value = String> {
    "[a-z_/$]{1,20}|_[a-z]{1,8}/[a-z\"é ]{1,8}"
}

fn raw(text: String) -> RawJson {
    RawJson::from_string(text).expect("valid JSON")
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (id(), method(), prop::option::of(params_text())).prop_map(|(id, method, params)| {
            Message::Request(Request {
                id,
                method,
                params: params.map(raw),
            })
        }),
        (method(), prop::option::of(params_text())).prop_map(|(method, params)| {
            Message::Notification(Notification {
                method,
                params: params.map(raw),
            })
        }),
        (id(), json_text()).prop_map(|(id, result)| {
            Message::Response(Response {
                id,
                body: ResponseBody::Result(raw(result)),
            })
        }),
        (id(), any::<i32>(), "[a-z ]{0,10}").prop_map(|(id, code, message)| {
            let error = serde_json::json!({"code": code, "message": message}).to_string();
            Message::Response(Response {
                id,
                body: ResponseBody::Error(raw(error)),
            })
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic_the_framing_or_the_parser(
        data in prop::collection::vec(any::<u8>(), 0..2048),
        sizes in prop::collection::vec(1usize..64, 1..8),
        max in 1usize..512,
    ) {
        for frame in frames(data, sizes, max) {
            if let Frame::Line(line) = frame {
                prop_assert!(line.len() <= max);
                let _ = parse_line(&line);
            }
        }
    }

    #[test]
    fn lines_come_out_as_they_went_in_however_they_are_chunked(
        lines in prop::collection::vec("[^\n\r]{0,40}", 0..20),
        crlf in any::<bool>(),
        sizes in prop::collection::vec(1usize..50, 1..8),
    ) {
        let end = if crlf { "\r\n" } else { "\n" };
        let data: String = lines.iter().map(|l| format!("{l}{end}")).collect();
        let got: Vec<String> = frames(data.into_bytes(), sizes, 1 << 20)
            .into_iter()
            .map(|f| match f {
                Frame::Line(l) => String::from_utf8(l.to_vec()).unwrap(),
                Frame::TooLong { len } => format!("<too long {len}>"),
            })
            .collect();
        let expected: Vec<&String> = lines
            .iter()
            .filter(|l| !l.bytes().all(|b| b.is_ascii_whitespace()))
            .collect();
        prop_assert_eq!(got.iter().collect::<Vec<_>>(), expected);
    }

    #[test]
    fn messages_round_trip_through_the_wire_byte_for_byte(message in message()) {
        let mut line = Vec::new();
        message.encode_into(&mut line);
        prop_assert_eq!(line.pop(), Some(b'\n'));
        let parsed = parse_line(&Bytes::from(line.clone()));
        let Parsed::Message(back) = parsed else {
            return Err(TestCaseError::fail(format!("did not parse: {}", String::from_utf8_lossy(&line))));
        };
        prop_assert_eq!(&back, &message);
        let mut again = Vec::new();
        back.encode_into(&mut again);
        again.pop();
        prop_assert_eq!(again, line);
    }

    #[test]
    fn the_envelope_unwraps_what_it_wrapped_byte_for_byte(
        method in method(),
        params in prop::option::of(params_text()),
    ) {
        let params = params.map(raw);
        let wrapped = envelope::wrap(&method, params.as_ref());
        let (inner, back) = envelope::unwrap(Some(&wrapped)).unwrap();
        prop_assert_eq!(inner, method);
        prop_assert_eq!(back, params);
    }

    #[test]
    fn unwrapping_agrees_with_serde_on_any_envelope(
        method in prop::option::of(method()),
        params in prop::option::of(json_text()),
        others in prop::collection::vec(("[a-z_]{1,6}", json_text()), 0..3),
        order in any::<u8>(),
        space in "[ \t]{0,2}",
    ) {
        let mut members: Vec<(String, String)> = others
            .into_iter()
            .filter(|(k, _)| k != "method" && k != "params")
            .collect();
        members.dedup_by(|a, b| a.0 == b.0);
        if let Some(m) = &method {
            members.push(("method".into(), serde_json::to_string(m).unwrap()));
        }
        if let Some(p) = &params {
            members.push(("params".into(), p.clone()));
        }
        let turn = usize::from(order) % members.len().max(1);
        members.rotate_left(turn);
        let text = format!(
            "{{{}}}",
            members
                .iter()
                .map(|(k, v)| format!("{space}\"{k}\"{space}:{space}{v}{space}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let result = envelope::unwrap(Some(&raw(text.clone())));
        let structured = params.as_deref().map(|p| p.starts_with('{') || p.starts_with('['));
        match (method, structured) {
            (None, _) => prop_assert!(result.is_err(), "{}", text),
            // Scalar inner params would go on as invalid JSON-RPC: refused.
            (Some(_), Some(false)) if params.as_deref() != Some("null") => {
                prop_assert!(result.is_err(), "{}", text)
            }
            (Some(method), _) => {
                let (got_method, got_params) = result.unwrap();
                prop_assert_eq!(got_method, method);
                let expected = params.filter(|p| p != "null");
                prop_assert_eq!(got_params.map(|p| p.as_str().to_owned()), expected);
            }
        }
    }

    #[test]
    fn unwrapping_arbitrary_text_never_panics(text in "\\PC{0,200}") {
        if let Ok(raw) = RawJson::from_string(text) {
            let _ = envelope::unwrap(Some(&raw));
        }
    }
}
