//! `countersign policy to-cedar | check | backtest | test` (docs/POLICY.md).
//! `policy explain` is in `operator`.

use std::path::Path;

use crate::config::Settings;
use crate::decision::policy::{backtest, convert, examples, Engine};
use crate::operator::PolicyCommand;

pub async fn run(settings: Settings, command: PolicyCommand) -> anyhow::Result<i32> {
    match command {
        PolicyCommand::Explain { .. } => unreachable!("`policy explain` is operator's"),
        PolicyCommand::ToCedar => {
            print!("{}", convert::to_cedar(&settings.policy));
            println!();
            Ok(0)
        }
        PolicyCommand::Check { file } => Ok(match load(&file) {
            Ok(Engine::Cedar(policy)) => {
                println!("{}: valid ({}); rules: {}", file.display(), policy.digest(), policy.rules().join(", "));
                0
            }
            Ok(Engine::Rules) => unreachable!("a file is Cedar"),
            Err(code) => code,
        }),
        PolicyCommand::Backtest { candidate, tenant, since, json } => {
            let since = match backtest::parse_since(&since) {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("countersign: --since {e}");
                    return Ok(2);
                }
            };
            let candidate = match load(&candidate) {
                Ok(engine) => engine,
                Err(code) => return Ok(code),
            };
            let (state, _trigger) = crate::startup::offline_state(settings).await?;
            let report =
                crate::decision::policy::backtest::recorded::run(&state, &tenant, &candidate, state.now() - since)
                    .await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                for line in report.lines() {
                    println!("{line}");
                }
                println!("({} ms)", report.elapsed_ms);
            }
            Ok(0)
        }
        PolicyCommand::Test { file } => {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {}", file.display(), e.kind()))?;
            let cases = match examples::parse(&text) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("countersign: {}: {e}", file.display());
                    return Ok(1);
                }
            };
            let engine = match &cases.policy {
                None => Engine::Rules,
                Some(path) => match load(&file.parent().unwrap_or(Path::new(".")).join(path)) {
                    Ok(engine) => engine,
                    Err(code) => return Ok(code),
                },
            };
            let results = examples::run(&engine, &settings.policy, &cases);
            let failed = results.iter().filter(|r| r.failure.is_some()).count();
            for r in &results {
                match &r.failure {
                    None => println!("ok      {}", r.name),
                    Some(why) => println!("FAILED  {}: {why}", r.name),
                }
            }
            println!("policy test {}: {} passed, {failed} failed", engine.label(), results.len() - failed);
            Ok(i32::from(failed > 0))
        }
    }
}

/// A Cedar policy file, or the exit status after saying why not.
fn load(path: &Path) -> Result<Engine, i32> {
    Engine::from_file(path).map_err(|e| {
        eprintln!("countersign: {e}");
        1
    })
}
