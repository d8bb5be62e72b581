//! Prompts and resources being served, per upstream, each under a key that
//! one upstream at most holds: a prompt's exposed name, a resource's URI.
//! A change of an upstream's list goes through [`Catalog::reconcile`].

use crate::names::{NameTable, Origin};

/// One item being served.
#[derive(Debug)]
pub(crate) struct Entry<T> {
    pub(crate) key: String,
    pub(crate) definition: T,
}

/// What every upstream serves of one kind.
#[derive(Debug)]
pub(crate) struct Catalog<T> {
    keys: NameTable,
    served: Vec<Vec<Entry<T>>>,
}

impl<T: PartialEq> Catalog<T> {
    pub(crate) fn new(upstreams: usize) -> Catalog<T> {
        Catalog {
            keys: NameTable::default(),
            served: (0..upstreams).map(|_| Vec::new()).collect(),
        }
    }

    /// Room for one more upstream.
    pub(crate) fn grow(&mut self) {
        self.served.push(Vec::new());
    }

    /// Every key served, upstream by upstream.
    pub(crate) fn keys(&self) -> Vec<String> {
        self.served
            .iter()
            .flatten()
            .map(|e| e.key.clone())
            .collect()
    }

    /// The keys upstream `index` holds.
    pub(crate) fn keys_of(&self, index: usize) -> Vec<String> {
        self.served[index].iter().map(|e| e.key.clone()).collect()
    }

    /// Serves `wanted` for upstream `index` in place of what it served:
    /// unchanged items stay, changed and gone ones are `remove`d, new ones
    /// `add`ed. Returns the keys withheld because another upstream holds them.
    pub(crate) fn reconcile(
        &mut self,
        index: usize,
        wanted: Vec<(String, T)>,
        mut remove: impl FnMut(&str),
        mut add: impl FnMut(&str, &T),
    ) -> Vec<String> {
        let mut kept = Vec::new();
        for entry in std::mem::take(&mut self.served[index]) {
            if wanted
                .iter()
                .any(|(key, item)| *key == entry.key && *item == entry.definition)
            {
                kept.push(entry);
            } else {
                remove(&entry.key);
                self.keys.release(&entry.key);
            }
        }
        let mut withheld = Vec::new();
        for (key, definition) in wanted {
            if kept.iter().any(|e| e.key == key) {
                continue;
            }
            let origin = Origin {
                upstream: index,
                tool: key.clone(),
            };
            if self.keys.claim(key.clone(), origin).is_err() {
                withheld.push(key);
                continue;
            }
            add(&key, &definition);
            kept.push(Entry { key, definition });
        }
        self.served[index] = kept;
        withheld
    }

    /// Stops serving everything of upstream `index`.
    pub(crate) fn clear(&mut self, index: usize, mut remove: impl FnMut(&str)) {
        for entry in std::mem::take(&mut self.served[index]) {
            remove(&entry.key);
            self.keys.release(&entry.key);
        }
    }
}
