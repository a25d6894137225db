//! What a connection does with the requests and notifications it receives.
//!
//! The connection's reader calls the [`Handler`] once per message, **in arrival order**, with
//! `&mut self`. The handler answers with the [`Work`] it made of the message: the rest of the
//! work as a `'static` future, the [`Lane`] it belongs to, and how the lane runs it (see the
//! `lanes` module docs):
//! - [`Work::in_turn`]: the lane runs it to the end before the next item, so notification
//!   handlers of one lane run one after another, in order;
//! - [`Work::start`]: started when the lane reaches it, then it runs in a task of its own,
//!   so a request handler that waits — for a response from the peer, say, even while the
//!   peer's handler waits for this side — never holds anything else up.
//!
//! [`Methods`] is the ready-made handler: typed closures looked up by method name (a map
//! lookup, whatever the number of methods), unknown requests answered `-32601`, unknown
//! notifications ignored.

use std::collections::HashMap;
use std::future::Future;

use super::connection::Connection;
use super::lanes::Lane;
use super::{
    BoxFuture, Error, JsonRpcNotification, JsonRpcRequest, Notification, RawJson, Request,
    Responder,
};

/// Handles what the peer sends. Both methods have defaults: an unknown request is answered
/// `-32601 Method not found`, a notification is ignored.
///
/// Each method runs synchronously in arrival order and returns the rest of the work (clone what
/// it needs from `self` and `cx`). A request is answered through its [`Responder`]; if the peer
/// cancels it, its work is dropped.
pub trait Handler: Send + 'static {
    /// The lanes the connection keeps for this handler's work (`()` for one): messages of
    /// different lanes never wait for each other.
    type Lane: Lane;

    /// Handles one request.
    fn handle_request(
        &mut self,
        request: Request,
        responder: Responder,
        cx: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static, Self::Lane> {
        let _ = cx;
        Work::in_turn(
            async move { responder.answer_error(Error::method_not_found(&request.method)) },
            Self::Lane::FIRST,
        )
    }

    /// Handles one notification. Notifications are never answered.
    fn handle_notification(
        &mut self,
        notification: Notification,
        cx: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static, Self::Lane> {
        let _ = cx;
        Work::in_turn(
            async move {
                tracing::debug!(method = %notification.method, "ignoring a notification nobody handles");
            },
            Self::Lane::FIRST,
        )
    }
}

/// The work a handler made of one received message: a future, the lane it belongs to, and how
/// the lane runs it — in its turn, or started in its turn and then on its own.
#[derive(Debug)]
#[must_use = "Work does nothing until the connection runs it"]
pub struct Work<F, L: Lane = ()> {
    pub(crate) lane: L,
    pub(crate) order: Order,
    /// `None` when the handler already did everything.
    pub(crate) future: Option<F>,
}

/// How a lane runs an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// To the end, before the next item.
    InTurn,
    /// Started, then on its own.
    Start,
}

impl<F, L: Lane> Work<F, L> {
    /// Runs `future` in `lane`, to the end before anything that arrived after it in that lane:
    /// for notifications (their handlers run one after another, in arrival order) and for
    /// answers that must not overtake what arrived before them.
    pub fn in_turn(future: F, lane: L) -> Self {
        Work {
            lane,
            order: Order::InTurn,
            future: Some(future),
        }
    }

    /// Nothing left to do in `lane`: the handler dealt with the message while it was called.
    /// Only right when nothing of that lane is still waiting ([`Connection::lane_is_idle`]), or
    /// the message would overtake it.
    pub fn done(lane: L) -> Self {
        Work {
            lane,
            order: Order::InTurn,
            future: None,
        }
    }

    /// Starts `future` once everything that arrived before it in `lane` was dealt with, then
    /// lets it run in a task of its own: for request handlers, which may wait for as long as
    /// they like without holding anything up.
    pub fn start(future: F, lane: L) -> Self {
        Work {
            lane,
            order: Order::Start,
            future: Some(future),
        }
    }

    /// The same work with another future (say, `future` wrapped in a type shared with other
    /// work).
    pub fn map<G>(self, f: impl FnOnce(F) -> G) -> Work<G, L> {
        Work {
            lane: self.lane,
            order: self.order,
            future: self.future.map(f),
        }
    }
}

type RequestFn =
    Box<dyn FnMut(Option<RawJson>, Connection) -> BoxFuture<Result<RawJson, Error>> + Send>;
type NotificationFn =
    Box<dyn FnMut(Option<RawJson>, Connection) -> BoxFuture<Result<(), Error>> + Send>;

