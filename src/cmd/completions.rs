//! `vault-seed completions SHELL`: a completion script for the shell on stdout (clap_complete),
//! generated from the same command definition as `--help`, so it never lags behind.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::app::cli::{Cli, CompletionsArgs};
use crate::report::Text;

/// The completion script.
pub fn run(args: &CompletionsArgs) -> Text {
    Text(script(args.shell))
}

/// The completion script for `shell`.
pub fn script(shell: Shell) -> String {
    let mut cmd = Cli::command();
    // Into memory first: clap_complete panics on a failed write, and stdout may be closed.
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "vault-seed", &mut out);
    let script = String::from_utf8(out).expect("clap_complete writes UTF-8");
    match shell {
        // clap_complete's bash script spells the state of a subcommand two ways when the binary
        // name has a hyphen: the loop that reads the words sets `vault__seed__subcmd__apply`,
        // the `case` arms test `vault__subcmd__seed__subcmd__apply`, so nothing after a
        // subcommand completes (clap-rs/clap#6421, #6529; open, fixes unreleased as of
        // clap_complete 4.6.12). Spell the arms as the loop does.
        Shell::Bash => script.replace("vault__subcmd__seed", "vault__seed"),
        _ => script,
    }
}
