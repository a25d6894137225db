//! The session table: every session the editor side knows, by the id the editor knows it by,
//! with the chain it lives in, the chain's own id of it, the session that announced it (a
//! subagent's parent) and what the table's user keeps with it; and, the other way, each
//! chain's own ids to the editor's.
//!
//! One table, two users: the session layer of `conductor agent --listen`, whose chains are
//! chains and which keeps each session's record and clients here, and the router of
//! `conductor route`, whose chains are workspaces' backends. How an editor's id is made is
//! each user's (the layer's `own@tag`, the router's `own@workspace`); what the table keeps is
//! that both directions change together, under its user's one lock, so that no id names two
//! sessions and no session is known one way and not the other.

use std::sync::Arc;

// Looked up for every message a chain sends: a fast hash (seeded per process).
use foldhash::HashMap;

/// One session: where it lives and what its user keeps of it.
#[derive(Debug)]
pub(crate) struct Entry<C, V> {
    /// Its chain.
    pub(crate) chain: Arc<C>,
    /// The chain's own id of it.
    pub(crate) own: String,
    /// The session that announced it as a subagent, if one did (by the editor's id).
    pub(crate) parent: Option<String>,
    /// What the table's user keeps with it.
    pub(crate) value: V,
}

/// Every session, both ways: see the module docs.
#[derive(Debug)]
pub(crate) struct Table<C, V> {
    /// By the editor's id.
    sessions: HashMap<String, Entry<C, V>>,
    /// Each chain's own ids → the editor's, by the chain's address: an address is its chain's
    /// as long as one of its sessions is here (the entry holds the chain).
    owns: HashMap<usize, HashMap<String, String>>,
}

impl<C, V> Default for Table<C, V> {
    fn default() -> Self {
        Table {
            sessions: HashMap::default(),
            owns: HashMap::default(),
        }
    }
}

fn key<C>(chain: &Arc<C>) -> usize {
    Arc::as_ptr(chain).cast::<()>() as usize
}

impl<C, V> Table<C, V> {
    /// The session the editor calls `id`.
    pub(crate) fn get(&self, id: &str) -> Option<&Entry<C, V>> {
        self.sessions.get(id)
    }

    /// The editor's id of `chain`'s session `own`.
    pub(crate) fn id_of(&self, chain: &Arc<C>, own: &str) -> Option<&str> {
        self.owns.get(&key(chain))?.get(own).map(String::as_str)
    }

    /// `chain`'s session `own`.
    pub(crate) fn own(&self, chain: &Arc<C>, own: &str) -> Option<&Entry<C, V>> {
        self.sessions.get(self.id_of(chain, own)?)
    }

    /// Enters a session: `chain`'s `own`, which the editor calls `id`. A session that had
    /// either name before is forgotten (an editor's id taken up again; a chain's own id that
    /// now names a new session); those are returned.
    pub(crate) fn insert(
        &mut self,
        id: String,
        chain: &Arc<C>,
        own: String,
        parent: Option<String>,
        value: V,
    ) -> Vec<Entry<C, V>> {
        let mut displaced: Vec<Entry<C, V>> = self.remove(&id).into_iter().collect();
        let old = self
            .owns
            .get(&key(chain))
            .and_then(|owns| owns.get(&own))
            .cloned();
        if let Some(old) = old {
            displaced.extend(self.remove(&old));
        }
        self.owns
            .entry(key(chain))
            .or_default()
            .insert(own.clone(), id.clone());
        self.sessions.insert(
            id,
            Entry {
                chain: chain.clone(),
                own,
                parent,
                value,
            },
        );
        displaced
    }

    /// Forgets the session `id`.
    pub(crate) fn remove(&mut self, id: &str) -> Option<Entry<C, V>> {
        self.remove_if(id, |_| true)
    }

    /// Forgets the session `id` if `it` says so of it.
    pub(crate) fn remove_if(
        &mut self,
        id: &str,
        it: impl FnOnce(&Entry<C, V>) -> bool,
    ) -> Option<Entry<C, V>> {
        if !it(self.sessions.get(id)?) {
            return None;
        }
        let entry = self.sessions.remove(id)?;
        let chain = key(&entry.chain);
        if let Some(owns) = self.owns.get_mut(&chain) {
            if owns.get(&entry.own).is_some_and(|named| named == id) {
                owns.remove(&entry.own);
            }
            if owns.is_empty() {
                self.owns.remove(&chain);
            }
        }
        Some(entry)
    }