/// A [`Handler`] made of closures, one per method.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> sacp::jsonrpc::Result<()> {
/// use sacp::jsonrpc::{Connection, JsonRpcRequest, Methods, channel};
/// # #[derive(serde::Serialize, serde::Deserialize)] struct Add { a: i64, b: i64 }
/// # impl JsonRpcRequest for Add { const METHOD: &'static str = "math/add"; type Response = i64; }
/// let (a, b) = channel();
/// let _server = Connection::builder().spawn(a, Methods::new().on_request(|req: Add, _cx| async move {
///     Ok(req.a + req.b)
/// }));
/// let client = Connection::builder().spawn(b, Methods::new());
/// assert_eq!(client.request(Add { a: 2, b: 3 }).await?, 5);
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct Methods {
    requests: HashMap<String, RequestFn>,
    notifications: HashMap<String, NotificationFn>,
}

impl std::fmt::Debug for Methods {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Methods")
            .field("requests", &self.requests.keys().collect::<Vec<_>>())
            .field(
                "notifications",
                &self.notifications.keys().collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Methods {
    /// No methods yet.
    pub fn new() -> Self {
        Methods::default()
    }

    /// Handles requests of type `R`. Params that do not deserialize are answered `-32602`;
    /// an `Err` from `f` is answered as that error.
    pub fn on_request<R, F, Fut>(self, mut f: F) -> Self
    where
        R: JsonRpcRequest,
        F: FnMut(R, Connection) -> Fut + Send + 'static,
        Fut: Future<Output = Result<R::Response, Error>> + Send + 'static,
    {
        self.on_raw_request(R::METHOD, move |params, cx| {
            let fut = R::read(params).map(|req| f(req, cx));
            async move { R::write_response(&fut?.await?) }
        })
    }

    /// Handles notifications of type `N`. An `Err` from `f` (or params that do not fit) is
    /// logged: notifications are never answered.
    pub fn on_notification<N, F, Fut>(self, mut f: F) -> Self
    where
        N: JsonRpcNotification,
        F: FnMut(N, Connection) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), Error>> + Send + 'static,
    {
        self.on_raw_notification(N::METHOD, move |params, cx| {
            let fut = N::read(params).map(|n| f(n, cx));
            async move { fut?.await }
        })
    }

    /// Handles requests of `method` with raw params and result.
    pub fn on_raw_request<F, Fut>(mut self, method: impl Into<String>, mut f: F) -> Self
    where
        F: FnMut(Option<RawJson>, Connection) -> Fut + Send + 'static,
        Fut: Future<Output = Result<RawJson, Error>> + Send + 'static,
    {
        self.requests
            .insert(method.into(), Box::new(move |p, cx| Box::pin(f(p, cx))));
        self
    }

    /// Handles notifications of `method` with raw params.
    pub fn on_raw_notification<F, Fut>(mut self, method: impl Into<String>, mut f: F) -> Self
    where
        F: FnMut(Option<RawJson>, Connection) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), Error>> + Send + 'static,
    {
        self.notifications
            .insert(method.into(), Box::new(move |p, cx| Box::pin(f(p, cx))));
        self
    }
}

impl Handler for Methods {
    type Lane = ();

    fn handle_request(
        &mut self,
        request: Request,
        responder: Responder,
        cx: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static> {
        let work = match self.requests.get_mut(request.method.as_str()) {
            Some(f) => Ok(f(request.params, cx.clone())),
            None => Err(Error::method_not_found(&request.method)),
        };
        let known = work.is_ok();
        let work = async move {
            match work {
                Ok(work) => responder.answer_raw(work.await),
                Err(e) => responder.answer_error(e),
            }
        };
        if known {
            Work::start(work, ())
        } else {
            // Answered in turn: the error does not overtake what arrived before the request.
            Work::in_turn(work, ())
        }
    }

    fn handle_notification(
        &mut self,
        notification: Notification,
        cx: &Connection,
    ) -> Work<impl Future<Output = ()> + Send + 'static> {
        let method = notification.method;
        let work = self
            .notifications
            .get_mut(method.as_str())
            .map(|f| f(notification.params, cx.clone()));
        let work = async move {
            match work {
                Some(work) => {
                    if let Err(e) = work.await {
                        tracing::warn!(%method, error = %e, "notification handler failed");
                    }
                }
                None => tracing::debug!(%method, "ignoring a notification nobody handles"),
            }
        };
        Work::in_turn(work, ())
    }
}
