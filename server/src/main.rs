use clap::Parser;

/// The process's allocator: per-thread caches, no global lock on the
/// request path (docs/DECISIONS.md, "One allocator with per-thread caches").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    let cli = countersign::cli::Cli::parse();
    match countersign::cli::run(cli).await {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // One line, naming what went wrong; no panic, no backtrace.
            eprintln!("countersign: {e:#}");
            std::process::exit(2);
        }
    }
}
