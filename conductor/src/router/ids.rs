//! The session ids the editor sees.
//!
//! Backends number their sessions as they like, and commonly alike (`s1`, `s2`, … in every
//! workspace; subagents `c1`, `c2`, …), so the router gives each session an id of its own
//! toward the editor. The rule is deterministic and reversible:
//!
//! - the editor's id of a backend's session `own` in workspace `app` is **`own@app`** — the
//!   same in every router process, so an id the editor kept across a restart still names its
//!   session;
//! - reading it back needs only the workspace, which a `session/load` or `session/resume`
//!   names by its `cwd`: the id minus its `@app` suffix (or `@app~N`, below) is the backend's
//!   own; an id without that suffix is taken as the backend's own as it is (a session from
//!   before the router, say);
//! - an id is never handed out twice by one router: when `own@app` was given to a session
//!   already (its backend crashed, and the next one numbers from 1 again), the new session is
//!   `own@app~2` (then `~3`, …), which reads back the same way.
//!
//! The workspace's tag is its name with `@` and `~` replaced (`_`), so the suffix is always
//! the text after the last `@`.

use std::collections::HashSet;

/// A workspace's name as it appears in session ids.
pub(super) fn tag(workspace: &str) -> String {
    workspace.replace(['@', '~'], "_")
}

/// The backend's own id of the editor's `id`, in the workspace tagged `tag`.
pub(super) fn own_of<'a>(id: &'a str, tag: &str) -> &'a str {
    let Some((own, suffix)) = id.rsplit_once('@') else {
        return id;
    };
    let ours = match suffix.split_once('~') {
        Some((t, n)) => t == tag && n.parse::<u64>().is_ok_and(|n| n >= 2),
        None => suffix == tag,
    };
    if ours { own } else { id }
}

/// The ids one router has given the editor.
#[derive(Debug, Default)]
pub(super) struct Given(HashSet<String>);

impl Given {
    /// A new id for the backend's session `own` in workspace `tag`: `own@tag`, or, when this
    /// router gave that out already, the first of `own@tag~2`, `own@tag~3`, … it did not.
    pub(super) fn name(&mut self, own: &str, tag: &str) -> String {
        let mut id = format!("{own}@{tag}");
        let mut n = 2;
        while self.0.contains(&id) {
            id = format!("{own}@{tag}~{n}");
            n += 1;
        }
        self.0.insert(id.clone());
        id
    }

    /// Notes an id the editor holds (one it loads or resumes), so that no other session gets
    /// it.
    pub(super) fn keep(&mut self, id: &str) {
        self.0.insert(id.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_back_to_the_backends_own() {
        let mut given = Given::default();
        let first = given.name("s1", "app");
        assert_eq!(first, "s1@app");
        assert_eq!(own_of(&first, "app"), "s1");
        // The next backend of the workspace numbers from 1 again: a new id, read back alike.
        let again = given.name("s1", "app");
        assert_eq!(again, "s1@app~2");
        assert_eq!(own_of(&again, "app"), "s1");
        assert_eq!(given.name("s1", "app"), "s1@app~3");
        // An id that is a backend's own as it is, or of another workspace, stays whole.
        assert_eq!(own_of("s1", "app"), "s1");
        assert_eq!(own_of("s1@other", "app"), "s1@other");
        assert_eq!(own_of("mail@host@app", "app"), "mail@host");
        assert_eq!(own_of("s1@app~x", "app"), "s1@app~x");
        // The same workspace and id give the same editor id in another router.
        assert_eq!(Given::default().name("s1", "app"), "s1@app");
        // An id the editor holds is never handed to another session.
        let mut given = Given::default();
        given.keep("s1@app");
        assert_eq!(given.name("s1", "app"), "s1@app~2");
        assert_eq!(tag("we@ird~name"), "we_ird_name");
    }
}
