//! What the queue and the detail page say about reaching a waiting
//! proposal's approvers: when its tenant's rule reminds
//! and escalates, and who has been told, by which channels.

use std::collections::HashMap;

use app::views::{ConsoleError, NotifiedLine, ReachLine};

use crate::decision::eligibility::Tenancy;
use crate::flow::unavailable;
use crate::state::Shared;
use crate::store::{self, reach::Channel, reach::Kind};

/// The reach of each of `ids` (all of one tenant), by proposal id; a
/// proposal nobody was told about and no rule covers has none.
pub(super) async fn of(
    state: &Shared,
    tenancy: &Tenancy,
    ids: &[&str],
) -> Result<HashMap<String, ReachLine>, ConsoleError> {
    let mut lines: HashMap<String, ReachLine> = HashMap::new();
    if ids.is_empty() {
        return Ok(lines);
    }
    // Two statements, read at once.
    let (escalations, told) = tokio::try_join!(
        store::escalations::of(&state.db.read, ids),
        store::reach::told_about(&state.db.read, ids, crate::notify::worker::QUIET),
    )
    .map_err(unavailable)?;
    for e in escalations {
        lines.insert(
            e.proposal_id,
            ReachLine {
                remind_at: e.remind_at.map(store::ts),
                escalate_at: e.escalate_at.map(store::ts),
                escalate_to: e.escalate_to,
                escalated_at: e.escalated_at.map(store::ts),
                notified: Vec::new(),
            },
        );
    }
    // Per proposal, per person: their channels, last time, and why not.
    let mut people: HashMap<(String, String), NotifiedLine> = HashMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for t in told {
        let key = (t.proposal_id.clone(), t.user_id.clone());
        let line = people.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            NotifiedLine {
                username: tenancy.name_of(&t.user_id),
                channels: String::new(),
                at: None,
                escalated: false,
                quiet: false,
            }
        });
        if !t.delivered() {
            line.quiet = true;
            continue;
        }
        let channel = match t.channel {
            Channel::Email => "email",
            Channel::Push => "push",
            Channel::Fanout => continue,
        };
        if !line.channels.split(" and ").any(|c| c == channel) {
            line.channels =
                if line.channels.is_empty() { channel.into() } else { format!("{} and {channel}", line.channels) };
        }
        line.escalated |= t.kind == Kind::Escalated;
        line.at = t.finished_at.map(store::ts).or(line.at.take());
    }
    for key in order {
        if let Some(line) = people.remove(&key) {
            lines.entry(key.0).or_default().notified.push(line);
        }
    }
    Ok(lines)
}
