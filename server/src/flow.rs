//! The reviewer's way through the queue: which proposal comes next after a
//! decision, and how many wait for this reviewer (the count in the page
//! titles). "Waiting for you" is what the console's Approve button offers:
//! awaiting a decision, and [`may_approve`](crate::decision::approval::approve::may_approve)
//! holds for you now (the one rule `decide` enforces). Those whose approval
//! lapsed (the agent did not commit in time) come first, then the pending
//! ones, each oldest first: a lapsed approval is a payment someone already
//! said yes to, waiting again.

use app::views::{ConsoleError, Viewer};

use crate::decision::eligibility::Tenancy;
use crate::domain::ProposalStatus;
use crate::platform::deps::Store;
use crate::store;

/// A failure to read what a console page shows: logged, and the page says
/// the data is unavailable (never the cause).
pub(crate) fn unavailable(e: impl std::fmt::Display) -> ConsoleError {
    tracing::error!(error = %e, "console data failed to load");
    ConsoleError::Unavailable
}

/// Rows read per query while looking.
const PAGE: u32 = 100;
/// How many pending proposals one look reads at most: past that, the count
/// says "99+" anyway and the next item is whatever was found first.
const MAX_SCANNED: usize = 1_000;
/// The most the page titles count; more shows as "99+".
pub const COUNT_CAP: u32 = 100;

/// The pending proposals of `tenant` that `user_id` may approve now, oldest
/// first, `except` left out: the first of them and how many (up to `want`).
/// Each page is one statement of a few columns per proposal, with the
/// reviewer's own approval in the round looked up in SQL
/// (`store::proposals::pending_for`); [`Tenancy::check`] decides.
async fn waiting(
    state: &impl Store,
    tenancy: &Tenancy,
    tenant: &str,
    user_id: &str,
    except: Option<&str>,
    want: usize,
) -> Result<(Option<String>, usize), ConsoleError> {
    let (mut first, mut count, mut scanned) = (None, 0, 0);
    for status in [ProposalStatus::ApprovalExpired, ProposalStatus::PendingApproval] {
        let mut cursor: Option<String> = None;
        loop {
            let (rows, more) =
                store::proposals::pending_for(&state.db().read, tenant, user_id, status, cursor.as_deref(), PAGE)
                    .await
                    .map_err(unavailable)?;
            for row in rows.iter().filter(|r| Some(r.id.as_str()) != except) {
                // Approvals as this reviewer: theirs is the one that matters.
                let mine = if row.approved { vec![user_id] } else { Vec::new() };
                let given = crate::decision::delegation::Given { people: mine.clone(), counted: mine };
                if tenancy.check(user_id, &row.into(), &given).is_ok() {
                    first.get_or_insert_with(|| row.id.clone());
                    count += 1;
                    if count >= want {
                        return Ok((first, count));
                    }
                }
            }
            scanned += rows.len();
            if scanned >= MAX_SCANNED {
                return Ok((first, count));
            }
            match rows.last() {
                Some(last) if more => cursor = Some(last.id.clone()),
                _ => break,
            }
        }
    }
    Ok((first, count))
}

/// The proposal to show a reviewer after they decided on `decided`: the
/// oldest other one waiting for their approval, if any.
pub async fn next_after(
    state: &(impl Store + crate::config::Config + crate::platform::clock::Clock),
    tenant: &str,
    user_id: &str,
    decided: &str,
) -> Result<Option<String>, ConsoleError> {
    let tenancy = Tenancy::load(state, tenant).await.map_err(unavailable)?;
    Ok(waiting(state, &tenancy, tenant, user_id, Some(decided), 1).await?.0)
}

