#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    vault_seed::main()
}
