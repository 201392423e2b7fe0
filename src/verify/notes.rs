//! What `verify` says about the whole run rather than one object, as typed findings with codes:
//! its top-level `notes` (what `--force-sync` and `--restart` did, what waiting ended in, what
//! `--skip-target-secrets` left unread), each `not_checked` row's reason and each `cannot_tell`
//! row. The JSON keeps the sentences (`notes`, `why`) and adds the codes beside them
//! (`findings`, `code`), as each object's verdict does ([`super::findings::Verdict`]).

use std::time::Duration;

use super::findings::{Finding, Severity};

/// A note about the run (the top-level `notes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunNote {
    /// `--force-sync` annotated an ExternalSecret or VaultStaticSecret.
    ForceSynced {
        /// `ExternalSecret` or `VaultStaticSecret`.
        kind: &'static str,
        /// `namespace/name`.
        object: String,
    },
    /// `--force-sync` left an ExternalSecret alone: `refreshPolicy: CreatedOnce`.
    ForceSyncIgnored {
        /// `namespace/name`.
        object: String,
    },
    /// `--force-sync` could not annotate it.
    ForceSyncFailed {
        /// `ExternalSecret` or `VaultStaticSecret`.
        kind: &'static str,
        /// `namespace/name`.
        object: String,
        /// Whether it could not even be read.
        unread: bool,
        /// The cluster's error.
        why: String,
    },
    /// `--restart` restarted a workload.
    Restarted {
        /// The line said (kind, namespace/name, time).
        line: String,
    },
    /// `--skip-target-secrets`: the target Secrets' keys were not checked.
    TargetSecretsNotRead,
    /// `--wait` ran out with this part's objects not done.
    WaitRanOut {
        /// The time waited.
        wait: Duration,
        /// What was not done, as the sentence ends.
        what: &'static str,
    },
    /// Waiting stopped early: what is not done cannot become done by waiting.
    StoppedWaiting {
        /// Why, each cause.
        causes: Vec<String>,
    },
}

crate::base::codes::codes!(
    RunNote,
    RunNote {
        ForceSynced => "force-synced",
        ForceSyncIgnored => "force-sync-ignored",
        ForceSyncFailed => "force-sync-failed",
        Restarted => "restarted",
        TargetSecretsNotRead => "target-secrets-not-read",
        WaitRanOut => "wait-ran-out",
        StoppedWaiting => "stopped-waiting",
    }
);

impl Finding for RunNote {
    /// All are notes: the verdict is the parts'.
    fn severity(&self) -> Severity {
        Severity::Note
    }

    fn message(&self) -> String {
        match self {
            RunNote::ForceSynced { kind: "ExternalSecret", object } => {
                format!("annotated ExternalSecret `{object}` with force-sync")
            }
            RunNote::ForceSynced { kind, object } => format!(
                "annotated {kind} `{object}` with vault-seed/force-sync (VSO reconciles it now)"
            ),
            RunNote::ForceSyncIgnored { object } => format!(
                "did not annotate ExternalSecret `{object}`: its `refreshPolicy: CreatedOnce` makes ESO ignore force-sync (deleting its target Secret makes it sync again)"
            ),
            RunNote::ForceSyncFailed {
                kind,
                object,
                unread,
                why,
            } => format!(
                "could not annotate {kind} `{object}`: {}{why}",
                if *unread { "it cannot be read: " } else { "" }
            ),
            RunNote::Restarted { line } => line.clone(),
            RunNote::TargetSecretsNotRead => {
                "target Secrets were not read (--skip-target-secrets): their keys were not checked"
                    .into()
            }
            RunNote::WaitRanOut { wait, what } => {
                format!("waited {} and {what}", humantime::format_duration(*wait))
            }
            RunNote::StoppedWaiting { causes } => format!(
                "stopped waiting: waiting cannot make it done: {}",
                causes.join("; ")
            ),
        }
    }
}

/// Why a part, or something of one, was not checked (a `not_checked` row's `code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unchecked {
    /// An option left the part out (`--only`, `--skip-kube`, `--skip-target-secrets`).
    LeftOut,
    /// The part `argocd`, and no spec has an `[argocd]` section.
    NoArgocd,
    /// The part was asked for but could not be checked (its error is the part's).
    Failed,
    /// `--skip-target-secrets`: the target Secrets' keys.
    TargetSecrets,
    /// `--skip-target-secrets`: the consumers reading through env or `subPath`.
    ConsumerReaders,
}

crate::base::codes::codes!(
    Unchecked,
    Unchecked {
        LeftOut => "left-out",
        NoArgocd => "no-argocd-section",
        Failed => "could-not-check",
        TargetSecrets => "target-secrets-skipped",
        ConsumerReaders => "consumer-readers-skipped",
    }
);

/// What the facts could not decide (a `cannot_tell` row's `code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Undecided {
    /// Workloads whose pods may or may not hold the current data.
    Workloads,
}

crate::base::codes::codes!(Undecided, Undecided { Workloads => "workloads-cannot-tell" });

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::findings::said;

    /// The codes of the run's notes, of `not_checked` and of `cannot_tell`: listed, unique
    /// among the three (a script reads them side by side).
    #[test]
    fn every_code_of_the_run_is_listed() {
        let mut own = RunNote::codes();
        own.extend(Unchecked::codes());
        own.extend(Undecided::codes());
        crate::base::codes::assert_documented("verify: the run", &own, &own);
    }

    #[test]
    fn the_sentences_are_those_said_before() {
        let (notes, coded) = said(&[
            RunNote::ForceSyncFailed {
                kind: "VaultStaticSecret",
                object: "ask/x".into(),
                unread: true,
                why: "403".into(),
            },
            RunNote::WaitRanOut {
                wait: Duration::from_secs(120),
                what: "not everything was Ready",
            },
        ]);
        assert_eq!(
            notes,
            [
                "could not annotate VaultStaticSecret `ask/x`: it cannot be read: 403",
                "waited 2m and not everything was Ready"
            ]
        );
        assert_eq!(coded[1].code, "wait-ran-out");
        assert_eq!(coded[1].severity, "note");
        assert_eq!(coded[0].message, notes[0]);
    }
}
