use clap::Parser;

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
