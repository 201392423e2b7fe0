//! [`Requirements`]: every requirement of an environment, sorted and merged by path as
//! [`super::requirements`] gives them, held compactly for [`super::check`].
//!
//! At 100,000 paths ESO has 200,000 requirements (a data path and a metadata path per secret).
//! Here a requirement is a small entry: its path split at its last `/` into a folder and a name
//! held once each (the secrets of one folder share it, the folders of one application share the
//! names), and its folder rule and parameters held once per distinct value. A [`Requirement`]
//! is made again when it is read.

use std::cmp::Ordering;
use std::sync::Arc;

use indexmap::IndexSet;

use super::{Capabilities, Param, Requirement, Use};

/// One requirement: indexes into the tables of its [`Requirements`].
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Its path up to and with its last `/` (the whole path of a folder to list).
    folder: u32,
    /// Its path after the last `/`.
    name: u32,
    /// Its folder rule.
    rule: FolderRule,
    /// The parameters of ESO's write there (0: none).
    params: u32,
    capabilities: Capabilities,
    /// The uses, a bit per [`Use`] (`1 << use as u8`).
    uses: u8,
}

/// An entry's folder rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FolderRule {
    /// The first this many bytes of its folder and `*`: `secret/data/ask/app/*` for the folder
    /// `secret/data/ask/app/dev/`, as the rule every spec gives its secrets
    /// ([`super::required`]'s `rule_base`) is. Made again when read, not held.
    FolderStart(usize),
    /// The path itself, without a trailing `/` (a path in a folder the spec does not own, or
    /// that folder's listing): made again when read, not held.
    Exact,
    /// Any other rule: an index into the rules.
    Other(u32),
}

/// Requirements, one per API path, sorted by path: the capabilities and the uses of the needs
/// of one path united, the folder rule of the first, the parameters of the last that has some.
#[derive(Debug, Default)]
pub struct Requirements {
    entries: Vec<Entry>,
    folders: IndexSet<Box<str>>,
    names: IndexSet<Box<str>>,
    rules: IndexSet<Arc<str>>,
    /// Index 0 is no parameters.
    params: IndexSet<Vec<Param>>,
}

/// [`Requirements`] while its needs come in, in any order.
pub struct Builder {
    entries: Vec<Entry>,
    folders: IndexSet<Box<str>>,
    names: IndexSet<Box<str>>,
    rules: IndexSet<Arc<str>>,
    params: IndexSet<Vec<Param>>,
}

/// `item`'s index in `set`, added when it is not there yet.
fn id<T: std::hash::Hash + Eq>(set: &mut IndexSet<T>, item: T) -> u32 {
    u32::try_from(set.insert_full(item).0).expect("fewer than 2^32 distinct values")
}

impl Builder {
    /// No requirement yet.
    pub fn new() -> Builder {
        Builder {
            entries: Vec::new(),
            folders: IndexSet::new(),
            names: IndexSet::new(),
            rules: IndexSet::new(),
            params: IndexSet::from([Vec::new()]),
        }
    }

    /// One need (or requirement) of `r.path`; another of the same path is merged with it by
    /// [`Builder::finish`], in the order they were pushed.
    pub fn push(&mut self, r: Requirement) {
        let (folder, name) = match r.path.rfind('/') {
            Some(i) => r.path.split_at(i + 1),
            None => ("", r.path.as_str()),
        };
        let start = r
            .folder_rule
            .strip_suffix('*')
            .filter(|p| folder.starts_with(p))
            .map(str::len);
        let rule = match start {
            Some(len) => FolderRule::FolderStart(len),
            None if *r.folder_rule == *r.path.trim_end_matches('/') => FolderRule::Exact,
            None => FolderRule::Other(id(&mut self.rules, r.folder_rule)),
        };
        let entry = Entry {
            folder: id(&mut self.folders, folder.into()),
            name: id(&mut self.names, name.into()),
            rule,
            params: id(&mut self.params, r.params),
            capabilities: r.capabilities,
            uses: r.uses.iter().fold(0, |bits, u| bits | use_bit(*u)),
        };
        // A target's read and push of one data path come one after the other: merged at once,
        // as [`Builder::finish`] would merge them (an entry fewer to hold and sort per target).
        match self.entries.last_mut() {
            Some(last) if (last.folder, last.name) == (entry.folder, entry.name) => {
                merge(last, &entry)
            }
            _ => self.entries.push(entry),
        }
    }

