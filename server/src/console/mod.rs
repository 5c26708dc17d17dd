//! The server's implementation of the console port (`app::console`): the
//! pages' data, built from the same use cases and views as the APIs.
//!
//! Why this file is long: it is the console port's one implementation, each
//! page's data built where its reads are; the parts that stand alone live
//! beside it (`reach`, `waits`, `human_loop`, `rails`).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use app::console::{ConsolePort, PortFuture};
use app::views::{
    AdminData, AgentRow, ApprovalLine, BulkItem, BulkPage, ConsoleError, DelegationLine, HistoryLine, OperationItem,
    OperationsPage, PasskeyAdminRow, PayeeRow, PendingChangeRow, ProposalDetail, QueueItem, QueuePage, RailRecord,
    ReasonLine, RelatedLine, ResolvePage, SignalLine, TimelineLine, UserRow, Viewer,
};

pub(crate) use crate::decision::eligibility::Tenancy;
use crate::decision::queue::{ListQuery, QueueParams};
use crate::domain::{mask_account, mask_account_tagged, words, Currency, ProposalStatus};
use crate::intake::risk;
use crate::state::Shared;
use crate::store::{
    self,
    operations::{OpStatus, OperationRow},
    proposals::ProposalRow,
};

mod batches;
mod human_loop;
mod invoices;
pub mod policy;
mod rails;
mod reach;
mod waits;
use rails::rail_documents;
use waits::{approver_gap, missing, required_now, still_needed, why};

/// The session key of the admin page's one-time message (set by the admin
/// forms, read once by the page).
pub const ADMIN_FLASH: &str = "admin_flash";

/// The search fields as given, for the queue page to show again.
fn queue_search(params: &QueueParams) -> app::views::QueueSearch {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    app::views::QueueSearch {
        payee: text(&params.payee),
        currency: text(&params.currency),
        min: text(&params.min),
        max: text(&params.max),
        agent: text(&params.agent),
        invoice_id: text(&params.invoice_id),
        from: text(&params.from),
        to: text(&params.to),
    }
}

/// How many lapsed approvals the default queue shows above the pending ones.
const LAPSED_SHOWN: u32 = 25;

/// How many operations of each kind the operations page lists.
const OPERATIONS_LIMIT: u32 = 200;

/// The approvals (not rejections) of the current round, as the rules read them.
fn approved_by(view: &crate::intake::proposals::ProposalView) -> crate::decision::delegation::Given<'_> {
    crate::decision::delegation::Given::of_views(&view.approvals)
}

fn waiting(row: &ProposalRow) -> bool {
    crate::decision::approval::approve::awaits_decision(row.status)
}

/// A stored amount in its currency's words ("1,250.00 USD"); the bare
/// figures if the stored currency is not one we know.
fn stored_amount(minor: u64, currency: &str) -> String {
    Currency::parse(currency)
        .map(|c| c.format_minor(minor))
        .unwrap_or_else(|_| format!("{minor} {}", currency.to_uppercase()))
}

/// The console's data, for one request: a page and its title's count read
/// the tenant's people once between them.
pub struct ConsoleService {
    state: Shared,
    tenancy: tokio::sync::OnceCell<(String, Arc<Tenancy>)>,
}

pub(crate) use crate::flow::unavailable;

impl ConsoleService {
    pub fn new(state: Shared) -> Self {
        ConsoleService { state, tenancy: tokio::sync::OnceCell::new() }
    }

    /// The tenant's people, read once per request (a request has one viewer).
    async fn tenancy(&self, tenant: &str) -> Result<Arc<Tenancy>, ConsoleError> {
        let (of, tenancy) = self
            .tenancy
            .get_or_try_init(|| async {
                Ok((tenant.to_owned(), Arc::new(Tenancy::load(&self.state, tenant).await.map_err(unavailable)?)))
            })
            .await?;
        if of == tenant {
            Ok(tenancy.clone())
        } else {
            Ok(Arc::new(Tenancy::load(&self.state, tenant).await.map_err(unavailable)?))
        }
    }

