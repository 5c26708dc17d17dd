//! A change to a user that leaves a waiting payment with nobody able to
//! approve it stops money the business expects to move (a payroll nobody
//! can release). A reduction of authority still takes effect at once — an
//! approver being removed must stop counting now, not when a second admin
//! agrees — so the change says which payments it strands, to the admin
//! who made it and in the audit trail, and a change that also grants
//! something lists them for the admin who confirms it.

use super::*;
use crate::decision::eligibility::Tenancy;

/// How many waiting proposals are looked at (oldest first).
const WAITING_READ: u32 = 500;
/// How many stranded payments a change names before "and N more".
const NAMED: usize = 3;

/// The lines saying which waiting payments applying `stored` (a user
/// change) would leave with fewer possible approvers than they still need,
/// fewer than today (a payroll only ben could half-approve, nobody at all
/// after); empty when none would.
pub(super) async fn stranded(
    conn: &mut Conn,
    settings: &crate::config::Settings,
    tenant: &str,
    stored: &Stored,
    now: DateTime<Utc>,
) -> Result<Vec<String>, ChangeError> {
    let Stored::User { username, roles, limits, .. } = stored else { return Ok(Vec::new()) };
    let waiting = store::proposals::waiting_in(conn, tenant, WAITING_READ).await?;
    if waiting.is_empty() {
        return Ok(Vec::new());
    }
    let before = Tenancy::load_in(conn, settings, tenant, now).await?;
    let after = before.with_user_as(username, roles, limits);
    let mut found = Vec::new();
    for row in &waiting {
        let given = store::proposals::approvals_in_round(conn, &row.id, row.approval_round).await?;
        let given = crate::decision::delegation::Given::of(&given);
        let missing = usize::from(row.required_approvals.max(1)).saturating_sub(given.counted.len()).max(1);
        let approvable = crate::decision::approval::approve::Approvable::from(row);
        let (could, can) = (before.eligible(&approvable, &given).len(), after.eligible(&approvable, &given).len());
        // Short of what it needs afterwards, and because of this change.
        if can < missing && can < could {
            found.push(format!(
                "{} to {} ({})",
                row.request.currency.format_minor(row.amount_minor),
                row.request.destination.legal_name,
                row.id
            ));
        }
    }
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let count = found.len();
    let mut named: Vec<String> = found.into_iter().take(NAMED).collect();
    if count > NAMED {
        named.push(format!("{} more", count - NAMED));
    }
    let payments = if count == 1 { "1 waiting payment".to_owned() } else { format!("{count} waiting payments") };
    let needs = if count == 1 { "it needs" } else { "they need" };
    Ok(vec![format!("Leaves {payments} without the approvers {needs}: {}", named.join("; "))])
}