    /// Room for `n` requirements at once (a bound the caller knows), so that the entries are
    /// not grown by doubling.
    pub fn reserve(&mut self, n: usize) {
        self.entries.reserve_exact(n);
    }

    /// Sorted by path, the needs of one path merged.
    pub fn finish(self) -> Requirements {
        let (folders, names) = (self.folders, self.names);
        let mut entries = self.entries;
        // Stable: the needs of one path stay in the order they came, so the first's folder rule
        // and the last's parameters are kept, as [`super::requirements`] keeps them.
        entries.sort_by(|a, b| order(&folders, &names, a, b));
        entries.dedup_by(|later, first| {
            if (later.folder, later.name) != (first.folder, first.name) {
                return false;
            }
            merge(first, later);
            true
        });
        entries.shrink_to_fit();
        Requirements {
            entries,
            folders,
            names,
            rules: self.rules,
            params: self.params,
        }
    }
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new()
    }
}

/// `later`, a need of `first`'s path that came after it, merged into it: the capabilities and
/// the uses united, `first`'s folder rule kept, `later`'s parameters when it has some.
fn merge(first: &mut Entry, later: &Entry) {
    first
        .capabilities
        .extend(later.capabilities.iter().copied());
    first.uses |= later.uses;
    if later.params != 0 {
        first.params = later.params;
    }
}

fn use_bit(u: Use) -> u8 {
    1 << (u as u8)
}

/// The order of two entries' paths (the interned folders are unique, so equal ids mean an equal
/// folder; different ids are compared as the whole paths' text).
fn order(
    folders: &IndexSet<Box<str>>,
    names: &IndexSet<Box<str>>,
    a: &Entry,
    b: &Entry,
) -> Ordering {
    if a.folder == b.folder {
        return names[a.name as usize].cmp(&names[b.name as usize]);
    }
    let text = |e: &Entry| {
        folders[e.folder as usize]
            .bytes()
            .chain(names[e.name as usize].bytes())
    };
    text(a).cmp(text(b))
}

impl From<Vec<Requirement>> for Requirements {
    fn from(all: Vec<Requirement>) -> Requirements {
        let mut b = Builder::new();
        for r in all {
            b.push(r);
        }
        b.finish()
    }
}

impl Requirements {
    /// The number of paths.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `i`th path.
    pub fn path(&self, i: usize) -> String {
        let e = &self.entries[i];
        let (folder, name) = (
            &self.folders[e.folder as usize],
            &self.names[e.name as usize],
        );
        let mut path = String::with_capacity(folder.len() + name.len());
        path.push_str(folder);
        path.push_str(name);
        path
    }

    /// The `i`th requirement, made again.
    pub fn get(&self, i: usize) -> Requirement {
        let e = &self.entries[i];
        Requirement {
            path: self.path(i),
            capabilities: e.capabilities,
            uses: [Use::Read, Use::Push, Use::List, Use::StaticSecret]
                .into_iter()
                .filter(|u| e.uses & use_bit(*u) != 0)
                .collect(),
            folder_rule: match e.rule {
                // The folder's first bytes were the rule's text: on a character boundary.
                FolderRule::FolderStart(len) => {
                    format!("{}*", &self.folders[e.folder as usize][..len]).into()
                }
                FolderRule::Exact => self.path(i).trim_end_matches('/').into(),
                FolderRule::Other(i) => Arc::clone(&self.rules[i as usize]),
            },
            params: self.params[e.params as usize].clone(),
        }
    }

