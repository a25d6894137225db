//! The ACP version negotiated at every hop: what each `initialize` asked for and what its
//! answer said, in the log and the trace (a `version` line), and a warning naming the
//! component whose answer does not fit (a version above the one asked for, or none).
//!
//! The conductor translates nothing: each component negotiates with its neighbour (a proxy
//! asks downstream for the version it chose, see `sacp::protocol::version`), so the chain
//! settles on a version every hop speaks, and a `-32022` passes up with its code and data as
//! they came. Only its message gains the name of the component that refused
//! ([`name_the_refuser`]): the editor sees one agent, and would not know which of the
//! chain's parts said no.

use sacp::jsonrpc::{Message, RawJson, ResponseBody};
use sacp::protocol::routing::{Conn, Hop, Node};
use sacp::protocol::version;

/// How many `initialize` requests may wait for their answers (one a hop is the usual).
const WAITING: usize = 64;

/// What one hop negotiated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Negotiated {
    /// The component that answered (a position), or `None` for the conductor's successor.
    pub(crate) answerer: Node,
    pub(crate) requested: Option<u16>,
    /// The answer's version, or the error's code.
    pub(crate) answered: Result<u16, i64>,
}

impl Negotiated {
    /// Whether the answer fits the request: a version at or below the one asked for (or an
    /// error, which passes up as it is).
    pub(crate) fn fits(&self) -> bool {
        match (self.requested, self.answered) {
            (Some(requested), Ok(answered)) => answered <= requested,
            _ => true,
        }
    }
}

/// The `initialize` requests on their way, by the hop key their answers come back with.
#[derive(Debug, Default)]
pub(crate) struct Versions {
    asked: Vec<((Conn, i64), Option<u16>)>,
}

impl Versions {
    /// Looks at one hop of a message: an `initialize` request is remembered, its answer
    /// makes a [`Negotiated`].
    pub(crate) fn observe(&mut self, hop: &Hop, message: &Message) -> Option<Negotiated> {
        let key = hop.key?;
        match message {
            Message::Request(request) => {
                let params = initialize_params(&request.method, request.params.as_ref())?;
                if self.asked.len() == WAITING {
                    self.asked.remove(0);
                }
                self.asked.push((key, version::of(params).ok()));
                None
            }
            Message::Response(response) if hop.answers.as_deref() == Some("initialize") => {
                let at = self.asked.iter().position(|(k, _)| *k == key)?;
                let (_, requested) = self.asked.remove(at);
                let answered = match &response.body {
                    ResponseBody::Result(result) => version::of(Some(result)).map_err(|e| e.code),
                    ResponseBody::Error(error) => {
                        Err(error.parse::<sacp::jsonrpc::Error>().map_or(0, |e| e.code))
                    }
                };
                Some(Negotiated {
                    answerer: hop.from,
                    requested,
                    answered,
                })
            }
            _ => None,
        }
    }
}

/// A component's refusal of an `initialize` (`message`, its answer), as the chain passes it
/// on: its message names the component (`component 2 ("v2-proxy") refused initialize: …`),
/// unless it names one already — a refusal the proxies before it pass up keeps the name of
/// the one that refused first, and the conductor's own refusals name theirs. Its code, data
/// and anything else stay as they came.
pub(crate) fn name_the_refuser(message: &mut Message, position: usize, name: &str) {
    use serde_json::{Map, Value};
    let Message::Response(response) = message else {
        return;
    };
    let ResponseBody::Error(raw) = &response.body else {
        return;
    };
    let Ok(mut error) = raw.parse::<Map<String, Value>>() else {
        return;
    };
    let Some(Value::String(text)) = error.get_mut("message") else {
        return;
    };
    if text.starts_with("component ") {
        return;
    }
    *text = format!("component {position} ({name:?}) refused initialize: {text}");
    if let Ok(raw) = RawJson::to_raw(&error) {
        response.body = ResponseBody::Error(raw);
    }
}

/// `initialize`'s params, also inside a successor envelope or another dialect's init method.
fn initialize_params<'a>(method: &str, params: Option<&'a RawJson>) -> Option<Option<&'a RawJson>> {
    use sacp::protocol::{dialect::Dialect, envelope};
    if method == "initialize" || Dialect::of_init_method(method).is_some() {
        return Some(params);
    }
    if envelope::is_envelope(method) {
        let (inner, params) = params?.envelope_parts()?;
        return (inner == "initialize").then_some(params);
    }
    None
}
