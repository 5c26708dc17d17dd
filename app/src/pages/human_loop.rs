use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::{console_error, load_human_loop};
use crate::components::LoadError;
use crate::views::{ChannelSpread, DayCount, HumanLoopPage as Page};

/// "45 s", "4 min", "2 h 5 min", "3 d 2 h".
pub fn duration(secs: f64) -> String {
    let s = secs.round().max(0.0) as u64;
    match s {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 86_400 => match (s / 3600, s % 3600 / 60) {
            (h, 0) => format!("{h} h"),
            (h, m) => format!("{h} h {m} min"),
        },
        s => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

/// The human loop, for admins: decisions and expiries per
/// day, and how long people take to decide and to be told, by channel.
/// The charts are SVG drawn here, on the server as on the client: no chart
/// library (docs/NOTIFICATIONS.md).
#[component]
pub fn HumanLoopPage() -> impl IntoView {
    let data = crate::codec::page(|| (), |_| load_human_loop());
    view! {
        <section class="human-loop stack">
            <Title text="Human loop"/>
            <h1>"Human loop"</h1>
            <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(page) => view! { <Charts page/> }.into_any(),
                        Err(e) => view! { <LoadError error=console_error(&e)/> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

#[component]
fn Charts(page: Page) -> impl IntoView {
    let totals = page
        .days
        .iter()
        .fold((0, 0, 0, 0), |(a, r, e, x), d| (a + d.approvals, r + d.rejections, e + d.expiries, x + d.escalations));
    view! {
        <p class="muted">
            {format!(
                "The last {} days (UTC): {} approved, {} rejected, {} expired undecided, {} escalated.",
                page.days.len(), totals.0, totals.1, totals.2, totals.3,
            )}
        </p>
        <div class="card stack">
            <h2 id="per-day-title">"Decisions, expiries and escalations per day"</h2>
            <DayChart days=page.days.clone()/>
            <details>
                <summary>"The numbers"</summary>
                <table class="numbers" id="per-day">
                    <thead><tr><th>"Day"</th><th>"Approved"</th><th>"Rejected"</th><th>"Expired"</th><th>"Escalated"</th></tr></thead>
                    <tbody>
                        {page.days.iter().rev().map(|d| view! {
                            <tr data-day=d.day.clone()>
                                <td>{d.day.clone()}</td>
                                <td class="approvals">{d.approvals}</td>
                                <td class="rejections">{d.rejections}</td>
                                <td class="expiries">{d.expiries}</td>
                                <td class="escalations">{d.escalations}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </details>
        </div>
        <div class="card stack">
            <h2>"Time to decide, by channel"</h2>
            <p class="muted small">"From the agent's proposal to a person's decision: median and 90th percentile."</p>
            <SpreadChart id="decision-times" spreads=page.decisions what="decisions"/>
        </div>
        <div class="card stack">
            <h2>"Time to tell the approvers, by channel"</h2>
            <p class="muted small">"From the agent's proposal to its first notice delivered on each channel."</p>
            <SpreadChart id="notice-times" spreads=page.notices what="notices"/>
        </div>
    }
}

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 200.0;
const LEFT: f64 = 36.0;
const BOTTOM: f64 = 24.0;

/// Grouped bars per day: approved, rejected, expired.
#[component]
fn DayChart(days: Vec<DayCount>) -> impl IntoView {
    let top = days.iter().map(|d| d.approvals.max(d.rejections).max(d.expiries).max(d.escalations)).max();
    let top = top.unwrap_or(0).max(1);
    let slot = (WIDTH - LEFT) / days.len().max(1) as f64;
    let bar = (slot / 5.0).max(1.0);
    let y = move |n: u32| (HEIGHT - BOTTOM) * (1.0 - f64::from(n) / f64::from(top));
    let label = format!(
        "Bar chart: per day, the payments approved, rejected, expired undecided and escalated; at most {top} in a day."
    );
    let bars = days
        .iter()
        .enumerate()
        .flat_map(|(i, d)| {
            let x0 = LEFT + slot * i as f64 + bar / 2.0;
            [
                (d.approvals, "approved", 0.0),
                (d.rejections, "rejected", 1.0),
                (d.expiries, "expired", 2.0),
                (d.escalations, "escalated", 3.0),
            ]
            .into_iter()
            .filter(|(n, _, _)| *n > 0)
            .map(move |(n, class, k)| {
                let top_y = y(n);
                view! {
                    <rect class=format!("bar {class}") x=format!("{:.1}", x0 + bar * k) y=format!("{top_y:.1}")
                        width=format!("{bar:.1}") height=format!("{:.1}", HEIGHT - BOTTOM - top_y)>
                        <title>{format!("{}: {n} {class}", d.day)}</title>
                    </rect>
                }
            })
        })
        .collect_view();
    let ticks = days
        .iter()
        .enumerate()
        // Every week, and today (not both when they would touch).
        .filter(|(i, _)| (i % 7 == 0 && i + 4 <= days.len()) || *i + 1 == days.len())
        .map(|(i, d)| {
            let x = LEFT + slot * i as f64 + slot / 2.0;
            // The last one ends at the edge rather than past it.
            let anchor = if i + 1 == days.len() { "end" } else { "middle" };
            let x = if i + 1 == days.len() { WIDTH } else { x };
            view! { <text class="tick" x=format!("{x:.1}") y=format!("{:.1}", HEIGHT - 6.0) text-anchor=anchor>{d.day.get(5..).unwrap_or(&d.day).to_owned()}</text> }
        })
        .collect_view();
    view! {
        <svg class="chart" id="per-day-chart" role="img" aria-label=label viewBox=format!("0 0 {WIDTH} {HEIGHT}")
            preserveAspectRatio="xMidYMid meet">
            <line class="axis" x1=LEFT y1=HEIGHT - BOTTOM x2=WIDTH y2=HEIGHT - BOTTOM/>
            <text class="tick" x=LEFT - 6.0 y="24" text-anchor="end">{top}</text>
            <text class="tick" x=LEFT - 6.0 y=HEIGHT - BOTTOM text-anchor="end">"0"</text>
            {bars}
            {ticks}
        </svg>
        <p class="legend small">
            <span class="key approved">"Approved"</span>
            <span class="key rejected">"Rejected"</span>
            <span class="key expired">"Expired undecided"</span>
            <span class="key escalated">"Escalated"</span>
        </p>
    }
}

/// Two horizontal bars per channel: the median and the 90th percentile,
/// each an SVG scaled to the longest 90th percentile; the channel and the
/// values are text beside them, readable at any width.
#[component]
fn SpreadChart(id: &'static str, spreads: Vec<ChannelSpread>, what: &'static str) -> impl IntoView {
    if spreads.is_empty() {
        return view! { <p class="muted" id=id>{format!("No {what} in these days yet.")}</p> }.into_any();
    }
    let longest = spreads.iter().map(|s| s.p90_secs).fold(1.0_f64, f64::max);
    let share = move |secs: f64| (100.0 * secs / longest).clamp(0.5, 100.0);
    let label = spreads
        .iter()
        .map(|s| format!("{}: median {}, 90th percentile {}", s.channel, duration(s.median_secs), duration(s.p90_secs)))
        .collect::<Vec<_>>()
        .join("; ");
    let rows = spreads
        .into_iter()
        .map(|s| {
            let what = if s.count == 1 { what.trim_end_matches('s') } else { what };
            let said = format!("{} · {} ({} {what})", duration(s.median_secs), duration(s.p90_secs), s.count);
            view! {
                <div class="spread" data-channel=s.channel.clone()>
                    <span class="channel">{s.channel.clone()}</span>
                    <svg class="bars" viewBox="0 0 100 26" preserveAspectRatio="none" aria-hidden="true">
                        <rect class="bar p90" x="0" y="0" height="12" width=format!("{:.2}", share(s.p90_secs))/>
                        <rect class="bar median" x="0" y="14" height="12" width=format!("{:.2}", share(s.median_secs))/>
                    </svg>
                    <span class="value">{said}</span>
                </div>
            }
        })
        .collect_view();
    view! {
        <div class="spreads" id=id role="img" aria-label=label>{rows}</div>
        <p class="legend small">
            <span class="key median">"Median"</span>
            <span class="key p90">"90th percentile"</span>
        </p>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::duration;

    #[test]
    fn durations_read_as_people_say_them() {
        let said: Vec<String> = [0.4, 45.0, 240.0, 3600.0, 7500.0, 90_000.0].iter().map(|s| duration(*s)).collect();
        assert_eq!(said, ["0 s", "45 s", "4 min", "1 h", "2 h 5 min", "1 d 1 h"]);
    }
}
