//! Latency distributions and the closed-loop load runner.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::client::{Body, Conn};
use hyper::Request;

/// A latency sample set, sorted, in microseconds.
#[derive(Clone, Debug, Default)]
pub struct Latency {
    sorted: Vec<u64>,
}

impl Latency {
    pub fn new(mut samples: Vec<u64>) -> Latency {
        samples.sort_unstable();
        Latency { sorted: samples }
    }

    pub fn from_durations(samples: &[Duration]) -> Latency {
        Latency::new(samples.iter().map(|d| d.as_micros() as u64).collect())
    }

    /// The samples of both sets.
    pub fn merge(self, other: Latency) -> Latency {
        let mut all = self.sorted;
        all.extend(other.sorted);
        Latency::new(all)
    }

    pub fn count(&self) -> usize {
        self.sorted.len()
    }

    /// The nearest-rank percentile `p` (0–100), in microseconds.
    pub fn pct_us(&self, p: f64) -> u64 {
        if self.sorted.is_empty() {
            return 0;
        }
        let rank = ((p / 100.0) * self.sorted.len() as f64).ceil() as usize;
        self.sorted[rank.clamp(1, self.sorted.len()) - 1]
    }

    pub fn pct(&self, p: f64) -> Duration {
        Duration::from_micros(self.pct_us(p))
    }

    pub fn max(&self) -> Duration {
        Duration::from_micros(self.sorted.last().copied().unwrap_or(0))
    }

    /// "p50 1.23 ms, p99 4.56 ms, max 7.89 ms"
    pub fn summary(&self) -> String {
        format!(
            "p50 {}, p90 {}, p99 {}, max {}",
            ms(self.pct(50.0)),
            ms(self.pct(90.0)),
            ms(self.pct(99.0)),
            ms(self.max())
        )
    }
}

/// A duration in milliseconds with two decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// A signed difference of two durations in milliseconds.
pub fn ms_diff(a: Duration, b: Duration) -> f64 {
    (a.as_secs_f64() - b.as_secs_f64()) * 1000.0
}

/// What a closed-loop run measured (inside the measuring window only).
pub struct LoadReport {
    pub ok: u64,
    pub failed: u64,
    pub statuses: BTreeMap<u16, u64>,
    pub window: Duration,
    pub latency: Latency,
    pub first_failure: Option<String>,
}

impl LoadReport {
    pub fn per_sec(&self) -> f64 {
        self.ok as f64 / self.window.as_secs_f64()
    }

    /// The rounds of one target as one report (windows add up).
    pub fn merge(rounds: Vec<LoadReport>) -> LoadReport {
        let mut total = LoadReport {
            ok: 0,
            failed: 0,
            statuses: BTreeMap::new(),
            window: Duration::ZERO,
            latency: Latency::default(),
            first_failure: None,
        };
        for r in rounds {
            total.ok += r.ok;
            total.failed += r.failed;
            for (k, v) in r.statuses {
                *total.statuses.entry(k).or_default() += v;
            }
            total.window += r.window;
            total.latency = total.latency.merge(r.latency);
            total.first_failure = total.first_failure.or(r.first_failure);
        }
        total
    }

    /// Runs that went on at the same time (against several instances): their
    /// answers add up over one window.
    pub fn alongside(runs: Vec<LoadReport>) -> LoadReport {
        let window = runs.iter().map(|r| r.window).max().unwrap_or_default();
        LoadReport { window, ..LoadReport::merge(runs) }
    }

    /// One round's line: "r/s".
    pub fn short(&self) -> String {
        format!("{:.0}/s", self.per_sec())
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.0} req/s ({} ok, {} failed in {:.1} s); {}",
            self.per_sec(),
            self.ok,
            self.failed,
            self.window.as_secs_f64(),
            self.latency.summary()
        )?;
        if let Some(why) = &self.first_failure {
            write!(f, "; first failure: {why}")?;
        }
        Ok(())
    }
}

/// How a closed-loop run is driven: `connections` workers, each with its own
/// connection, each sending its next request as soon as the previous answer
/// is read. Answers completing during `warmup` are not counted; the run
/// counts the `duration` after it.
#[derive(Clone, Copy, Debug)]
pub struct LoadSpec {
    pub addr: SocketAddr,
    pub connections: usize,
    pub warmup: Duration,
    pub duration: Duration,
}

