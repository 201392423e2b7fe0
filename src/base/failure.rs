//! Why a command stopped: the one error type of the command layer, at the bottom of the crate so
//! that the commands, the reports and `run.rs` all reach it without reaching each other.
//!
//! A library error stays plain (its `Display` says what went wrong, its `help()` what to do);
//! here it becomes a [`Failure`] with the exit code it means, and `run.rs` shows it once: on
//! stderr for people, and under `-o json` as one document on stdout,
//! `{"command", "ok": false, "error", "help", ...}`.

use std::path::Path;

use serde::Serialize;

use crate::base::exit::Exit;
use crate::generate::ParamError;
use crate::kube::KubeError;
use crate::spec::{Diagnostic, LoadError};
use crate::vault::VaultError;
use crate::write::replace::ChangeError;

/// A command that stopped, and why.
#[derive(Debug)]
pub struct Failure {
    /// What went wrong: one line, lowercase, things named in backticks (JSON `error`).
    pub message: String,
    /// What to do about it (JSON `help`).
    pub help: Option<String>,
    /// 1: something is not right; 2: a usage or spec error, or a refused request (nothing was
    /// sent, or nothing was written).
    pub exit: Exit,
    /// The problems behind it, shown before it (spec diagnostics, problems of the input); in
    /// JSON, `errors`.
    pub problems: Vec<Problem>,
    /// The stable code of the one rule behind it (a write gate's refusal), when it has one;
    /// in JSON, `code` (absent otherwise).
    pub code: Option<&'static str>,
}

/// One of several problems behind a failure.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Problem {
    /// A problem in a spec, with its location.
    Spec(Diagnostic),
    /// A problem of the command line or its input.
    Input {
        /// What is wrong.
        message: String,
        /// What to do.
        help: Option<String>,
        /// Its stable code, when it has one (a write gate's refusal).
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<&'static str>,
    },
}

impl Failure {
    /// Something is not right (exit 1).
    pub fn new(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            help: None,
            exit: Exit::Failure,
            problems: Vec::new(),
            code: None,
        }
    }

    /// A usage error or a refused request: nothing was sent or written (exit 2).
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure::new(message).exit(Exit::Usage)
    }

    /// With what to do.
    pub fn help(mut self, help: impl Into<String>) -> Failure {
        self.help = Some(help.into());
        self
    }

    /// With what to do, when there is something.
    pub fn maybe_help(mut self, help: Option<String>) -> Failure {
        self.help = help;
        self
    }

    /// With another exit code.
    pub fn exit(mut self, exit: Exit) -> Failure {
        self.exit = exit;
        self
    }

    /// Several problems of the command line or its input (exit 2): one is the failure itself;
    /// more are each shown, then `summary` (`3 problem(s) in the input; nothing was checked`).
    pub fn several(problems: Vec<(String, Option<String>)>, summary: String) -> Failure {
        let mut f = match problems.as_slice() {
            [(message, help)] => Failure::usage(message.clone()).maybe_help(help.clone()),
            _ => Failure::usage(summary),
        };
        f.problems = problems
            .into_iter()
            .map(|(message, help)| Problem::Input {
                message,
                help,
                code: None,
            })
            .collect();
        f
    }

    /// With the stable codes of its problems, in their order (a write gate's refusals); the
    /// failure has the code of its one problem.
    pub fn coded(mut self, codes: &[&'static str]) -> Failure {
        for (p, c) in self.problems.iter_mut().zip(codes) {
            if let Problem::Input { code, .. } = p {
                *code = Some(c);
            }
        }
        if let [one] = codes {
            self.code = Some(one);
        }
        self
    }

    /// Specs that cannot be loaded from `dir` (exit 2: nothing was sent).
    pub fn specs(e: LoadError, dir: &Path) -> Failure {
        let help = e.help();
        match e {
            // Each problem says what to do: the summary needs no help of its own.
            LoadError::Invalid(diags) => {
                let mut f = Failure::usage(format!(
                    "{} problem(s) in the specs under `{}`; nothing was sent to Vault",
                    diags.len(),
                    dir.display()
                ));
                f.problems = diags.into_iter().map(Problem::Spec).collect();
                f
            }
            e => Failure::usage(e.to_string()).maybe_help(help),
        }
    }

    /// Whether the message is the one problem itself (shown once, not twice).
    pub fn is_its_one_problem(&self) -> bool {
        matches!(self.problems.as_slice(), [Problem::Input { message, .. }] if *message == self.message)
    }
}