    /// Forgets the session `id` and its subagents (theirs too, at any depth).
    pub(crate) fn close(&mut self, id: &str) -> Vec<Entry<C, V>> {
        let mut closing = vec![id.to_owned()];
        let mut i = 0;
        while i < closing.len() {
            let parent = &closing[i];
            let children: Vec<String> = self
                .sessions
                .iter()
                .filter(|(_, e)| e.parent.as_deref() == Some(parent.as_str()))
                .map(|(child, _)| child.clone())
                .collect();
            closing.extend(children);
            i += 1;
        }
        closing.iter().filter_map(|id| self.remove(id)).collect()
    }

    /// `chain`'s sessions.
    pub(crate) fn of_chain(&self, chain: &Arc<C>) -> impl Iterator<Item = &Entry<C, V>> {
        self.owns
            .get(&key(chain))
            .into_iter()
            .flat_map(|owns| owns.values())
            .filter_map(|id| self.sessions.get(id))
    }

    /// How many sessions `chain` has.
    pub(crate) fn count(&self, chain: &Arc<C>) -> usize {
        self.owns.get(&key(chain)).map_or(0, HashMap::len)
    }

    /// Forgets `chain`'s sessions (it ended).
    pub(crate) fn forget_chain(&mut self, chain: &Arc<C>) -> Vec<Entry<C, V>> {
        let ids: Vec<String> = self
            .owns
            .get(&key(chain))
            .map(|owns| owns.values().cloned().collect())
            .unwrap_or_default();
        ids.iter().filter_map(|id| self.remove(id)).collect()
    }

    /// The chains with a session, each once.
    pub(crate) fn chains(&self) -> Vec<Arc<C>> {
        self.owns
            .values()
            .filter_map(|owns| owns.values().next())
            .filter_map(|id| self.sessions.get(id))
            .map(|e| e.chain.clone())
            .collect()
    }

    /// How many sessions there are.
    pub(crate) fn len(&self) -> usize {
        self.sessions.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Chain(&'static str);

    fn ids<C>(entries: &[Entry<C, u32>]) -> Vec<u32> {
        let mut v: Vec<u32> = entries.iter().map(|e| e.value).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn both_directions_change_together() {
        let a = Arc::new(Chain("a"));
        let b = Arc::new(Chain("b"));
        let mut table: Table<Chain, u32> = Table::default();
        // Two chains that number their sessions alike.
        assert!(
            table
                .insert("s1@a".into(), &a, "s1".into(), None, 1)
                .is_empty()
        );
        assert!(
            table
                .insert("s1@b".into(), &b, "s1".into(), None, 2)
                .is_empty()
        );
        assert_eq!(table.own(&a, "s1").unwrap().value, 1);
        assert_eq!(table.own(&b, "s1").unwrap().value, 2);
        assert_eq!(table.get("s1@b").unwrap().chain.0, "b");
        assert_eq!(table.id_of(&b, "s1"), Some("s1@b"));
        assert_eq!(table.count(&a), 1);
        assert_eq!(table.chains().len(), 2);

        // An editor's id taken up again, now in chain b: the old session is forgotten both
        // ways, and returned.
        let displaced = table.insert("s1@a".into(), &b, "s9".into(), None, 3);
        assert_eq!(ids(&displaced), [1]);
        assert!(table.own(&a, "s1").is_none());
        assert_eq!(table.count(&a), 0);
        assert_eq!(table.chains().len(), 1);
        assert_eq!(table.own(&b, "s9").unwrap().value, 3);

        // A chain's own id that names a new session: the old editor id goes.
        let displaced = table.insert("s1@b~2".into(), &b, "s1".into(), None, 4);
        assert_eq!(ids(&displaced), [2]);
        assert!(table.get("s1@b").is_none());
        assert_eq!(table.len(), 2);

        // A removal that is not of the session asked about changes nothing.
        assert!(table.remove_if("s1@b~2", |e| e.value == 99).is_none());
        assert_eq!(table.remove("s1@b~2").unwrap().value, 4);
        assert!(table.own(&b, "s1").is_none());
        assert_eq!(ids(&table.forget_chain(&b)), [3]);
        assert_eq!(table.len(), 0);
        assert!(table.chains().is_empty());
    }

    #[test]
    fn closing_a_session_closes_its_subagents_at_any_depth() {
        let a = Arc::new(Chain("a"));
        let mut table: Table<Chain, u32> = Table::default();
        table.insert("p".into(), &a, "p".into(), None, 1);
        table.insert("c".into(), &a, "c".into(), Some("p".into()), 2);
        table.insert("g".into(), &a, "g".into(), Some("c".into()), 3);
        table.insert("other".into(), &a, "o".into(), None, 4);
        assert_eq!(ids(&table.close("p")), [1, 2, 3]);
        assert_eq!(table.of_chain(&a).map(|e| e.value).collect::<Vec<_>>(), [4]);
        assert!(table.close("nothing").is_empty());
    }
}
