//! Targets found by the names the cluster's objects give them, through maps built once per run:
//! a scan of every target per key is quadratic at platform scale (thousands of applications,
//! six keys each).

use std::cmp::Ordering;

use super::Target;

/// The targets of an environment, by path and by mount and path. Borrows the targets: it
/// holds two sorted lists of their indexes (a platform has tens of thousands of targets, and
/// a hash map of their strings would cost several times the targets' own size).
#[derive(Debug, Default)]
pub struct TargetIndex<'t> {
    targets: &'t [Target],
    /// The targets' indexes by path under their mount, then index: the first of a path's run
    /// is the first target with it.
    by_path: Box<[u32]>,
    /// The targets' indexes by (mount, path), then index.
    by_mount_path: Box<[u32]>,
}

impl<'t> TargetIndex<'t> {
    /// The lists of `targets`; where two targets share a name, the first in order wins, as a
    /// scan in order finds it.
    pub fn new(targets: &'t [Target]) -> TargetIndex<'t> {
        let all = || (0..targets.len()).map(|i| u32::try_from(i).expect("fewer than 2^32 targets"));
        let at = |i: u32| &targets[i as usize];
        let mut by_path: Vec<u32> = all().collect();
        by_path.sort_unstable_by(|&a, &b| at(a).path.cmp(&at(b).path).then(a.cmp(&b)));
        let mut by_mount_path: Vec<u32> = all().collect();
        by_mount_path.sort_unstable_by(|&a, &b| {
            (at(a).mount(), &at(a).path)
                .cmp(&(at(b).mount(), &at(b).path))
                .then(a.cmp(&b))
        });
        TargetIndex {
            targets,
            by_path: by_path.into(),
            by_mount_path: by_mount_path.into(),
        }
    }

    /// The first index in `sorted` (ordered by `cmp`, then index) that `cmp` finds equal.
    fn first(sorted: &[u32], cmp: impl Fn(u32) -> Ordering) -> Option<usize> {
        let at = sorted.partition_point(|&i| cmp(i) == Ordering::Less);
        sorted
            .get(at)
            .filter(|&&i| cmp(i) == Ordering::Equal)
            .map(|&i| i as usize)
    }

    /// The index of the first target whose path under its mount is `path`.
    fn position_of_path(&self, path: &str) -> Option<usize> {
        Self::first(&self.by_path, |i| {
            (*self.targets[i as usize].path).cmp(path)
        })
    }

    /// The targets it indexes.
    pub fn targets(&self) -> &'t [Target] {
        self.targets
    }

    /// The index of the target an ESO remoteRef key names: the first whose path under its
    /// mount, or whose `mount/path`, is the key without its leading slashes. The one rule
    /// `verify`, `audit` and `readers` match ExternalSecret keys by.
    pub fn position_of_key(&self, key: &str) -> Option<usize> {
        let key = key.trim_start_matches('/');
        let as_path = self.position_of_path(key);
        // `mount/path` with a mount that may itself hold slashes: every split is a candidate.
        let as_full = key
            .match_indices('/')
            .filter_map(|(i, _)| self.position_of(&key[..i], &key[i + 1..]))
            .min();
        match (as_path, as_full) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The target an ESO remoteRef key names ([`TargetIndex::position_of_key`]).
    pub fn of_key(&self, key: &str) -> Option<&'t Target> {
        self.position_of_key(key).map(|i| &self.targets[i])
    }

    /// The index of the first target at `mount` and `path` (both without slashes at either
    /// end).
    pub fn position_of(&self, mount: &str, path: &str) -> Option<usize> {
        Self::first(&self.by_mount_path, |i| {
            let t = &self.targets[i as usize];
            (t.mount(), &*t.path).cmp(&(mount, path))
        })
    }

    /// The first target at `mount` and `path` ([`TargetIndex::position_of`]).
    pub fn of(&self, mount: &str, path: &str) -> Option<&'t Target> {
        self.position_of(mount, path).map(|i| &self.targets[i])
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use super::*;
    use crate::generate::Generator;
    use crate::spec::{Field, Origin, Provided};

