//! The answers: a response routed back to whoever asked (by the pending entry alone), and
//! `initialize` on its way back — the proxy capability's handshake (spec §3), the dialect
//! each proxy turns out to speak, and the editor's `initialize` sent again when a component
//! needs another offer.

use super::*;

impl RoutingTable {
    /// The editor's `initialize`, if it still waits for the first component's answer.
    pub(super) fn take_editor_initialize(&mut self) -> Option<Pending> {
        let conn = self.conn_of(1);
        let id = self.conns[conn]
            .pending
            .iter()
            .find(|(_, p)| p.origin == EDITOR && p.initialize.is_some())
            .map(|(&id, _)| id)?;
        self.take_pending(conn, &Id::Number(id))
    }

    pub(super) fn take_pending(&mut self, conn: Conn, id: &Id) -> Option<Pending> {
        let Id::Number(n) = id else { return None };
        let pending = self.remove_pending(conn, *n)?;
        self.conns[pending.origin]
            .in_flight
            .remove(&pending.origin_id);
        Some(pending)
    }

    pub(super) fn response(
        &mut self,
        conn: Conn,
        response: Response,
        out: &mut Vec<Delivery>,
    ) -> Option<Fatal> {
        let key = match response.id {
            Id::Number(n) => Some((conn, n)),
            _ => None,
        };
        let Some(pending) = self.take_pending(conn, &response.id) else {
            tracing::warn!(peer = %self.peer(conn), id = %response.id, "dropped a response to no request of ours");
            return None;
        };
        let mut body = response.body;
        let (asked, answered) = (self.diverted(pending.origin), self.diverted(conn));
        if (asked.is_some() || answered.is_some())
            && let ResponseBody::Result(result) = &body
            && let Some(diversion) = &mut self.diversion
        {
            diversion.answered(&pending.method, asked, answered, result);
        }
        if let Some(init) = &pending.initialize {
            let position = init.position;
            match &body {
                // No version fits: not a refusal of the capability. It passes up as it came
                // (the editor may try another), and the chain goes on.
                ResponseBody::Error(error) if crate::protocol::version::is_unsupported(error) => {}
                // A component running as a proxy already: the error answers this request
                // (bad params, say), and it passes up; the chain and its sessions go on.
                ResponseBody::Error(_) if self.accepted.get(position).copied().unwrap_or(false) => {
                }
                ResponseBody::Error(error) if init.offered => {
                    let error = error.parse::<Error>().unwrap_or_else(|_| {
                        Error::internal_error(format!("a malformed error: {}", error.as_str()))
                    });
                    return match self.after_refusal(init, &error) {
                        Next::Offer(dialect) => {
                            self.resend_initialize(conn, pending, dialect, out);
                            None
                        }
                        Next::Refuse => {
                            let refusal = self
                                .refusal(position)
                                .with_data(format!("it answered: {}", error.message));
                            self.end_with(refusal, pending, out)
                        }
                        Next::Contradiction(error) => self.end_with(error, pending, out),
                    };
                }
                ResponseBody::Error(_) => {}
                ResponseBody::Result(result) => {
                    match self.initialized(init, pending.origin, pending.requester, result) {
                        Ok(answer) => body = ResponseBody::Result(answer),
                        Err(error) => return self.end_with(error, pending, out),
                    }
                }
            }
        }
        out.push(Delivery {
            conn: pending.origin,
            message: Message::Response(Response {
                id: pending.origin_id,
                body,
            }),
            hop: Hop {
                from: pending.responder,
                to: pending.requester,
                dir: pending.dir,
                answers: Some(pending.method),
                key,
            },
        });
        None
    }

    /// The component at `init`'s position answered `initialize` (asked by `origin` for
    /// `requester`) with `result`: whether it took the proxy capability offered, noted; the
    /// answer to pass up, or the error the chain ends with (a refusal, or a dialect that
    /// contradicts the declared one).
    fn initialized(
        &mut self,
        init: &Init,
        origin: Conn,
        requester: Node,
        result: &RawJson,
    ) -> Result<RawJson, Error> {
        let position = init.position;
        self.note_agent_initialize(position, result);
        self.note_answer_content(position, result);
        if origin == EDITOR {
            self.client_version = crate::protocol::version::of(Some(result)).ok();
        }
        // Ours accepts with the marker; the other dialects' proxies answer their own init
        // method with their successor's result.
        let accepted = self.dialect(position) != Dialect::Sacp || handshake::accepted(result);
        if let Some(declared) = init.diagnosing {
            return Err(match accepted {
                true => self.contradiction(position, declared, Dialect::Sacp),
                false => self.refusal(position),
            });
        }
        if init.offered && !accepted {
            return Err(self.refusal(position));
        }
        if init.offered {
            if self.accepted.len() <= position {
                self.accepted.resize(position + 1, false);
            }
            self.accepted[position] = true;
            if self.dialect(position) != Dialect::Sacp {
                tracing::info!(
                    "component {position} ({:?}) speaks the {} proxy dialect",
                    self.name(position),
                    self.dialect(position)
                );
            }
        }
        Ok(self.initialize_result(result, requester))
    }