    async fn queue_page(&self, viewer: &Viewer, query_string: String) -> Result<QueuePage, ConsoleError> {
        // Read before the rows: a change made after this is waited for.
        let change_seq = self.state.changes.published();
        let params = QueueParams::from_query(&query_string);
        let search = params.as_ref().map(queue_search).unwrap_or_default();
        let parsed = match &params {
            Ok(p) => ListQuery::parse(p)
                .map_err(|errors| errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect::<Vec<_>>()),
            Err(unknown) => Err(vec![unknown.clone()]),
        };
        let query = match parsed {
            Ok(query) => query,
            Err(errors) => {
                let (status, order) = params
                    .as_ref()
                    .map(|p| (p.status_or_default(), p.order_or_default()))
                    .unwrap_or(("pending_approval".into(), "newest".into()));
                return Ok(QueuePage {
                    change_seq,
                    now: store::ts(self.state.now()),
                    items: Vec::new(),
                    status,
                    order,
                    search,
                    errors,
                    next_query: None,
                });
            }
        };
        // The default queue's first page shows first the proposals whose
        // approval lapsed (the agent did not commit in time): approved once,
        // they need approving again, oldest first. A chosen status lists only
        // that status. The two lists are read at once, and with them who may
        // approve (the tenant's people).
        let defaulted = params.as_ref().is_ok_and(|p| p.status.as_deref().is_none_or(str::is_empty));
        let lapsed = (defaulted && query.cursor.is_none()).then(|| ListQuery {
            status: Some(ProposalStatus::ApprovalExpired),
            order: store::proposals::ListOrder::Oldest,
            filters: query.filters.clone(),
            limit: LAPSED_SHOWN,
            cursor: None,
        });
        let ((rows, next_cursor), first, tenancy) = tokio::try_join!(
            async { query.run(&self.state, &viewer.tenant_id, None).await.map_err(unavailable) },
            async {
                match &lapsed {
                    Some(lapsed) => Ok(lapsed.run(&self.state, &viewer.tenant_id, None).await.map_err(unavailable)?.0),
                    None => Ok(Vec::new()),
                }
            },
            self.tenancy(&viewer.tenant_id),
        )?;
        let rows = if first.is_empty() { rows } else { first.into_iter().chain(rows).collect() };
        // What the rows show, their signals (which matter while a decision
        // is awaited) and who was told about them: read at once, each on its
        // own read connection.
        let waiting_ids: Vec<&str> = rows.iter().filter(|r| waiting(r)).map(|r| r.id.as_str()).collect();
        let (views, signals_of, mut reach) = tokio::try_join!(
            async { crate::intake::proposals::views(&self.state, rows.clone()).await.map_err(unavailable) },
            async { risk::signals_while_waiting(&self.state, &rows).await.map_err(unavailable) },
            reach::of(&self.state, &tenancy, &waiting_ids),
        )?;
        let mut items = Vec::with_capacity(rows.len());
        for ((row, view), signals) in rows.iter().zip(views).zip(signals_of) {
            let c = &row.request;
            let approved = approved_by(&view);
            let approver_gap = if waiting(row) {
                let eligible = tenancy.eligible(&row.into(), &approved);
                approver_gap(missing(&self.state, row, &signals, approved.counted.len()), &eligible, c.currency.code())
            } else {
                None
            };
            let no_one_can_approve = approver_gap.is_some();
            items.push(QueueItem {
                id: row.id.clone(),
                status: row.status.as_str().into(),
                sentence: c.sentence(),
                amount: c.currency.format_minor(c.amount_minor),
                payee: c.destination.legal_name.clone(),
                payee_masked: mask_account_tagged(c.destination.id.expose()),
                invoice_id: c.invoice_id.as_ref().map(|i| i.to_string()),
                expires_at: store::ts(row.expires_at),
                approvals: approved.counted.len(),
                required_approvals: required_now(&self.state, row, &signals),
                signals: signals.iter().map(|s| s.label().to_owned()).collect(),
                no_one_can_approve,
                approver_gap,
                reach: reach.remove(&row.id),
            });
        }
        Ok(QueuePage {
            change_seq,
            now: store::ts(self.state.now()),
            items,
            status: query.status.map(|s| s.as_str().to_owned()).unwrap_or_else(|| "all".into()),
            order: query.order_name().into(),
            next_query: next_cursor.and_then(|c| params.ok().map(|p| p.with_cursor(&c))),
            search,
            errors: Vec::new(),
        })
    }