impl From<VaultError> for Failure {
    /// Exit 1: the server is unreachable, sealed, refused the token or a request.
    fn from(e: VaultError) -> Failure {
        Failure::new(e.to_string()).maybe_help(e.help())
    }
}

impl From<crate::vault::login::LoginError> for Failure {
    /// Exit 2 when nothing was sent (login options, an unreadable credential); 1 when Vault
    /// refused the login or could not be asked.
    fn from(e: crate::vault::login::LoginError) -> Failure {
        let exit = if e.is_usage() {
            Exit::Usage
        } else {
            Exit::Failure
        };
        Failure::new(e.to_string()).maybe_help(e.help()).exit(exit)
    }
}

impl From<KubeError> for Failure {
    /// Exit 1: the cluster cannot be reached or read.
    fn from(e: KubeError) -> Failure {
        Failure::new(e.to_string()).maybe_help(e.help())
    }
}

impl From<ChangeError> for Failure {
    /// Exit 2 for a name that fits no secret or several (nothing was sent); 1 when the secret
    /// is not in a state to change, or Vault refused.
    fn from(e: ChangeError) -> Failure {
        let exit = match &e {
            ChangeError::NotInSpec { .. } | ChangeError::Ambiguous { .. } => Exit::Usage,
            ChangeError::Absent { .. } | ChangeError::Vault(_) => Exit::Failure,
        };
        Failure::new(e.to_string()).maybe_help(e.help()).exit(exit)
    }
}

impl From<Box<Diagnostic>> for Failure {
    /// Exit 2: the environment asked for is not in the specs, or `--only` matches nothing.
    fn from(d: Box<Diagnostic>) -> Failure {
        let message = match &d.location {
            Some(at) => format!("{at}: {}", d.message),
            None => d.message.clone(),
        };
        Failure::usage(message).maybe_help(d.help.clone())
    }
}

impl From<Vec<ParamError>> for Failure {
    /// Exit 2: a generator's options are wrong.
    fn from(errors: Vec<ParamError>) -> Failure {
        let n = errors.len();
        Failure::several(
            errors
                .into_iter()
                .map(|e| (e.message, Some(e.help)))
                .collect(),
            format!("{n} problems in the generator's options"),
        )
    }
}

impl From<crate::order::LoadError> for Failure {
    /// Exit 2: a manifest cannot be read.
    fn from(e: crate::order::LoadError) -> Failure {
        Failure::usage(e.to_string()).maybe_help(e.help())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_fit_nothing_are_usage_errors_and_state_problems_are_failures() {
        let usage = Failure::from(ChangeError::NotInSpec {
            message: "no secret `X`".into(),
            help: "secrets: `A`".into(),
        });
        assert_eq!(usage.exit, Exit::Usage);
        assert_eq!(usage.help.as_deref(), Some("secrets: `A`"));
        let absent = Failure::from(ChangeError::Absent {
            path: "secret/a".into(),
            env: "dev".into(),
        });
        assert_eq!(absent.exit, Exit::Failure);
        assert_eq!(
            absent.help.as_deref(),
            Some("create it first with `vault-seed apply dev`")
        );
        let sealed = Failure::from(VaultError::Sealed {
            addr: "http://x".into(),
        });
        assert_eq!(sealed.exit, Exit::Failure);
        assert!(sealed.help.unwrap().contains("unseal"));
    }

    #[test]
    fn one_problem_is_the_failure_several_are_counted() {
        let one = Failure::several(vec![("bad".into(), Some("fix".into()))], "n".into());
        assert_eq!(
            (one.message.as_str(), one.help.as_deref()),
            ("bad", Some("fix"))
        );
        assert!(one.is_its_one_problem());
        assert_eq!(one.exit, Exit::Usage);
        let two = Failure::several(
            vec![("a".into(), None), ("b".into(), Some("h".into()))],
            "2 problems".into(),
        );
        assert_eq!(
            (two.message.as_str(), two.help.as_deref()),
            ("2 problems", None)
        );
        assert_eq!(two.problems.len(), 2);
        assert!(!two.is_its_one_problem());
    }

    #[test]
    fn invalid_specs_keep_every_problem() {
        let diags = vec![Diagnostic::global("a"), Diagnostic::global("b")];
        let f = Failure::specs(LoadError::Invalid(diags), Path::new("specs"));
        assert_eq!(f.exit, Exit::Usage);
        assert_eq!(f.problems.len(), 2);
        assert!(f
            .message
            .starts_with("2 problem(s) in the specs under `specs`"));
        let empty = Failure::specs(LoadError::Empty("specs".into()), Path::new("specs"));
        assert!(empty.help.unwrap().contains("--specs"));
    }
}
