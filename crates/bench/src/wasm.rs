//! Benchmark 6: the size of the hydrate bundle's `.wasm` under the site's
//! `pkg/` directory (build it with `scripts/site.sh --release` first),
//! raw and compressed with `gzip -9` (what a server or CDN would send).

use anyhow::Context;
use std::path::Path;
use std::process::Stdio;

use crate::suite::Figure;

const GOAL_BYTES: u64 = 250 * 1000;

pub async fn run(site_root: &Path) -> anyhow::Result<Vec<Figure>> {
    let pkg = site_root.join("pkg");
    let wasm = std::fs::read_dir(&pkg)
        .with_context(|| format!("reading {} (build the console with `scripts/site.sh --release`)", pkg.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
        .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .with_context(|| format!("no .wasm file in {}", pkg.display()))?;
    let meta = std::fs::metadata(&wasm)?;
    let raw = meta.len();
    let out = tokio::process::Command::new("gzip")
        .args(["-9", "-c"])
        .arg(&wasm)
        .stdout(Stdio::piped())
        .output()
        .await
        .context("running gzip")?;
    anyhow::ensure!(out.status.success(), "gzip failed");
    let gz = out.stdout.len() as u64;
    let modified: chrono::DateTime<chrono::Utc> = meta.modified()?.into();
    println!("  {} (built {})", wasm.display(), modified.format("%Y-%m-%d %H:%M UTC"));
    if raw > 2_000_000 {
        println!("  warning: over 2 MB raw; this looks like a debug build, not `scripts/site.sh --release`");
    }
    let kb = |b: u64| b as f64 / 1000.0;
    Ok(vec![Figure::new(
        "release hydrate wasm size",
        format!("{:.1} KB raw, {:.1} KB gzip -9 ({raw} / {gz} bytes)", kb(raw), kb(gz)),
        "≤ 250 KB gzip",
        gz <= GOAL_BYTES,
    )])
}
