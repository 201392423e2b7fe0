//! One module per subcommand. `run` dispatches and maps outcomes to exit codes.

mod gen;
mod lint;
mod policy;

use crate::cli::{Cli, Command, GlobalArgs};
use crate::exit::Exit;
use crate::report::{self, Style};
use crate::spec::LoadError;

/// Run a parsed command line.
pub fn run(cli: Cli) -> Exit {
    let g = &cli.global;
    match &cli.command {
        Command::Lint => lint::run(g),
        Command::Gen(args) => gen::run(g, args),
        Command::Policy(args) => policy::run(g, args),
        other => {
            let name = match other {
                Command::Plan(_) => "plan",
                Command::Apply(_) => "apply",
                Command::Verify(_) => "verify",
                Command::Set(_) => "set",
                Command::Rotate(_) => "rotate",
                Command::Lint | Command::Gen(_) | Command::Policy(_) => {
                    unreachable!("handled above")
                }
            };
            report::error(
                &Style::stderr(g.color),
                &format!("`vault-seed {name}` is planned but not built yet"),
                Some("see the README's roadmap; `lint` and `gen` work today"),
            );
            Exit::Usage
        }
    }
}

pub(crate) fn print_load_error(g: &GlobalArgs, e: &LoadError) {
    let style = Style::stderr(g.color);
    match e {
        LoadError::Invalid(diags) => {
            for d in diags {
                eprint!("{}", d.render(&style));
            }
            eprintln!(
                "{}: {} problem(s) in the specs under `{}`; nothing was sent to Vault",
                style.error("error"),
                diags.len(),
                g.specs.display()
            );
        }
        LoadError::Empty(dir) => report::error(
            &style,
            &format!("no spec files (`*.toml`) in `{}`", dir.display()),
            Some("point `--specs` (or VAULT_SEED_SPECS) at the directory of your specs"),
        ),
        LoadError::Dir { .. } => report::error(
            &style,
            &e.to_string(),
            Some("run from the repository that holds `secret-specs/`, or pass `--specs DIR`"),
        ),
    }
}