/// [`closed_loop`] against several servers at once, `spec.connections`
/// shared among them (worker `w` asks server `w % n`): `make(addr, worker,
/// seq)` builds each request.
pub async fn closed_loop_spread<F>(
    addrs: Vec<SocketAddr>,
    spec: LoadSpec,
    expect: u16,
    make: F,
) -> anyhow::Result<LoadReport>
where
    F: Fn(SocketAddr, usize, u64) -> Request<Body> + Send + Sync + 'static,
{
    let make = Arc::new(make);
    let n = addrs.len().max(1);
    let runs: Vec<_> = addrs
        .iter()
        .enumerate()
        .map(|(i, &addr)| {
            let make = make.clone();
            let connections = spec.connections / n + usize::from(i < spec.connections % n);
            let spec = LoadSpec { addr, connections, ..spec };
            tokio::spawn(closed_loop(spec, expect, move |w, seq| make(addr, w * n + i, seq)))
        })
        .collect();
    let mut reports = Vec::with_capacity(runs.len());
    for run in runs {
        reports.push(run.await??);
    }
    Ok(LoadReport::alongside(reports))
}

/// Runs `make(worker, seq)` requests against `spec.addr`; an answer with
/// status `expect` is a success.
pub async fn closed_loop<F>(spec: LoadSpec, expect: u16, make: F) -> anyhow::Result<LoadReport>
where
    F: Fn(usize, u64) -> Request<Body> + Send + Sync + 'static,
{
    let make = Arc::new(make);
    let start = Instant::now();
    let measure_from = start + spec.warmup;
    let measure_until = measure_from + spec.duration;
    let mut workers = Vec::with_capacity(spec.connections);
    for worker in 0..spec.connections {
        let make = make.clone();
        workers.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut statuses: BTreeMap<u16, u64> = BTreeMap::new();
            let (mut failed, mut first_failure) = (0u64, None);
            let mut conn = None;
            let mut seq = 0u64;
            while Instant::now() < measure_until {
                if conn.is_none() {
                    match Conn::open(spec.addr).await {
                        Ok(c) => conn = Some(c),
                        Err(e) => {
                            failed += 1;
                            first_failure.get_or_insert_with(|| format!("{e:#}"));
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    }
                }
                let req = make(worker, seq);
                seq += 1;
                let sent = Instant::now();
                let result = conn.as_mut().expect("connected").send(req).await;
                let done = Instant::now();
                let counted = done >= measure_from && done < measure_until;
                match result {
                    Ok(reply) => {
                        if counted {
                            *statuses.entry(reply.status).or_default() += 1;
                            if reply.status == expect {
                                samples.push((done - sent).as_micros() as u64);
                            } else {
                                failed += 1;
                                first_failure.get_or_insert_with(|| {
                                    format!(
                                        "HTTP {}: {}",
                                        reply.status,
                                        reply.text().chars().take(300).collect::<String>()
                                    )
                                });
                            }
                        }
                    }
                    Err(e) => {
                        conn = None;
                        if counted {
                            failed += 1;
                            first_failure.get_or_insert_with(|| format!("{e:#}"));
                        }
                    }
                }
            }
            (samples, statuses, failed, first_failure)
        }));
    }
    let mut samples = Vec::new();
    let mut statuses: BTreeMap<u16, u64> = BTreeMap::new();
    let (mut failed, mut first_failure) = (0, None);
    for w in workers {
        let (s, st, f, ff) = w.await?;
        samples.extend(s);
        for (k, v) in st {
            *statuses.entry(k).or_default() += v;
        }
        failed += f;
        first_failure = first_failure.or(ff);
    }
    Ok(LoadReport {
        ok: samples.len() as u64,
        failed,
        statuses,
        window: spec.duration,
        latency: Latency::new(samples),
        first_failure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let l = Latency::new((1..=100).rev().collect());
        assert_eq!(l.pct_us(50.0), 50);
        assert_eq!(l.pct_us(99.0), 99);
        assert_eq!(l.pct_us(100.0), 100);
        assert_eq!(l.pct_us(0.0), 1);
        assert_eq!(Latency::default().pct_us(50.0), 0);
    }
}