/// How many proposals wait for `viewer`'s approval, up to [`COUNT_CAP`];
/// zero for anyone who cannot approve.
/// `tenancy` is the viewer's tenant's.
pub(crate) async fn waiting_count(state: &impl Store, tenancy: &Tenancy, viewer: &Viewer) -> Result<u32, ConsoleError> {
    if !viewer.can_approve() {
        return Ok(0);
    }
    let (_, count) = waiting(state, tenancy, &viewer.tenant_id, &viewer.user_id, None, COUNT_CAP as usize).await?;
    Ok(u32::try_from(count).unwrap_or(COUNT_CAP))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ProposalStatus;
    #[allow(unused_imports)]
    use crate::platform::deps::*;
    use crate::store::proposals::{ApprovalRow, ListFilters, ListOrder, Listing};
    use serde_json::json;

    /// The count as it was first written: every proposal awaiting a decision
    /// read whole (lapsed ones first), its approvals read apart, each checked
    /// by [`Tenancy::check`].
    async fn waiting_read_whole(
        state: &(impl Store + crate::config::Config + crate::platform::clock::Clock),
        tenant: &str,
        user_id: &str,
        except: Option<&str>,
    ) -> Vec<String> {
        let tenancy = Tenancy::load(state, tenant).await.unwrap();
        let filters = ListFilters::default();
        let mut rows = Vec::new();
        for status in [ProposalStatus::ApprovalExpired, ProposalStatus::PendingApproval] {
            let listing = Listing {
                tenant_id: tenant,
                agent_id: None,
                status: Some(status),
                order: ListOrder::Oldest,
                filters: &filters,
                limit: 10_000,
                cursor: None,
            };
            rows.extend(store::proposals::list(&state.db().read, &listing).await.unwrap().0);
        }
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        let approvals = store::proposals::approvals_of(&state.db().read, &ids).await.unwrap();
        rows.iter()
            .filter(|row| Some(row.id.as_str()) != except)
            .filter(|row| {
                let mine: Vec<ApprovalRow> = approvals.iter().filter(|a| a.proposal_id == row.id).cloned().collect();
                tenancy.check(user_id, &(*row).into(), &crate::decision::delegation::Given::of(&mine)).is_ok()
            })
            .map(|row| row.id.clone())
            .collect()
    }

    #[tokio::test]
    async fn the_count_and_the_next_one_are_what_may_approve_says_of_each_whole_proposal() {
        let dir = tempfile::tempdir().unwrap();
        let (state, _trigger, agent, users) = crate::platform::demo::loaded_for_test(dir.path()).await;
        let id_of = |name: &str| users.iter().find(|u| u.username == name).unwrap().id.clone();

        // Amounts within everyone's limits, above ada's (1,000.00), above
        // ana's (50,000.00); a currency ada has no limit in.
        let mut ids = Vec::new();
        for (i, (amount, currency)) in
            [(25_000, "USD"), (200_000, "USD"), (6_000_000, "USD"), (30_000, "EUR"), (40_000, "JPY"), (26_000, "USD")]
                .into_iter()
                .enumerate()
        {
            let body = json!({"run_id": format!("flow-{i}"), "amount_minor": amount, "currency": currency,
                "source_account": "acct_demo000000001234", "destination": "ba_northwind0007",
                "reference": "Invoice", "purpose_code": "vendor"});
            match crate::intake::proposals::propose(&state, &agent, &body, state.now()).await.unwrap() {
                crate::intake::proposals::Proposed::Created(v) => ids.push(v.id),
                crate::intake::proposals::Proposed::Existing(v) => panic!("{} existed", v.id),
            }
        }
        // ana approved the first (this round) and the second (an earlier
        // round); ben rejected the fourth; ada approved the last one.
        let mut tx = state.db().begin().await.unwrap();
        let given = |id: &str, who: &str, decision: &str| ApprovalRow {
            proposal_id: id.to_owned(),
            round: 1,
            approver_id: id_of(who),
            decision: decision.into(),
            reason: (decision == "reject").then(|| "No".into()),
            via: "console".into(),
            amr: "pwd".into(),
            at: state.now(),
            on_behalf_of: None,
            delegation_id: None,
        };
        store::proposals::insert_approval(&mut tx, &given(&ids[0], "ana", "approve")).await.unwrap();
        store::proposals::insert_approval(&mut tx, &given(&ids[1], "ana", "approve")).await.unwrap();
        store::proposals::next_round(&mut tx, &ids[1]).await.unwrap();
        store::proposals::insert_approval(&mut tx, &given(&ids[3], "ben", "reject")).await.unwrap();
        store::proposals::insert_approval(&mut tx, &given(&ids[5], "ada", "approve")).await.unwrap();
        // The fourth-newest lapsed: approved once, not committed in time.
        let lapsed = &ids[4];
        let now = state.now();
        for (from, to) in [
            (ProposalStatus::PendingApproval, ProposalStatus::Approved),
            (ProposalStatus::Approved, ProposalStatus::ApprovalExpired),
        ] {
            assert!(store::proposals::transition(&mut tx, lapsed, &[from], to, now).await.unwrap());
        }
        store::proposals::next_round(&mut tx, lapsed).await.unwrap();
        tx.commit().await.unwrap();

        let tenancy = Tenancy::load(&state, "demo").await.unwrap();
        let mut counted = Vec::new();
        for user in &users {
            for except in [None, ids.first().map(String::as_str), ids.get(2).map(String::as_str)] {
                let expected = waiting_read_whole(&state, "demo", &user.id, except).await;
                let (first, count) = waiting(&state, &tenancy, "demo", &user.id, except, 100).await.unwrap();
                assert_eq!(
                    (first, count),
                    (expected.first().cloned(), expected.len()),
                    "{} except {except:?}",
                    user.username
                );
                let (next, one) = waiting(&state, &tenancy, "demo", &user.id, except, 1).await.unwrap();
                assert_eq!((next, one), (expected.first().cloned(), expected.len().min(1)));
            }
            counted.push((user.username.as_str(), waiting_read_whole(&state, "demo", &user.id, None).await.len()));
        }
        // The cases above are all there: not everyone sees the same count.
        let count_of = |name| counted.iter().find(|(n, _)| *n == name).unwrap().1;
        assert_eq!(count_of("maya"), 0, "the person the agent acts for");
        assert_eq!(count_of("vic"), 0, "a viewer");
        assert!(count_of("ana") < count_of("ben"), "{counted:?}");
        assert!(count_of("ada") < count_of("ben"), "{counted:?}");
        // The lapsed one (JPY, which ben may approve) comes first for him,
        // though four others are older.
        let ben = id_of("ben");
        let (first, _) = waiting(&state, &tenancy, "demo", &ben, None, 1).await.unwrap();
        assert_eq!(first.as_deref(), Some(ids[4].as_str()));
    }
}
