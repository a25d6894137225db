//! Positions in a session's history, and the cursors a client resumes from.
//!
//! Every entry of a session's record has a sequence number. A client that asks for positions
//! (`"clientCapabilities": {"_meta": {"sacp": {"positions": true}}}` in its `initialize`) gets
//! each notification of a session's — replayed or live — with its position in its `_meta`:
//! `"_meta": {"sacp": {"position": "LIFE.SEQ"}}`, every other byte as the agent sent it. LIFE
//! names this life of the session's record: a session restored from the journal, here or by
//! another conductor, starts another.
//!
//! A client that lost its connection resumes from where it stopped with the cursor
//! `{"type": "_sacp/after", "position": P}` (P the last position it got): every later entry
//! once, in order, and none before. It goes in ACP v2's `session/resume` as `replayFrom` (where
//! `{"type": "start"}` replays all, and no cursor none), and in v1's `session/load` as
//! `"_meta": {"sacp": {"replayFrom": …}}` (without it, a load replays all). A cursor of
//! another type, a malformed one, one of another life of the session or past its end is
//! refused with `-32602`, as the v2 schema asks: nothing is replayed in its place. Where the
//! record no longer holds what follows P (it is bounded), the replay starts at its oldest
//! entry, after `_sacp/history_left_out`.

use sacp::jsonrpc::{Error, RawJson};
use serde_json::Value;

/// The type of this layer's cursor.
pub(crate) const AFTER: &str = "_sacp/after";

/// Where a client's replay starts, as its cursor says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cursor {
    /// `{"type": "start"}`: the whole history held.
    Start,
    /// After the entry `seq` of the record's life `life`.
    After { life: u64, seq: u64 },
}

/// The text of the position of entry `seq` of life `life`.
pub(super) fn position(life: u64, seq: u64) -> String {
    format!("{life:x}.{seq}")
}

/// The life and the sequence number a position's text names, if it is one [`position`] made.
pub(super) fn parse(position: &str) -> Option<(u64, u64)> {
    let (life, seq) = position.split_once('.')?;
    Some((u64::from_str_radix(life, 16).ok()?, seq.parse().ok()?))
}

/// `params` (a notification's) with the position of entry `seq` of life `life` in its `_meta`:
/// `_meta.sacp.position` set, every other byte as it was. `params` as it is where it is not an
/// object.
pub(super) fn positioned(params: &RawJson, life: u64, seq: u64) -> RawJson {
    RawJson::to_raw(&position(life, seq))
        .ok()
        .and_then(|value| params.with_member_at(&["_meta", "sacp", "position"], &value))
        .unwrap_or_else(|| params.clone())
}

/// The cursor a `session/resume` (`replayFrom`) or a `session/load`
/// (`_meta.sacp.replayFrom`) gives, if any; `-32602` for one this layer does not take.
pub(super) fn cursor_of(method: &str, params: Option<&RawJson>) -> Result<Option<Cursor>, Error> {
    let Some(params) = params else {
        return Ok(None);
    };
    let given = if method == "session/resume" {
        params.member("replayFrom")
    } else {
        params.member_at(&["_meta", "sacp", "replayFrom"])
    };
    let Some(given) = given else {
        return Ok(None);
    };
    let value: Value = given.parse()?;
    let invalid = |why: &str| {
        Error::invalid_params(format!("replayFrom {value}: {why}"))
            .with_data(serde_json::json!({"replayFrom": value}))
    };
    if value.is_null() {
        return Ok(None);
    }
    match value.get("type").and_then(Value::as_str) {
        Some("start") => Ok(Some(Cursor::Start)),
        Some(AFTER) => {
            let parsed = value
                .get("position")
                .and_then(Value::as_str)
                .and_then(parse);
            match parsed {
                Some((life, seq)) => Ok(Some(Cursor::After { life, seq })),
                None => Err(invalid(
                    "its position is not one this conductor gave (LIFE.SEQ)",
                )),
            }
        }
        Some(other) => Err(invalid(&format!(
            "a cursor of type {other:?} is not one this conductor takes: \"start\" or \"{AFTER}\""
        ))),
        None => Err(invalid("a cursor is an object with a \"type\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> RawJson {
        RawJson::from_string(text).unwrap()
    }

    #[test]
    fn a_position_goes_into_meta_and_nothing_else_changes() {
        let plain = raw(r#"{"sessionId":"s","update":{"n":1.50}}"#);
        assert_eq!(
            positioned(&plain, 0xab, 7).as_str(),
            r#"{"sessionId":"s","update":{"n":1.50},"_meta":{"sacp":{"position":"ab.7"}}}"#
        );
        let meta = raw(r#"{"_meta":{"x":[1],"sacp":{"y":2,"position":"1.1"}},"sessionId":"s"}"#);
        assert_eq!(
            positioned(&meta, 1, 2).as_str(),
            r#"{"_meta":{"x":[1],"sacp":{"y":2,"position":"1.2"}},"sessionId":"s"}"#
        );
        let null = raw(r#"{"_meta":null}"#);
        assert_eq!(
            positioned(&null, 1, 0).as_str(),
            r#"{"_meta":{"sacp":{"position":"1.0"}}}"#
        );
        assert_eq!(positioned(&raw("[1]"), 1, 0).as_str(), "[1]");
    }

    #[test]
    fn cursors_are_read_where_each_method_has_them_and_the_unknown_refused() {
        let resume = |cursor: &str| {
            cursor_of(
                "session/resume",
                Some(&raw(&format!(
                    r#"{{"sessionId":"s","replayFrom":{cursor}}}"#
                ))),
            )
        };
        assert_eq!(resume(r#"{"type":"start"}"#), Ok(Some(Cursor::Start)));
        assert_eq!(resume("null"), Ok(None));
        assert_eq!(
            resume(r#"{"type":"_sacp/after","position":"ff.12"}"#),
            Ok(Some(Cursor::After { life: 255, seq: 12 }))
        );
        for bad in [
            r#"{"type":"_other"}"#,
            r#"{"type":"future"}"#,
            r#"{"type":"_sacp/after","position":"12"}"#,
            r#"{"type":"_sacp/after"}"#,
            r#"{"position":"1.2"}"#,
        ] {
            assert_eq!(resume(bad).unwrap_err().code, -32602, "{bad}");
        }
        let load = raw(
            r#"{"sessionId":"s","_meta":{"sacp":{"replayFrom":{"type":"_sacp/after","position":"1.2"}}}}"#,
        );
        assert_eq!(
            cursor_of("session/load", Some(&load)),
            Ok(Some(Cursor::After { life: 1, seq: 2 }))
        );
        assert_eq!(
            cursor_of("session/load", Some(&raw(r#"{"sessionId":"s"}"#))),
            Ok(None)
        );
    }
}
