//! One module per subcommand. Each turns its arguments into a call and returns a report or a
//! [`Failure`]; none prints its result or its errors (`run.rs` does, in one place).

mod apply;
mod audit;
mod completions;
mod follow;
mod gen;
mod import;
mod lint;
mod man;
mod moves;
mod order;
mod policy;
mod prompt;
mod readers;
mod rotate;
mod session;
mod set;
mod verify;

pub use crate::base::failure::{Failure, Problem};

use crate::app::cli::{Cli, Command, GlobalArgs};
use crate::report::{Ending, Printer, Report};
use crate::spec::{self, SpecSet};

/// What a command that did not fail leaves to show.
pub enum Done {
    /// Its report, for the printing place to render.
    Report(Box<dyn Report>),
    /// Its result, already written to the printer while it ran, and how it ended.
    Printed(Ending),
}

/// Run a parsed command line: what it leaves to show, or why it stopped. `printer` is stdout,
/// for the commands that write their result while they run (`plan`, `apply`).
pub fn execute(cli: &Cli, printer: Printer<'_>) -> Result<Done, Failure> {
    let g = &cli.global;
    fn boxed<R: Report + 'static>(r: R) -> Done {
        Done::Report(Box::new(r))
    }
    match &cli.command {
        Command::Lint => lint::run(g).map(boxed),
        Command::Gen(args) => gen::run(args).map(boxed),
        Command::Plan(args) => apply::run(g, args, apply::Mode::Plan, printer).map(Done::Printed),
        Command::Apply(args) => apply::run(
            g,
            &args.common,
            apply::Mode::Apply {
                metadata: !args.no_metadata,
            },
            printer,
        )
        .map(Done::Printed),
        Command::Set(args) => set::run(g, args).map(boxed),
        Command::Rotate(args) => rotate::run(g, args).map(boxed),
        Command::Import(args) => import::run(g, args).map(boxed),
        Command::Move(args) => moves::run(g, args).map(boxed),
        Command::Policy(args) => policy::run(g, args).map(boxed),
        Command::Audit(args) => audit::run(g, args).map(boxed),
        Command::Verify(args) => verify::run(g, args).map(boxed),
        Command::Order(args) => order::run(g, args).map(boxed),
        Command::Completions(args) => Ok(boxed(completions::run(args))),
        Command::Man(args) => man::run(args).map(boxed),
    }
}

/// The gate refused a write after reading what Vault holds: each rule broken with what to do;
/// nothing was written (exit 2, as every refused request).
pub(crate) fn refused(env: &str, refusals: &[crate::gate::Refusal]) -> Failure {
    refusal_failure(env, refusals, "nothing was written")
}

/// The gate refused a write on the spec alone: nothing was sent (exit 2).
pub(crate) fn refused_unsent(env: &str, refusals: &[crate::gate::Refusal]) -> Failure {
    refusal_failure(env, refusals, "nothing was sent")
}

fn refusal_failure(env: &str, refusals: &[crate::gate::Refusal], nothing: &str) -> Failure {
    let problems = refusals
        .iter()
        .map(|r| (format!("{r}; {nothing}"), Some(r.help(env))))
        .collect();
    let codes: Vec<&'static str> = refusals.iter().map(crate::gate::Refusal::code).collect();
    Failure::several(
        problems,
        format!("{} rule(s) refuse the write; {nothing}", refusals.len()),
    )
    .coded(&codes)
}

/// Load the specs; every problem is in the failure (exit 2: nothing was sent).
pub(crate) fn load_specs(g: &GlobalArgs) -> Result<SpecSet, Failure> {
    spec::load_dir(&g.specs).map_err(|e| Failure::specs(e, &g.specs))
}

/// The tokio runtime for the commands that talk to servers: one thread. vault-seed waits on the
/// network, not the CPU; a multi-threaded runtime spent about 60 % more CPU per request on
/// waking its threads (measured with `perf` on a re-run of 10,000 paths), CPU that a local
/// server on the same small machine then lacks.
///
/// One per thread, the same for each call: a login's connection (opened in the runtime of the
/// login, [`session`]) is still open for the command's requests after it, instead of a new one
/// (a round trip over a network).
pub(crate) fn runtime() -> Result<std::rc::Rc<tokio::runtime::Runtime>, Failure> {
    thread_local! {
        static RUNTIME: std::cell::OnceCell<std::rc::Rc<tokio::runtime::Runtime>> =
            const { std::cell::OnceCell::new() };
    }
    RUNTIME.with(|cell| {
        if let Some(r) = cell.get() {
            return Ok(r.clone());
        }
        let r = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Failure::new(format!("cannot start the async runtime: {e}")))?;
        Ok(cell.get_or_init(|| std::rc::Rc::new(r)).clone())
    })
}
