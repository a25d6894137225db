//! A chain's life, as [`ChainCore`](super::ChainCore) decides it: the signs of a component's
//! end, the editor leaving, the clean end and the urgent one, and what the loop is asked to do
//! for each ([`Action`]). Nothing here reads a clock or touches I/O: the loop says what
//! happened and when, and does what it is told.
//!
//! **The chain ends when:**
//! - the editor leaves (its connection ends): the requests it still has in flight get
//!   [`Timing::eof_grace`] to be answered, and those still unanswered then get an error saying
//!   the editor left. Then the components' inputs are closed one after another, in chain
//!   order: each component gets [`Timing::grace`] to pass on what it still had and close its
//!   output before the next one's input closes (so a `session/cancel` sent just before the
//!   editor left reaches the agent first). Then the components get [`Timing::grace`] to end,
//!   then [`Signal::Term`], then [`Timing::term_grace`], then [`Signal::Kill`]. An editor that
//!   stops reading ends the chain the same way, without the grace.
//! - a component ends: its end shows by two signs for a process (its output ends, it exits)
//!   and by one for a connection ([`Sign`]); after the first, the chain waits up to
//!   [`Timing::last_words`] for the other, so that what it wrote before it exited is still
//!   delivered and the error can say how it ended. Then the chain settles (see
//!   [`Settling`](super::Settling)): what the component sent before passes the proxies in front
//!   of it. Then every request the editor has in flight gets an error naming the component,
//!   nothing more of the chain reaches the editor, and every input closes at once:
//!   [`Signal::Term`] at once, [`Signal::Kill`] after [`Timing::urgent_term_grace`].
//! - a component refuses the proxy capability: the editor's `initialize` gets the refusal, and
//!   the chain ends as for a component's end;
//! - the loop stops it ([`ChainCore::stop`](super::ChainCore::stop): a signal, a failure of
//!   its own): as for a component's end, except that what the components still answer reaches
//!   the editor unless the loop calls it a failure.
//!
//! Once the chain is ending, a request from the editor is answered at once with an error
//! saying why it ended. The chain has finished once no component is alive, or the last grace
//! is over; requests still in flight then get that error too, so every request the editor
//! sent is answered exactly once.
//!
//! **Where the loops differ** (only where their I/O does): the conductor's components are
//! processes, in-process proxies whose task ends like a process, or servers over the network
//! (one sign); the test kit's are in-process connections (one sign), which no signal reaches —
//! they end when their input closes. The conductor also sends signals to process groups,
//! writes the trace, and plugs its MCP bridges and translator into the routing table (a
//! [`Diversion`](super::Diversion), whose connections end nothing); the kit records its
//! transcript and plugs in nothing.

use std::time::{Duration, Instant};

/// How long each step of a chain's end may take. The defaults are the conductor's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Timing {
    /// How long a component that showed one sign of its end has to show the other.
    pub last_words: Duration,
    /// At a clean end, how long each component gets to close its output once its input is
    /// closed, and how long all get to end before [`Signal::Term`].
    pub grace: Duration,
    /// At an urgent end, how long between [`Signal::Term`] and [`Signal::Kill`].
    pub urgent_term_grace: Duration,
    /// After the editor left, how long its requests in flight may still be answered.
    pub eof_grace: Duration,
    /// At a clean end, how long between [`Signal::Term`] and [`Signal::Kill`] (agents save
    /// their sessions on `SIGTERM`).
    pub term_grace: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            last_words: Duration::from_millis(200),
            grace: Duration::from_millis(400),
            urgent_term_grace: Duration::from_millis(250),
            eof_grace: Duration::from_secs(1),
            term_grace: Duration::from_secs(3),
        }
    }
}

impl Timing {
    /// These timings, with the editor's grace set.
    pub fn with_eof_grace(mut self, value: Duration) -> Timing {
        self.eof_grace = value;
        self
    }

    /// These timings, with the clean end's `SIGTERM`-to-`SIGKILL` grace set.
    pub fn with_term_grace(mut self, value: Duration) -> Timing {
        self.term_grace = value;
        self
    }
}

/// How a component's end shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sign {
    /// Its output ends and it exits (a process, or a task standing for one): both signs are
    /// waited for, up to [`Timing::last_words`].
    OutputAndExit,
    /// Its connection ends, the only sign: a server over the network (its URL, without
    /// credentials, names it), or an in-process connection.
    Connection {
        /// The server's URL.
        url: Option<String>,
    },
}

/// How a component process exited, as the loop describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exited {
    /// In words: `exited with status 3`, `was killed by signal 9 (SIGKILL)`.
    pub description: String,
    /// Its exit code, when it has one.
    pub code: Option<i32>,
    /// The exit status it leaves to the conductor: its code, or 128 + the signal.
    pub status: u8,
}

