//! Commit latency on the other rails, each rail's own time subtracted as
//! in `commit`:
//!
//! - `commit-stripe`: the tenant pays through the Stripe connector, against
//!   the Stripe fake (e2e/rails/stripe/stripe_fake.py, a Python process
//!   checking every request against Stripe's published description); beside
//!   each commit a direct `POST /v1/transfers` to the same fake with the
//!   connector's headers stands for the rail's time.
//! - `commit-bank`: the tenant pays with bank files (ISO 20022). The rail
//!   is Countersign's own ledger (a row per payment; the files are written
//!   by the reconciliation pass every `cut_every_secs`, off the commit), so
//!   there is no outside rail to subtract: the figure is the whole commit.

use serde_json::json;
use std::path::Path;
use std::time::Duration;

use crate::commit::{alternated_with, Direct, AMOUNT, WARMUP};
use crate::env::{propose, transfer, Env, AGENT_KEY, SOURCE, TRUSTED_PAYEE};
use crate::stats::ms;
use crate::suite::Figure;

/// The Stripe fake, started from the repository root; killed when dropped.
struct StripeFake {
    child: tokio::process::Child,
    url: String,
}

impl StripeFake {
    async fn start(dir: &Path) -> anyhow::Result<StripeFake> {
        let url_file = dir.join("stripe.url");
        let child = tokio::process::Command::new("python3")
            .arg("e2e/rails/stripe/stripe_fake.py")
            .arg("--url-file")
            .arg(&url_file)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(dir.join("stripe-fake.log"))?)
            .kill_on_drop(true)
            .spawn()?;
        for _ in 0..300 {
            if let Ok(url) = std::fs::read_to_string(&url_file) {
                return Ok(StripeFake { child, url: url.trim().to_owned() });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        anyhow::bail!("the Stripe fake did not start (run from the repository root)")
    }
}

pub async fn stripe(env: &Env, commits: usize) -> anyhow::Result<Vec<Figure>> {
    let dir = env.scratch("commit-stripe-rail")?;
    let mut fake = StripeFake::start(&dir).await?;
    let http = crate::env::http();
    let r = http.post(format!("{}/_sim/accounts", fake.url)).json(&json!({"id": TRUSTED_PAYEE})).send().await?;
    anyhow::ensure!(r.status().is_success(), "registering the payee's connected account: {}", r.status());
    let config = format!(
        "[rail]\nreconcile_interval_secs = 1\n\n[rails.stripe]\nkind = \"stripe\"\nurl = {:?}\napi_key = \
         \"sk_test_bench\"\n\n[tenants.bench]\nrail = \"stripe\"\n",
        fake.url
    );
    let addr = crate::client::addr_of(&fake.url)?;
    let direct = Direct {
        addr,
        headers: vec![
            ("authorization", "Bearer sk_test_bench".to_owned()),
            ("stripe-version", countersign::config::rails::STRIPE_API_VERSION.to_owned()),
        ],
        form: Box::new(|key, id| {
            format!(
                "amount={AMOUNT}&currency=usd&destination={TRUSTED_PAYEE}&transfer_group={key}\
                 &metadata%5Bcountersign_operation%5D={key}&metadata%5Bsource_account%5D={SOURCE}\
                 &metadata%5Bproposal_id%5D={id}&description=Invoice%201842"
            )
        }),
    };
    let figure = measure(env, "commit-stripe", &config, commits, Some(&direct), "Stripe (the fake)").await;
    let _ = fake.child.kill().await;
    figure
}

pub async fn bank(env: &Env, commits: usize) -> anyhow::Result<Vec<Figure>> {
    let dir = env.scratch("commit-bank-rail")?;
    for sub in ["out", "in"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    let beneficiaries = dir.join("beneficiaries.toml");
    std::fs::write(
        &beneficiaries,
        format!("[[beneficiary]]\nid = \"{TRUSTED_PAYEE}\"\nname = \"Trusted Supplies Ltd\"\niban = \"DE89370400440532013000\"\n"),
    )?;
    let config = format!(
        "[rail]\nreconcile_interval_secs = 1\n\n[rails.bank]\nkind = \"iso20022\"\noutbox = {:?}\ninbox = {:?}\n\
         debtor_name = \"Bench Corp\"\ndebtor_iban = \"FR1420041010050500013M02606\"\nbeneficiaries = {:?}\n\n\
         [tenants.bench]\nrail = \"bank\"\n",
        dir.join("out"),
        dir.join("in"),
        beneficiaries
    );
    measure(env, "commit-bank", &config, commits, None, "bank files (the ledger, files off the commit)").await
}

async fn measure(
    env: &Env,
    name: &str,
    config: &str,
    commits: usize,
    direct: Option<&Direct>,
    rail_label: &str,
) -> anyhow::Result<Vec<Figure>> {
    let server_dir = env.provision(name, config).await?;
    let server = env.serve(&server_dir, &[]).await?;
    println!("  server: countersign serve (pid {}) on {}; rail: {rail_label}", server.pid, server.url);
    let http = crate::env::http();
    let total = commits + WARMUP;
    let mut approved = Vec::with_capacity(total);
    for i in 0..total {
        let p =
            propose(&http, &server.url, &transfer(&format!("{name}-{i}"), AMOUNT, TRUSTED_PAYEE, SOURCE), 201).await?;
        match (p["id"].as_str(), p["approval_token"].as_str()) {
            (Some(id), Some(token)) => {
                approved.push((id.to_owned(), json!({"approval_token": token}).to_string().into_bytes()))
            }
            _ => anyhow::bail!("expected an auto-approved proposal: {p}"),
        }
    }
    let auth = format!("Bearer {AGENT_KEY}");
    let measured = alternated_with(server.addr, &[("authorization", auth.as_str())], &approved, direct).await?;
    server.stop().await;
    let (commit, rail, net50, net99) = measured.report(&format!("{name}, {commits} commits"));
    println!("  answered {:?}", measured.outcomes);
    let title = match name {
        "commit-stripe" => "commit latency on Stripe, rail subtracted",
        _ => "commit latency on bank files",
    };
    Ok(vec![Figure::new(
        title,
        format!(
            "p50 {net50:.2} ms, p99 {net99:.2} ms (commit p50 {} / p99 {}; rail p50 {} / p99 {})",
            ms(commit.pct(50.0)),
            ms(commit.pct(99.0)),
            ms(rail.pct(50.0)),
            ms(rail.pct(99.0))
        ),
        "p99 < 2.5 ms, as on the simulator",
        net99 < 2.5,
    )])
}