    /// The bulk page: `id=…` (repeated, at most `BULK_MAX`) and, after a
    /// decision, `outcome=<id>:<code>` (repeated).
    async fn bulk_page(&self, viewer: &Viewer, query: String) -> Result<BulkPage, ConsoleError> {
        let state = &self.state;
        let pairs: Vec<(String, String)> =
            serde_urlencoded::from_str(query.trim_start_matches('?')).unwrap_or_default();
        let ids = crate::decision::approval::approve::listed_ids(&pairs);
        let mut outcomes: HashMap<String, String> = HashMap::new();
        for (_, value) in pairs.iter().filter(|(k, _)| k == "outcome") {
            // A fixed code (the page words it); anything else is dropped.
            if let Some((id, code)) = value.split_once(':') {
                if code.len() <= 40 && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
                    outcomes.insert(id.to_owned(), code.to_owned());
                }
            }
        }
        let listed: Vec<&str> = ids.iter().map(String::as_str).collect();
        let rows = store::proposals::get_many(&state.db.read, &viewer.tenant_id, &listed).await.map_err(unavailable)?;
        let unknown = ids.len() - rows.len();
        let views = crate::intake::proposals::views(state, rows.clone()).await.map_err(unavailable)?;
        let tenancy = self.tenancy(&viewer.tenant_id).await?;
        let mut totals: std::collections::BTreeMap<String, (Currency, u64)> = std::collections::BTreeMap::new();
        let signals_of = risk::signals_while_waiting(state, &rows).await.map_err(unavailable)?;
        let pairs = crate::intake::duplicates::pairs(&rows);
        let mut items = Vec::with_capacity(rows.len());
        for ((row, view), signals) in rows.iter().zip(views).zip(signals_of) {
            let c = &row.request;
            let twins = pairs
                .iter()
                .filter_map(|(a, b)| if *a == row.id { Some(b) } else { (*b == row.id).then_some(a) })
                .cloned()
                .collect();
            let check = tenancy.check(&viewer.user_id, &row.into(), &approved_by(&view));
            if check.is_ok() {
                let total = totals.entry(c.currency.code().to_owned()).or_insert((c.currency, 0));
                total.1 = total.1.saturating_add(c.amount_minor);
            }
            items.push(BulkItem {
                id: row.id.clone(),
                status: row.status.as_str().into(),
                sentence: c.sentence(),
                amount: c.currency.format_minor(c.amount_minor),
                can_approve: check.is_ok(),
                approve_blocker: check.err().map(|why| why.message()),
                can_reject: viewer.can_approve() && waiting(row),
                signals: signals.iter().map(|s| s.label().to_owned()).collect(),
                twins,
                outcome: outcomes.get(&row.id).cloned(),
            });
        }
        Ok(BulkPage {
            items,
            approvable_totals: totals.values().map(|(currency, minor)| currency.format_minor(*minor)).collect(),
            unknown,
            done: !outcomes.is_empty(),
        })
    }

    async fn detail(&self, viewer: &Viewer, id: String) -> Result<ProposalDetail, ConsoleError> {
        let state = &self.state;
        // Read before the rows: a change made after this is waited for.
        let change_seq = state.changes.published();
        let row = store::proposals::get(&state.db.read, &viewer.tenant_id, &id)
            .await
            .map_err(unavailable)?
            .ok_or(ConsoleError::NotFound)?;
        let c = row.request.clone();
        // Every round, so an expired round's approvals stay in view.
        let every_round = store::proposals::approvals_all_rounds(&state.db.read, &row.id).await.map_err(unavailable)?;
        let view =
            crate::intake::proposals::view_given_rounds(state, row.clone(), &every_round).await.map_err(unavailable)?;
        let operation = view.operation.as_ref();
        let tenancy = self.tenancy(&viewer.tenant_id).await?;
        let name_of = |id: &str| tenancy.name_of(id);
        let assessment = risk::assess(state, &risk::Subject::of(&row)).await.map_err(unavailable)?;
        let invoice = self.invoice_match(&row, operation.is_some()).await?;
        let approved = approved_by(&view);
        let approve_blocker = tenancy.check(&viewer.user_id, &(&row).into(), &approved).err().map(|why| why.message());
        let approve_for: Vec<String> =
            tenancy.approvable_for(&viewer.user_id, &(&row).into(), &approved).into_iter().map(str::to_owned).collect();
        let delegations = if waiting(&row) {
            let line = |(delegate, delegator, until)| DelegationLine { delegate, delegator, until: store::ts(until) };
            tenancy.delegations_in_force().into_iter().map(line).collect()
        } else {
            Vec::new()
        };
        let (still_needed, approver_gap) = if waiting(&row) {
            let eligible = tenancy.eligible(&(&row).into(), &approved);
            let missing = missing(state, &row, &assessment.signals, approved.counted.len());
            let short = tenancy.unmet(&row.policy.groups, &approved.counted);
            let needed = still_needed(missing, &eligible, c.currency.code(), &short);
            (Some(needed), approver_gap(missing, &eligible, c.currency.code()))
        } else {
            (None, None)
        };
        let no_one_can_approve = approver_gap.is_some();
        let reach = reach::of(state, &tenancy, &[row.id.as_str()]).await?.remove(&row.id).unwrap_or_default();
        let timeline = store::audit::for_proposal(&state.db.read, &row.id)
            .await
            .map_err(unavailable)?
            .into_iter()
            .map(|e| {
                // In words: no audit code or actor prefix reaches a screen.
                let actor = words::audit_actor(&e.actor, name_of);
                TimelineLine { at: store::ts(e.at), actor, action: words::audit_action(&e.action) }
            })
            .collect();
        Ok(ProposalDetail {
            id: row.id.clone(),
            status: row.status.as_str().into(),
            kind: row.kind.clone(),
            sentence: c.sentence(),
            amount: c.currency.format_minor(c.amount_minor),
            payee_name: c.destination.legal_name.clone(),
            payee_masked: mask_account_tagged(c.destination.id.expose()),
            payee_trusted: row.payee_trusted,
            source_masked: c.source_account.masked(),
            source_label: state.settings.console.source_account_labels.get(c.source_account.expose()).cloned(),
            budget_today: self.budget_today(&row).await?,
            purpose: c.purpose_code.to_string(),
            invoice_id: c.invoice_id.as_ref().map(|i| i.to_string()),
            reference: c.reference.as_ref().map(|r| r.as_str().to_owned()),
            request_hash: row.request_hash.clone(),
            agent_id: row.agent_id.clone(),
            run_id: row.run_id.clone(),
            policy_outcome: words::policy_outcome(
                serde_json::to_value(view.policy.outcome).ok().as_ref().and_then(|v| v.as_str()).unwrap_or_default(),
            ),
            required_approvals: row.required_approvals,
            reasons: view
                .policy
                .reasons
                .iter()
                .map(|r| ReasonLine { rule: r.rule.clone(), message: r.message.clone() })
                .collect(),
            approvals: every_round
                .into_iter()
                .map(|a| ApprovalLine {
                    approver: match &a.on_behalf_of {
                        Some(whom) => format!("{} for {}", name_of(&a.approver_id), name_of(whom)),
                        None => words::audit_actor(&format!("user:{}", a.approver_id), name_of),
                    },
                    decision: words::decision(&a.decision),
                    reason: a.reason,
                    via: words::channel(&a.via),
                    at: store::ts(a.at),
                    round: a.round,
                })
                .collect(),
            change_seq,
            now: store::ts(state.now()),
            approval_round: row.approval_round,
            token_expires_at: self.token_expiry(&row).await?,
            token_ttl_secs: state.settings.approval.token_ttl_secs,
            timeline,
            created_at: store::ts(row.created_at),
            expires_at: store::ts(row.expires_at),
            // Someone who may approve only for others is not shown why they
            // cannot as themselves: the Approve-for buttons are their way.
            can_approve: approve_blocker.is_none(),
            approve_blocker: approve_blocker.filter(|_| approve_for.is_empty()),
            approve_for,
            delegations,
            can_reject: viewer.can_approve() && waiting(&row),
            still_needed,
            no_one_can_approve,
            approver_gap,
            reach,
            signals: assessment
                .signals
                .iter()
                .map(|s| SignalLine {
                    code: s.code.into(),
                    label: s.label().into(),
                    message: s.message.clone(),
                    related: s
                        .related
                        .iter()
                        .filter(|r| crate::domain::is_proposal_id(&r.id))
                        .map(|r| RelatedLine { id: r.id.clone(), status: r.status.label().to_owned() })
                        .collect(),
                })
                .collect(),
            twins: waits::twins(&assessment.signals),
            invoice,
            payee_history: assessment
                .history
                .iter()
                .take(risk::RECENT_SHOWN)
                .map(|e| HistoryLine {
                    id: e.id.clone(),
                    at: store::ts(e.created_at),
                    amount: stored_amount(e.amount_minor, &e.currency),
                    status: e.status.as_str().into(),
                })
                .collect(),
            operation_status: operation.map(|o| o.status.as_str().to_owned()),
            rail_reference: operation.and_then(|o| o.rail_reference.clone()),
            // The sentence only: the code is for agents and logs, not for people.
            operation_error: operation.and_then(|o| o.error.as_ref()).map(|e| e.message.clone()),
            action_required: operation.and_then(|o| o.action_required).map(str::to_owned),
            rail_evidence: match operation {
                Some(o) => self.rail_evidence(&row.tenant_id, &o.id).await?,
                None => None,
            },
        })
    }

    /// The operations page: `needs_review` (a human decides) and `unknown`
    /// (reconciliation is still reading the rail), of the viewer's tenant.
    async fn operations_page(&self, viewer: &Viewer) -> Result<OperationsPage, ConsoleError> {
        // Read before the rows: a change after it makes the page refetch.
        let change_seq = self.state.changes.published();
        let pool = &self.state.db.read;
        let tenant = &viewer.tenant_id;
        let needs_review = store::operations::of_tenant(pool, tenant, OpStatus::NeedsReview, OPERATIONS_LIMIT)
            .await
            .map_err(unavailable)?;
        let unknown = store::operations::of_tenant(pool, tenant, OpStatus::Unknown, OPERATIONS_LIMIT)
            .await
            .map_err(unavailable)?;
        let documents =
            store::bank::recent_documents(pool, tenant, false, OPERATIONS_LIMIT as usize).await.map_err(unavailable)?;
        Ok(OperationsPage {
            change_seq,
            needs_review: self.operation_items(tenant, needs_review).await?,
            reconciling: self.operation_items(tenant, unknown).await?,
            can_resolve: viewer.is_admin(),
            rail_documents: rail_documents(documents),
        })
    }

    /// The resolution page: the operation, and what the rail holds for it now.
    async fn resolution_page(&self, viewer: &Viewer, id: String) -> Result<ResolvePage, ConsoleError> {
        use crate::commit::operations::ResolveError;
        let who = crate::commit::operations::Resolver {
            user_id: viewer.user_id.clone(),
            tenant_id: viewer.tenant_id.clone(),
            roles: viewer.roles.clone(),
        };
        let (op, records, rail_error) = match crate::commit::operations::rail_candidates(&self.state, &who, &id).await {
            Ok((op, candidates)) => (op, candidates, None),
            Err(ResolveError::RailUnavailable) => {
                let op = store::operations::get(&self.state.db.read, &id)
                    .await
                    .map_err(unavailable)?
                    .filter(|o| o.tenant_id == viewer.tenant_id)
                    .ok_or(ConsoleError::NotFound)?;
                (op, Vec::new(), Some("The rail could not be read just now; reload to try again.".to_owned()))
            }
            Err(ResolveError::NotAnAdmin) => return Err(ConsoleError::Forbidden),
            Err(ResolveError::NotFound | ResolveError::InvalidState(_)) => return Err(ConsoleError::NotFound),
            Err(e) => return Err(unavailable(e)),
        };
        let currency = crate::domain::Currency::parse(&op.currency).ok();
        let amount = |minor: u64| currency.map(|c| c.format_minor(minor)).unwrap_or_else(|| minor.to_string());
        let records = records
            .into_iter()
            .map(|c| RailRecord {
                amount: amount(c.amount_minor),
                reference: c.reference,
                destination: c.destination,
                status: c.status.to_owned(),
                mismatch: c.mismatch,
            })
            .collect();
        let kind = op.kind.clone();
        let operation = self.operation_items(&viewer.tenant_id, vec![op]).await?.pop().ok_or(ConsoleError::NotFound)?;
        Ok(ResolvePage { operation, kind, records, rail_error })
    }

    async fn operation_items(&self, tenant: &str, ops: Vec<OperationRow>) -> Result<Vec<OperationItem>, ConsoleError> {
        let mut items = Vec::with_capacity(ops.len());
        for op in ops {
            let row = store::proposals::get(&self.state.db.read, tenant, &op.proposal_id).await.map_err(unavailable)?;
            let sentence = match row {
                Some(row) => row.request.sentence(),
                None => format!("Proposal {}", op.proposal_id),
            };
            let amount = stored_amount(op.amount_minor, &op.currency);
            items.push(OperationItem {
                why: why(&op, self.state.now()),
                code: op.error_code.clone(),
                id: op.id,
                proposal_id: op.proposal_id,
                status: op.status.as_str().to_owned(),
                sentence,
                amount,
                idempotency_key: op.idempotency_key,
                rail_reference: op.rail_reference,
                created_at: store::ts(op.created_at),
                updated_at: store::ts(op.updated_at),
            });
        }
        Ok(items)
    }

    /// When the approval token expires, while the proposal is approved
    /// (the token itself goes only to the agent).
    async fn token_expiry(&self, row: &ProposalRow) -> Result<Option<String>, ConsoleError> {
        if row.status != ProposalStatus::Approved {
            return Ok(None);
        }
        let bundle =
            store::proposals::bundle(&self.state.db.read, &row.tenant_id, &row.id).await.map_err(unavailable)?;
        Ok(bundle.and_then(|b| b.token).filter(|t| t.used_at.is_none()).map(|t| store::ts(t.expires_at)))
    }

    /// "1,250.00 USD of 50,000.00 USD used today", when the tenant has a
    /// daily budget in the proposal's currency.
    async fn budget_today(&self, row: &ProposalRow) -> Result<Option<String>, ConsoleError> {
        let mut conn = self.state.db.reader().await.map_err(unavailable)?;
        let budgets = store::directory::budgets_of(&mut conn, &row.tenant_id).await.map_err(unavailable)?;
        let Some(limit) = budgets.get(&row.currency).copied() else { return Ok(None) };
        let day = crate::commit::budget_day(self.state.now());
        let used =
            store::operations::reserved(&mut conn, &row.tenant_id, &row.currency, &day).await.map_err(unavailable)?;
        let currency = row.request.currency;
        Ok(Some(format!("{} of {} used today", currency.format_minor(used), currency.format_minor(limit))))
    }

    async fn admin_data(
        &self,
        viewer: &Viewer,
        session: Option<tower_sessions::Session>,
    ) -> Result<AdminData, ConsoleError> {
        if !viewer.is_admin() {
            return Err(ConsoleError::Forbidden);
        }
        let state = &self.state;
        let mut conn = state.db.reader().await.map_err(unavailable)?;
        let users = store::directory::users_of(&mut conn, &viewer.tenant_id).await.map_err(unavailable)?;
        let names: std::collections::HashMap<String, String> =
            users.iter().map(|u| (u.id.clone(), u.username.clone())).collect();

        let agents = store::directory::agents_of(&state.db.read, &viewer.tenant_id).await.map_err(unavailable)?;
        let payees = store::directory::payees_of(&state.db.read, &viewer.tenant_id).await.map_err(unavailable)?;
        let webhooks = crate::notify::webhooks::overview(&state.db, &viewer.tenant_id).await.map_err(unavailable)?;
        let freezes = store::freezes::of_tenant(&state.db.read, &viewer.tenant_id).await.map_err(unavailable)?;
        let flash = match session {
            Some(s) => s.remove::<String>(ADMIN_FLASH).await.ok().flatten(),
            None => None,
        };
        let admin = crate::decision::registry_changes::Admin {
            user_id: viewer.user_id.clone(),
            username: viewer.username.clone(),
            tenant_id: viewer.tenant_id.clone(),
            roles: viewer.roles.clone(),
        };
        let passkeys = crate::people::passkeys::admin::list(state, &admin, state.now())
            .await
            .map_err(unavailable)?
            .into_iter()
            .map(|listed| {
                let p = listed.passkey;
                let print = crate::people::passkeys::registry::key_fingerprint(&p);
                PasskeyAdminRow {
                    username: names.get(&p.user_id).cloned().unwrap_or_else(|| p.user_id.clone()),
                    fingerprint: crate::people::passkeys::registry::short(&print).to_owned(),
                    created_at: store::ts(p.created_at),
                    usable_from: (!p.usable_at(state.now())).then(|| p.usable_from.map(store::ts)).flatten(),
                    confirmed_by: p
                        .confirmed_by
                        .as_ref()
                        .map(|id| names.get(id).cloned().unwrap_or_else(|| id.clone())),
                    blocker: listed.blocker.map(|b| {
                        let mut chars = b.chars();
                        chars
                            .next()
                            .map(|c| c.to_uppercase().chain(chars).collect::<String>() + ".")
                            .unwrap_or_default()
                    }),
                    id: p.id,
                    name: p.name,
                }
            })
            .collect();
        let pending_changes = crate::decision::registry_changes::pending(state, &admin)
            .await
            .map_err(unavailable)?
            .into_iter()
            .map(|c| PendingChangeRow {
                proposed_by: names.get(&c.proposed_by).cloned().unwrap_or(c.proposed_by),
                id: c.id,
                kind: c.kind,
                lines: c.lines,
                proposed_at: c.proposed_at,
                blocker: c.blocker,
                backtest: c.backtest.map(|r| r.lines()).unwrap_or_default(),
            })
            .collect();
        Ok(AdminData {
            users: users
                .into_iter()
                .map(|u| UserRow {
                    id: u.id,
                    username: u.username,
                    roles: u.roles.clone(),
                    limits: u
                        .approval_limits_minor
                        .iter()
                        .map(|(c, l)| crate::domain::Currency::parse(c).map(|c| c.format_minor(*l)).unwrap_or_default())
                        .collect(),
                    limit_amounts: u
                        .approval_limits_minor
                        .iter()
                        .filter_map(|(c, l)| {
                            crate::domain::Currency::parse(c).ok().map(|cur| (c.clone(), cur.format_amount(*l)))
                        })
                        .collect(),
                    slack_user_id: u.slack_user_id,
                })
                .collect(),
            agents: agents
                .into_iter()
                .map(|a| AgentRow {
                    key_holder: a.key_holder.map(|id| names.get(&id).cloned().unwrap_or(id)),
                    acts_for: names.get(&a.acts_for).cloned().unwrap_or(a.acts_for),
                    id: a.id,
                    source_accounts: a.source_accounts.iter().map(|s| mask_account(s)).collect(),
                    purposes: a.purposes,
                })
                .collect(),
            webhooks: webhooks.into_iter().map(crate::admin_view::webhook_row).collect(),
            payees: payees
                .into_iter()
                .map(|p| PayeeRow {
                    masked: crate::domain::mask_account_tagged(&p.id),
                    id: p.id,
                    legal_name: p.legal_name,
                    trusted: p.trusted,
                })
                .collect(),
            pending_changes,
            passkeys,
            currencies: state.currencies.allowed().map(|c| c.code().to_owned()).collect(),
            freezes: freezes.into_iter().map(|f| crate::admin_view::freeze_row(f, &names)).collect(),
            flash,
        })
    }
}