    /// Every requirement in path order, each made when it is reached.
    pub fn iter(&self) -> impl Iterator<Item = Requirement> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Every path in order, each made when it is reached.
    pub fn paths(&self) -> impl Iterator<Item = String> + '_ {
        (0..self.len()).map(|i| self.path(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::Capability::{self, Create, List, Read, Update};

    fn need(path: &str, caps: &[Capability], why: Use, rule: &str, params: &[&str]) -> Requirement {
        Requirement {
            path: path.into(),
            capabilities: caps.iter().copied().collect(),
            uses: vec![why],
            folder_rule: rule.into(),
            params: params
                .iter()
                .map(|n| Param {
                    name: (*n).into(),
                    object: true,
                })
                .collect(),
        }
    }

    /// What the compact set gives back is what merging whole records by path gives (the
    /// capabilities and uses united, the first's folder rule, the last parameters that exist),
    /// in the same order, whatever order the needs came in.
    #[test]
    fn held_compactly_the_requirements_are_those_merged_by_path() {
        let needs = vec![
            need("s/data/b/X", &[Read], Use::Read, "s/data/b/*", &[]),
            need("s/data/a/Y", &[Read], Use::Read, "s/data/a/*", &[]),
            // Right after a need of its path: merged as it comes, as the sort would merge it.
            need(
                "s/data/a/Y",
                &[Create],
                Use::Push,
                "s/data/zzz/*",
                &["data"],
            ),
            need(
                "s/data/b/X",
                &[Create, Update, Read],
                Use::Push,
                "s/data/other/*",
                &["data"],
            ),
            need("s/metadata/b/", &[List], Use::List, "s/metadata/b/*", &[]),
            need("s/data/b/X", &[Read], Use::Read, "s/data/b/*", &[]),
            // A folder whose text sorts between `s/data/b/` and its names.
            need("s/data/b/X/Z", &[Read], Use::Read, "s/data/b/*", &[]),
            need("s/data/bX", &[Read], Use::Read, "s/data/*", &[]),
            need("top", &[Read], Use::Read, "*", &[]),
            // A rule that ends inside a folder's name, and one of characters of several bytes.
            need("s/data/bé/ü/X", &[Read], Use::Read, "s/data/bé/ü*", &[]),
            need("s/data/bé/ü/Y", &[Read], Use::Read, "s/data/b*", &[]),
            // Exact rules: the path itself, and a listed folder without its `/`.
            need(
                "s/data/shared/E",
                &[Read],
                Use::Read,
                "s/data/shared/E",
                &[],
            ),
            need(
                "s/metadata/shared/",
                &[List],
                Use::List,
                "s/metadata/shared",
                &[],
            ),
        ];
        // Merged as whole records: stable sort by path, then united.
        let mut want: Vec<Requirement> = Vec::new();
        let mut sorted = needs.clone();
        sorted.sort_by(|a, b| a.path.cmp(&b.path));
        for r in sorted {
            match want.last_mut() {
                Some(last) if last.path == r.path => {
                    last.capabilities.extend(r.capabilities.iter().copied());
                    for u in r.uses {
                        if !last.uses.contains(&u) {
                            last.uses.push(u);
                        }
                    }
                    last.uses.sort();
                    if !r.params.is_empty() {
                        last.params = r.params;
                    }
                }
                _ => want.push(r),
            }
        }
        let held = Requirements::from(needs);
        let got: Vec<Requirement> = held.iter().collect();
        assert_eq!(got, want);
        assert_eq!(held.len(), 10);
        assert_eq!(held.entries.len(), 10);
        assert_eq!(&*got[0].folder_rule, "s/data/a/*", "the first need's rule");
        assert_eq!(got[0].params.len(), 1);
        assert_eq!(&*got[1].folder_rule, "s/data/b/*", "the first need's rule");
        assert_eq!(got[1].params.len(), 1, "the last need with parameters");
        assert_eq!(held.folders.len(), 9);
        // Only the rules that are not the start of their folder and `*` (made again when read):
        // `zzz` and `other`. `s/data/b/*` for the folder `s/data/b/X/` is made again.
        assert_eq!(held.rules.len(), 2);
        let nested = got.iter().find(|r| r.path == "s/data/b/X/Z").unwrap();
        assert_eq!(&*nested.folder_rule, "s/data/b/*");
        assert_eq!(&*got.last().unwrap().folder_rule, "*");
    }
}