/// A signal for the components' processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Asks them to end (`SIGTERM`).
    Term,
    /// Ends them (`SIGKILL`).
    Kill,
}

/// What the loop is asked to do, in order ([`ChainCore::poll_action`](super::ChainCore::poll_action)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Close the input of the component at this position, after what is queued for it.
    CloseInput(usize),
    /// Send this signal to these components (each still alive).
    Signal(Signal, Vec<usize>),
    /// The component at `position` failed (`why` names it): the editor gets the error once
    /// the chain has settled; the loop may add to its data
    /// ([`ChainCore::annotate_failure`](super::ChainCore::annotate_failure)) until then.
    Failing {
        /// Its position.
        position: usize,
        /// Which component, and how it ended.
        why: String,
    },
    /// The chain began to end ([`ChainCore::end`](super::ChainCore::end) says how).
    Ending,
}

/// Why a chain ended. The first reason wins.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum End {
    /// The editor left (its connection ended, or it stopped reading).
    Clean,
    /// A component ended.
    Component {
        /// Its position.
        position: usize,
        /// Which component, and how it ended.
        why: String,
        /// The exit status it leaves (1 when it only closed its output).
        status: u8,
    },
    /// A component refused the proxy capability.
    Refused {
        /// Its position.
        position: usize,
        /// The refusal.
        message: String,
    },
    /// The loop stopped the chain ([`ChainCore::stop`](super::ChainCore::stop)).
    Stopped {
        /// Why.
        why: String,
        /// Whether the chain counts as failed (then nothing more of its components reaches
        /// the editor).
        failure: bool,
    },
}

impl End {
    /// Whether the chain failed (a component, a refusal, the loop's own failure), as opposed
    /// to being left by the editor or stopped.
    pub fn is_failure(&self) -> bool {
        match self {
            End::Clean => false,
            End::Component { .. } | End::Refused { .. } => true,
            End::Stopped { failure, .. } => *failure,
        }
    }

    /// In words, for the errors of requests the chain can no longer answer.
    pub fn describe(&self) -> String {
        match self {
            End::Clean => "the editor's connection to the chain ended".to_owned(),
            End::Component { why, .. } => why.clone(),
            End::Refused { message, .. } => message.clone(),
            End::Stopped { why, .. } => why.clone(),
        }
    }
}

/// A component, as the chain's life sees it.
#[derive(Debug)]
pub(super) struct Member {
    pub(super) sign: Sign,
    /// Its output ended (or its input broke).
    pub(super) eof: bool,
    pub(super) exit: Option<Exited>,
    /// When to give up waiting for the other sign of its end.
    pub(super) deadline: Option<Instant>,
    /// Why its connection ended, when it failed.
    pub(super) lost: Option<String>,
}

impl Member {
    pub(super) fn new(sign: Sign) -> Member {
        Member {
            sign,
            eof: false,
            exit: None,
            deadline: None,
            lost: None,
        }
    }

    fn connection(&self) -> bool {
        matches!(self.sign, Sign::Connection { .. })
    }

    pub(super) fn alive(&self) -> bool {
        self.exit.is_none() && !(self.connection() && self.eof)
    }

    /// Both signs of its end are in (a connection has only the one).
    pub(super) fn ended(&self) -> bool {
        self.eof && (self.exit.is_some() || self.connection())
    }

    /// How it ended, in words.
    pub(super) fn how(&self) -> String {
        match (&self.sign, &self.exit) {
            (Sign::Connection { url: Some(url) }, _) => match &self.lost {
                Some(error) => format!("at {url} lost its connection: {error}"),
                None => format!("at {url} closed its connection"),
            },
            (Sign::Connection { url: None }, _) => match &self.lost {
                Some(error) => format!("lost its connection: {error}"),
                None => "closed its connection".to_owned(),
            },
            (Sign::OutputAndExit, Some(exit)) => exit.description.clone(),
            (Sign::OutputAndExit, None) => "closed its stdout".to_owned(),
        }
    }
}

/// The chain is ending: how, and what is left to do when.
#[derive(Debug)]
pub(super) struct Ending {
    pub(super) end: End,
    /// At a clean end, the component whose input closed last, while it passes on what it
    /// still had, and until when it may: the next one's input closes when it closes its
    /// output (or exits), or then.
    pub(super) closing: Option<(usize, Instant)>,
    pub(super) term_at: Option<Instant>,
    pub(super) kill_at: Option<Instant>,
    pub(super) give_up_at: Instant,
}

impl Ending {
    /// The next instant something of the end is due.
    pub(super) fn due(&self) -> Option<Instant> {
        [
            self.closing.map(|(_, until)| until),
            self.term_at,
            self.kill_at,
            Some(self.give_up_at),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}
