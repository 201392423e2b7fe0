//! `World`: what the tests of the commands that read the cluster stand on: a real OpenBao, a
//! directory holding one spec, and the fake Kubernetes API server. Each module puts the objects
//! it needs and keeps its own helpers (methods of `World` in its own `impl World`, whose names
//! must not be taken by another module's: the compiler refuses a second method of one name).
//!
//! ```ignore
//! let w = World::new(SPEC).never_shows([VALUE]);
//! w.apply("auh1-dev");
//! w.kube.put(external_secret("ask", "db", &[("password", "ask/db", Some("password"))]));
//! let doc = w.run(&["verify", "auh1-dev", "-o", "json"]).status(1).json();
//! ```

use super::fake_kube::FakeKube;
use super::{spec_dir, OpenBao, Out, Run};

pub struct World {
    pub bao: OpenBao,
    /// Holds the spec as `app.toml`.
    pub specs: tempfile::TempDir,
    /// Empty until the test puts objects.
    pub kube: FakeKube,
    /// Texts no run of this world may show ([`World::never_shows`]).
    pub never: Vec<String>,
}

impl World {
    /// A dev OpenBao, `spec` as the only spec, an empty fake cluster. Nothing is applied.
    pub fn new(spec: &str) -> World {
        World {
            bao: OpenBao::dev(),
            specs: spec_dir(spec),
            kube: FakeKube::start(),
            never: Vec::new(),
        }
    }

    /// Expect every run of this world ([`World::run`], [`World::apply`]) never to show any of
    /// `texts`: the values the test put in the cluster or in Vault, known before the runs.
    pub fn never_shows<S: Into<String>>(mut self, texts: impl IntoIterator<Item = S>) -> World {
        self.never.extend(texts.into_iter().map(Into::into));
        self
    }

    /// `vault-seed apply ENV` of the spec, expected to exit 0; what it printed.
    #[track_caller]
    pub fn apply(&self, env: &str) -> Out {
        self.hiding(
            Run::new(&self.bao)
                .specs(self.specs.path())
                .args(["apply", env]),
        )
        .output()
    }

    /// `vault-seed ARGS` against this OpenBao, spec and cluster (`--kubeconfig` the fake one).
    pub fn run(&self, args: &[&str]) -> Run {
        self.hiding(
            Run::new(&self.bao)
                .specs(self.specs.path())
                .args(args)
                .arg("--kubeconfig")
                .arg(self.kube.kubeconfig()),
        )
    }

    fn hiding(&self, run: Run) -> Run {
        self.never.iter().fold(run, |run, t| run.never_shows(t))
    }
}