impl ConsolePort for ConsoleService {
    fn queue<'a>(&'a self, viewer: &'a Viewer, query: String) -> PortFuture<'a, QueuePage> {
        Box::pin(self.queue_page(viewer, query))
    }

    fn proposal<'a>(&'a self, viewer: &'a Viewer, id: String) -> PortFuture<'a, ProposalDetail> {
        Box::pin(self.detail(viewer, id))
    }

    fn bulk<'a>(&'a self, viewer: &'a Viewer, query: String) -> PortFuture<'a, BulkPage> {
        Box::pin(self.bulk_page(viewer, query))
    }

    fn human_loop<'a>(&'a self, viewer: &'a Viewer) -> PortFuture<'a, app::views::HumanLoopPage> {
        Box::pin(self.human_loop_page(viewer))
    }

    fn admin<'a>(&'a self, viewer: &'a Viewer) -> PortFuture<'a, AdminData> {
        // Read the request's session now, while the request context is current.
        let session = leptos::prelude::use_context::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<tower_sessions::Session>().cloned());
        Box::pin(self.admin_data(viewer, session))
    }

    fn policy<'a>(&'a self, viewer: &'a Viewer) -> PortFuture<'a, app::views::PolicyPage> {
        // Read the request's session now, while the request context is current.
        let session = leptos::prelude::use_context::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<tower_sessions::Session>().cloned());
        Box::pin(self.policy_page(viewer, session))
    }

    fn operations<'a>(&'a self, viewer: &'a Viewer) -> PortFuture<'a, OperationsPage> {
        Box::pin(self.operations_page(viewer))
    }

    fn resolution<'a>(&'a self, viewer: &'a Viewer, id: String) -> PortFuture<'a, ResolvePage> {
        Box::pin(self.resolution_page(viewer, id))
    }

    fn batches<'a>(&'a self, viewer: &'a Viewer) -> PortFuture<'a, app::views::BatchList> {
        Box::pin(self.batch_list(viewer))
    }

    fn batch<'a>(&'a self, viewer: &'a Viewer, id: String) -> PortFuture<'a, app::views::BatchReview> {
        Box::pin(self.batch_review(viewer, id))
    }

    fn waiting_count<'a>(&'a self, viewer: &'a Viewer) -> PortFuture<'a, u32> {
        Box::pin(async move {
            let tenancy = self.tenancy(&viewer.tenant_id).await?;
            crate::flow::waiting_count(&self.state, &tenancy, viewer).await
        })
    }

    fn wait_for_change(&self, max_secs: u64, seen: u64) -> Pin<Box<dyn Future<Output = u64> + Send + '_>> {
        Box::pin(async move {
            let wait = self.state.changes.any_since(seen);
            tokio::time::timeout(std::time::Duration::from_secs(max_secs), wait)
                .await
                .unwrap_or_else(|_| self.state.changes.published())
        })
    }
}

/// The single sign-on providers the sign-in page offers (docs/CONFIG.md,
/// "Single sign-on").
pub fn sign_in_options(settings: &crate::config::Settings) -> app::views::SignInOptions {
    let providers = crate::sso::providers(settings)
        .into_iter()
        .map(|p| app::views::SsoProvider { id: p.id, name: p.name })
        .collect();
    app::views::SignInOptions { providers }
}
