#![forbid(unsafe_code)]

// jemalloc, configured in `.cargo/config.toml`: the memory a phase frees goes back to the OS.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    vault_seed::main()
}
