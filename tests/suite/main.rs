//! The integration tests, in one binary (as casey/just's `tests/lib.rs`): a module per topic,
//! and `common` (the OpenBao harness, the `Run` builder, the fault proxy, the fake Kubernetes
//! API server) compiled once. A test that needs a process of its own (a global `tracing`
//! subscriber, a private network namespace) runs this binary again on itself, filtered to that
//! one test (`common::rerun`).

mod common;

mod airgap;
mod apply;
mod argocd;
mod audit;
mod change;
mod cli;
mod codes;
mod consumers;
mod deploy;
mod derived;
mod eso_store;
mod eso_sync;
mod faults;
mod gate;
mod gen;
mod harness;
mod hostile;
mod import;
mod in_cluster;
mod json_failures;
mod keys;
mod kube_eso;
mod kube_lists;
mod kube_logs;
mod kube_vso;
mod kubeconfig_guards;
mod lint;
mod login;
mod mixed_kv;
mod model;
mod order;
mod policy_eval;
mod policy_merge;
mod policy_scope;
mod project;
mod provided;
mod readers;
mod readme_runbooks;
mod rotation;
mod seeder_policy;
mod set_hints;
mod spec_props;
mod stdout_errors;
mod tls;
mod verify;
mod vso_identity;
mod wait;