    /// What to do after `error` answered the offer in `init`: offer the dialect the refusal
    /// asks for, unless it was offered already; for a declared dialect, end with an error
    /// naming both when the component speaks another (to find out which, when the refusal
    /// names none, ours is offered once more).
    pub(super) fn after_refusal(&self, init: &Init, error: &Error) -> Next {
        let asked = Dialect::asked_for(error);
        let (dialect, declared) = self.dialects[init.position];
        if let Some(declared) = init.diagnosing {
            return match asked {
                Some(asked) => {
                    Next::Contradiction(self.contradiction(init.position, declared, asked))
                }
                None => Next::Refuse,
            };
        }
        match asked {
            Some(asked) if declared && asked != dialect => {
                Next::Contradiction(self.contradiction(init.position, dialect, asked))
            }
            Some(asked) if !declared && !init.tried.contains(&asked) => Next::Offer(asked),
            None if declared && dialect != Dialect::Sacp => Next::Offer(Dialect::Sacp),
            _ => Next::Refuse,
        }
    }

    /// The error for a component declared to speak `declared` that speaks `speaks`.
    pub(super) fn contradiction(
        &self,
        position: usize,
        declared: Dialect,
        speaks: Dialect,
    ) -> Error {
        Error::new(
            code::INTERNAL_ERROR,
            format!(
                "component {position} ({:?}) was declared to speak the {declared} proxy dialect \
                 (`{}`), but it refused that and speaks the {speaks} dialect (`{}`)",
                self.name(position),
                declared.init_method(),
                speaks.init_method()
            ),
        )
    }

    /// Offers the proxy capability again, under `dialect`'s method, on the same connection:
    /// the request keeps its origin and gets a new id.
    pub(super) fn resend_initialize(
        &mut self,
        conn: Conn,
        mut pending: Pending,
        dialect: Dialect,
        out: &mut Vec<Delivery>,
    ) {
        let Some(init) = pending.initialize.as_mut() else {
            return;
        };
        let position = init.position;
        tracing::debug!(
            "component {position} ({:?}) asks for the {dialect} proxy dialect: offering it",
            self.name(position)
        );
        init.tried.push(dialect);
        let (current, declared) = self.dialects[position];
        if declared {
            // Finding out what a component speaks that refused its declared dialect.
            init.diagnosing = Some(current);
        }
        self.dialects[position].0 = dialect;
        let params = match dialect {
            // Ours offers in the params; they were an object when first offered.
            Dialect::Sacp => handshake::offer(init.params.as_ref(), true).ok(),
            _ => init.params.clone(),
        };
        let hop = Hop {
            from: pending.requester,
            to: pending.responder,
            dir: pending.dir.reverse(),
            answers: None,
            key: None,
        };
        let ids = &mut self.conns[conn];
        ids.last += 1;
        let out_id = ids.last;
        let hop = Hop {
            key: Some((conn, out_id)),
            ..hop
        };
        self.conns[pending.origin]
            .in_flight
            .insert(pending.origin_id.clone(), (conn, out_id));
        self.insert_pending(conn, out_id, pending);
        out.push(Delivery {
            conn,
            message: Message::Request(Request {
                id: Id::Number(out_id),
                method: dialect.init_method().to_owned(),
                params,
            }),
            hop,
        });
    }

    /// Ends the chain with `error`: the answer to the `initialize` that `pending` was, and to
    /// the editor's own if it still waits on the first hop.
    pub(super) fn end_with(
        &mut self,
        error: Error,
        pending: Pending,
        out: &mut Vec<Delivery>,
    ) -> Option<Fatal> {
        tracing::error!("{}", error.message);
        let position = pending.initialize.as_ref().map_or(0, |i| i.position);
        if let Some(editors) = self.take_editor_initialize() {
            self.answer(EDITOR, editors.origin_id, &error, out);
        }
        self.answer(pending.origin, pending.origin_id, &error, out);
        self.refused = Some(error);
        Some(Fatal::Refused(position))
    }

    /// An `initialize` result as its requester gets it: the `_meta.proxy` a component answered
    /// is hop-local and removed; the client of a conductor in proxy mode gets the conductor's
    /// own acceptance.
    pub(super) fn initialize_result(&self, result: &RawJson, requester: Node) -> RawJson {
        let rewritten = handshake::withdraw(result).and_then(|result| match requester {
            // The outer conductor of another dialect takes the result as it is.
            Node::Client if self.proxy_mode && self.dialect(self.n() + 1) != Dialect::Sacp => {
                Ok(result)
            }
            Node::Client if self.proxy_mode => handshake::mark_accepted(result),
            // The editor hears of MCP over ACP only from an agent that speaks it itself.
            Node::Client => {
                mcp_routes::with_transport_as(result, self.agent_mcp.is_some_and(|a| a.native))
            }
            // A proxy's successor speaks MCP over ACP: the conductor bridges for the agent.
            Node::Component(_) => mcp_routes::with_transport_as(result, true),
            _ => Ok(result),
        });
        rewritten.unwrap_or_else(|error| {
            tracing::warn!(%error, "passing on an `initialize` result that is not an object");
            result.clone()
        })
    }

    /// The conductor answers a request itself (with an error).
    pub(super) fn answer(&mut self, conn: Conn, id: Id, error: &Error, out: &mut Vec<Delivery>) {
        let to = if conn == EDITOR {
            Node::Client
        } else {
            Node::Component(conn)
        };
        out.push(Delivery {
            conn,
            message: Message::Response(Response::error(id, error)),
            hop: Hop {
                from: Node::Conductor,
                to,
                dir: if conn == EDITOR { Dir::Up } else { Dir::Down },
                answers: None,
                key: None,
            },
        });
    }
}