    fn target(mount: &str, path: &str) -> Target {
        let origin = Origin::new(
            PathBuf::from("specs/app.toml").into(),
            "app".into(),
            mount.into(),
            None,
        );
        let fields: Arc<[Field]> = vec![Field::new("value", Generator::Uuid)].into();
        Target::new(origin, path.into(), "A".into(), false, fields, None)
    }

    /// The scan every lookup was before the maps: the first target whose path, or whose
    /// `mount/path`, is the key.
    fn scan<'t>(targets: &'t [Target], key: &str) -> Option<&'t Target> {
        let key = key.trim_start_matches('/');
        targets
            .iter()
            .find(|t| &*t.path == key || t.full_path() == key)
    }

    /// Mounts with slashes, a path equal to another target's `mount/path` (the earlier one
    /// wins either way), a provided secret on its own mount, and names found twice.
    fn table() -> Vec<Target> {
        let mut provided = target("secret", "db/dev/password");
        provided.provided = Some(Arc::new(Provided {
            by: "db".into(),
            push_secret: None,
            mount: Some("kv".into()),
            path: None,
        }));
        vec![
            target("secret", "app/dev/A"),
            target("team/kv", "app/dev/A"),
            target("secret", "team/kv/app/dev/A"),
            target("team", "kv/app/dev/B"),
            target("team/kv", "app/dev/B"),
            provided,
            target("secret", "app/dev/A"),
            target("a/b/c", "d/e"),
            target("a", "b/c/d/e"),
            target("secret", "x"),
        ]
    }

    /// The maps give the scan's answer for every key, those that name nothing included.
    #[test]
    fn the_index_finds_what_the_scan_found() {
        let targets = table();
        let index = TargetIndex::new(&targets);
        let keys = [
            "app/dev/A",
            "/app/dev/A",
            "secret/app/dev/A",
            "team/kv/app/dev/A",
            "//team/kv/app/dev/A",
            "team/kv/app/dev/B",
            "kv/app/dev/B",
            "kv/db/dev/password",
            "secret/db/dev/password",
            "db/dev/password",
            "a/b/c/d/e",
            "b/c/d/e",
            "d/e",
            "secret/x",
            "x",
            "secret/",
            "secret",
            "",
            "/",
            "nothing/here",
        ];
        for key in keys {
            let want = scan(&targets, key).map(|t| t as *const Target);
            let got = index.of_key(key).map(|t| t as *const Target);
            assert_eq!(got, want, "key {key:?}");
        }
    }

    /// Many targets, names repeated across mounts and within one, in an order that is not
    /// sorted: every name a target has finds what the scan finds.
    #[test]
    fn the_index_finds_what_the_scan_found_among_many() {
        let mounts = ["secret", "kv", "team/kv", "secret/app"];
        let targets: Vec<Target> = (0..200)
            .map(|i| {
                let m = mounts[(i * 7) % mounts.len()];
                target(m, &format!("app/{}/{}", (i * 13) % 17, (i * 5) % 3))
            })
            .collect();
        let index = TargetIndex::new(&targets);
        for t in &targets {
            for key in [
                t.path.to_string(),
                t.full_path(),
                format!("/{}", t.full_path()),
            ] {
                let want = scan(&targets, &key).map(|t| t as *const Target);
                let got = index.of_key(&key).map(|t| t as *const Target);
                assert_eq!(got, want, "key {key:?}");
            }
            let first = targets
                .iter()
                .position(|u| u.mount() == t.mount() && u.path == t.path);
            assert_eq!(index.position_of(t.mount(), &t.path), first);
        }
    }

    /// By mount and path: the first target there, a provided secret at its own mount.
    #[test]
    fn the_index_finds_a_target_by_mount_and_path() {
        let targets = table();
        let index = TargetIndex::new(&targets);
        let at = |m: &str, p: &str| index.position_of(m, p);
        assert_eq!(at("secret", "app/dev/A"), Some(0));
        assert_eq!(at("team/kv", "app/dev/B"), Some(4));
        assert_eq!(at("kv", "db/dev/password"), Some(5));
        assert_eq!(at("secret", "db/dev/password"), None);
        assert_eq!(at("team", "app/dev/A"), None);
    }
}
