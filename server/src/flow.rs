//! The reviewer's way through the queue: which proposal comes next after a
//! decision, and how many wait for this reviewer (the count in the page
//! titles). "Waiting for you" is what the console's Approve button offers:
//! pending, and [`may_approve`](crate::approvals::may_approve) holds for
//! you now (the one rule `decide` enforces), oldest first.

use app::views::{ConsoleError, Viewer};

use crate::console::{unavailable, Tenancy};
use crate::domain::ProposalStatus;
use crate::state::AppState;
use crate::store;

/// Rows read per query while looking.
const PAGE: u32 = 100;
/// How many pending proposals one look reads at most: past that, the count
/// says "99+" anyway and the next item is whatever was found first.
const MAX_SCANNED: usize = 1_000;
/// The most the page titles count; more shows as "99+".
pub const COUNT_CAP: u32 = 100;

/// The pending proposals of `tenant` that `user_id` may approve now, oldest
/// first, `except` left out: the first of them and how many (up to `want`).
async fn waiting(
    state: &AppState,
    tenant: &str,
    user_id: &str,
    except: Option<&str>,
    want: usize,
) -> Result<(Option<String>, usize), ConsoleError> {
    let tenancy = Tenancy::load(state, tenant).await?;
    let (mut first, mut count, mut scanned) = (None, 0, 0);
    let mut cursor: Option<String> = None;
    let filters = store::proposals::ListFilters::default();
    loop {
        let listing = store::proposals::Listing {
            tenant_id: tenant,
            agent_id: None,
            status: Some(ProposalStatus::PendingApproval),
            order: store::proposals::ListOrder::Oldest,
            filters: &filters,
            limit: PAGE,
            cursor: cursor.as_deref(),
        };
        let (rows, more) = store::proposals::list(&state.db.read, &listing).await.map_err(unavailable)?;
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        let approvals = store::proposals::approvals_of(&state.db.read, &ids).await.map_err(unavailable)?;
        for row in rows.iter().filter(|r| Some(r.id.as_str()) != except) {
            let approved_by: Vec<&str> = approvals
                .iter()
                .filter(|a| a.proposal_id == row.id && a.decision == "approve")
                .map(|a| a.approver_id.as_str())
                .collect();
            if tenancy.check(user_id, row, &approved_by).is_ok() {
                first.get_or_insert_with(|| row.id.clone());
                count += 1;
                if count >= want {
                    return Ok((first, count));
                }
            }
        }
        scanned += rows.len();
        match rows.last() {
            Some(last) if more && scanned < MAX_SCANNED => cursor = Some(last.id.clone()),
            _ => return Ok((first, count)),
        }
    }
}

/// The proposal to show a reviewer after they decided on `decided`: the
/// oldest other one waiting for their approval, if any.
pub async fn next_after(
    state: &AppState,
    tenant: &str,
    user_id: &str,
    decided: &str,
) -> Result<Option<String>, ConsoleError> {
    Ok(waiting(state, tenant, user_id, Some(decided), 1).await?.0)
}

/// How many proposals wait for `viewer`'s approval, up to [`COUNT_CAP`];
/// zero for anyone who cannot approve.
pub async fn waiting_count(state: &AppState, viewer: &Viewer) -> Result<u32, ConsoleError> {
    if !viewer.can_approve() {
        return Ok(0);
    }
    let (_, count) = waiting(state, &viewer.tenant_id, &viewer.user_id, None, COUNT_CAP as usize).await?;
    Ok(u32::try_from(count).unwrap_or(COUNT_CAP))
}
