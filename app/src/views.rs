//! Serializable view types the pages render. Built by the server from the
//! domain; no SQL, no crypto, no HTTP client here.

use countersign_domain::Role;
use serde::{Deserialize, Serialize};

/// The signed-in user, as the pages need them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct Viewer {
    pub user_id: String,
    pub username: String,
    pub tenant_id: String,
    pub roles: Vec<Role>,
    /// Goes back in every form (`csrf_token`) and JSON call (`X-CSRF-Token`).
    pub csrf_token: String,
    /// Notices about their own account not read yet (a passkey added or
    /// removed, an enrolment code issued): flagged in the top bar.
    pub unread_notices: u32,
    /// The console's idle timeout (`console.idle_timeout_secs`): the page
    /// warns a minute before it.
    pub idle_timeout_secs: u64,
}

impl Viewer {
    pub fn can_approve(&self) -> bool {
        self.roles.contains(&Role::Approver)
    }
    pub fn is_admin(&self) -> bool {
        self.roles.contains(&Role::Admin)
    }
    pub fn exports_evidence(&self) -> bool {
        Role::exports_evidence(&self.roles)
    }
}

/// The sign-in page's other ways in: the single sign-on providers
/// configured on the server (`[oidc.providers]`), by id and label.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize,
)]
pub struct SignInOptions {
    pub providers: Vec<SsoProvider>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct SsoProvider {
    pub id: String,
    /// "Sign in with {name}".
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct QueueItem {
    pub id: String,
    pub status: String,
    /// "Pay Acme Supplies Ltd, invoice 1842, 250.00 USD, for vendor, from acct_…1234"
    pub sentence: String,
    pub amount: String,
    pub payee: String,
    /// The payee's account, masked with its tag (`ba_…0007 #fjjk`).
    pub payee_masked: String,
    pub invoice_id: Option<String>,
    /// When it expires if nobody decides.
    pub expires_at: String,
    pub approvals: usize,
    pub required_approvals: u8,
    /// Short labels of its risk signals ("First payment", …).
    pub signals: Vec<String>,
    /// Waiting, and the tenant's people cannot give every approval missing.
    pub no_one_can_approve: bool,
    /// Then, exactly what is missing ("Only ben can approve: 1 more
    /// approver with a USD limit needed"; "No one can approve: …").
    pub approver_gap: Option<String>,
    /// Its reminders and escalation, and who has been told (while it waits).
    pub reach: Option<ReachLine>,
}

/// How a waiting proposal reaches its approvers: the tenant's escalation
/// rule's steps, and the people notified so far.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize,
)]
pub struct ReachLine {
    /// When its approvers are reminded (RFC 3339).
    pub remind_at: Option<String>,
    /// When it escalates, and to which group.
    pub escalate_at: Option<String>,
    pub escalate_to: Option<String>,
    /// When it did escalate.
    pub escalated_at: Option<String>,
    /// Each person told about it (or held back by their quiet hours).
    pub notified: Vec<NotifiedLine>,
}

/// One person and how they were told.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct NotifiedLine {
    pub username: String,
    /// "push and email"; empty when nothing reached them.
    pub channels: String,
    /// When the last notice reached them.
    pub at: Option<String>,
    /// Escalated to them.
    pub escalated: bool,
    /// Not told (at least once) because of their quiet hours.
    pub quiet: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct QueuePage {
    /// How many changes had been published when this page was read: the
    /// live update waits for more than this.
    pub change_seq: u64,
    /// The server's time when this was read ("expires in 23 h").
    pub now: String,
    pub items: Vec<QueueItem>,
    pub status: String,
    pub order: String,
    /// The search as given, to fill the form again.
    pub search: QueueSearch,
    /// Why the search could not run (one line per bad field); no items then.
    pub errors: Vec<String>,
    /// The query string of the next page (this search, the next cursor).
    pub next_query: Option<String>,
}

/// The queue's search fields, as typed (empty: not searched on).
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize,
)]
pub struct QueueSearch {
    pub payee: String,
    pub currency: String,
    pub min: String,
    pub max: String,
    pub agent: String,
    pub invoice_id: String,
    pub from: String,
    pub to: String,
}

impl QueueSearch {
    pub fn is_empty(&self) -> bool {
        self == &QueueSearch::default()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct ReasonLine {
    pub rule: String,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct ApprovalLine {
    pub approver: String,
    pub decision: String,
    pub reason: Option<String>,
    pub via: String,
    pub at: String,
    /// The approval round it was given in (a new round starts when an
    /// approval expires unused).
    pub round: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct TimelineLine {
    pub at: String,
    pub actor: String,
    pub action: String,
}

/// A delegation in force, as the proposal page says it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct DelegationLine {
    pub delegate: String,
    pub delegator: String,
    pub until: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct ProposalDetail {
    pub id: String,
    pub status: String,
    pub kind: String,
    pub sentence: String,
    pub amount: String,
    pub payee_name: String,
    pub payee_masked: String,
    pub payee_trusted: bool,
    pub source_masked: String,
    pub purpose: String,
    pub invoice_id: Option<String>,
    /// Untrusted text written by the agent: shown escaped, labelled as such.
    pub reference: Option<String>,
    pub request_hash: String,
    pub agent_id: String,
    pub run_id: String,
    pub policy_outcome: String,
    pub required_approvals: u8,
    pub reasons: Vec<ReasonLine>,
    pub approvals: Vec<ApprovalLine>,
    pub timeline: Vec<TimelineLine>,
    pub created_at: String,
    pub expires_at: String,
    /// How many changes had been published when this was read: the live
    /// page waits for more than this, then reads it again.
    pub change_seq: u64,
    /// The server's time when this was read (relative times on first render).
    pub now: String,
    /// The current approval round (1 unless an approval expired unused).
    pub approval_round: i64,
    /// When the approval token expires, while the proposal is approved.
    pub token_expires_at: Option<String>,
    /// How long an approval token lives (`approval.token_ttl_secs`).
    pub token_ttl_secs: u64,
    /// Whether the viewer may approve now (the server's `may_approve`), and
    /// if not, why; rejecting needs only the role and a waiting proposal.
    pub can_approve: bool,
    pub approve_blocker: Option<String>,
    pub can_reject: bool,
    /// The people the viewer may approve this for now, under delegations of
    /// theirs in force (usernames).
    pub approve_for: Vec<String>,
    /// While it waits: each delegation in force that lets someone approve it
    /// for someone away ("ben approves for ana until …").
    pub delegations: Vec<DelegationLine>,
    /// "1 more approval needed, from: ben or carol", while it waits.
    pub still_needed: Option<String>,
    /// Waiting, and the tenant's people cannot give every approval missing.
    pub no_one_can_approve: bool,
    /// Then, exactly what is missing (as on the queue).
    pub approver_gap: Option<String>,
    /// Its reminders and escalation, and who has been told.
    pub reach: ReachLine,
    pub signals: Vec<SignalLine>,
    /// The other proposals for the same invoice (same payee, same invoice
    /// id), shown beside this one.
    pub twins: Vec<TwinLine>,
    /// The invoice it names, checked against the tenant's invoice registry
    /// as it stands now (`None`: it names no invoice).
    pub invoice: Option<InvoiceMatchLine>,
    /// What reviewers call the source account (`console.source_account_labels`).
    pub source_label: Option<String>,
    /// "1,250.00 of 50,000.00 USD used today", when the tenant has a budget.
    pub budget_today: Option<String>,
    /// The payee's proposals before this one, newest first.
    pub payee_history: Vec<HistoryLine>,
    /// The payment's durable operation, once the agent has committed.
    pub operation_status: Option<String>,
    pub rail_reference: Option<String>,
    /// What went wrong with a failed, too-late or needs-review operation, in
    /// a sentence (the machine code stays in the API).
    pub operation_error: Option<String>,
    /// `escalate_to_ops` when a reversal came too late.
    pub action_required: Option<String>,
    /// The rail's own evidence for the payment, where its word is a
    /// document (a bank statement that booked it, a status report that
    /// rejected it): kind, message id, file and when it came.
    pub rail_evidence: Option<String>,
}

/// One risk signal: its code (`duplicate_invoice`, …), a label and a sentence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct SignalLine {
    pub code: String,
    pub label: String,
    pub message: String,
    /// The other proposals it is about (a duplicate invoice's), linked.
    pub related: Vec<RelatedLine>,
}

/// Another proposal for the same invoice, as the detail page sets it beside
/// this one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct TwinLine {
    pub id: String,
    /// Its status code (the badge words it).
    pub status: String,
    pub amount: String,
    pub agent_id: String,
    pub created_at: String,
    /// Approved or paid: approving this one then needs a "not a duplicate"
    /// statement and one more approver.
    pub approved_or_paid: bool,
}

/// A payment beside the invoice it names: each check in plain words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct InvoiceMatchLine {
    pub number: String,
    /// `matches`, `mismatch` or `unregistered`.
    pub verdict: String,
    /// "Matches invoice INV-1842", "Does not match invoice INV-1842: 2 checks fail", …
    pub summary: String,
    /// The registered invoice's facts, when there is one.
    pub vendor: Option<String>,
    pub amount: Option<String>,
    pub open: Option<String>,
    pub due_date: Option<String>,
    pub status: Option<String>,
    pub checks: Vec<InvoiceCheckLine>,
    /// The invoice's note from the accounting export: untrusted text.
    pub note: Option<String>,
}

/// One check of a payment against its invoice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct InvoiceCheckLine {
    /// `registered`, `open`, `payee_account`, `vendor_name`, `currency`, `amount`.
    pub code: String,
    pub ok: bool,
    pub message: String,
}

/// Another proposal a signal names: its id (for the link) and its status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct RelatedLine {
    pub id: String,
    pub status: String,
}

impl ProposalDetail {
    /// The proposal's data without what changes on every read (the change
    /// count, the clock): equal when nothing about the proposal changed.
    pub fn without_clock(mut self) -> ProposalDetail {
        self.change_seq = 0;
        self.now = String::new();
        self
    }
}

/// The bulk decision page: the listed proposals, what the viewer may do
/// with each, and the totals; after a decision, each one's outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct BulkPage {
    pub items: Vec<BulkItem>,
    /// Per currency, of the proposals the viewer may approve ("1,250.00 USD").
    pub approvable_totals: Vec<String>,
    /// Listed ids that are not proposals of the viewer's tenant.
    pub unknown: usize,
    /// Whether this shows the outcome of a decision just made.
    pub done: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct BulkItem {
    pub id: String,
    pub status: String,
    pub sentence: String,
    pub amount: String,
    pub can_approve: bool,
    /// Why the viewer cannot approve it, if they cannot.
    pub approve_blocker: Option<String>,
    pub can_reject: bool,
    /// Labels of its risk signals.
    pub signals: Vec<String>,
    /// The other listed proposals for the same invoice: while any is
    /// listed, the set cannot be approved.
    pub twins: Vec<String>,
    /// After a decision: `approved`, `rejected` or why not (a fixed code,
    /// as the decision form's: `approver_limit`, `invalid_state`, …).
    pub outcome: Option<String>,
}

/// An earlier proposal to the same payee.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct HistoryLine {
    pub id: String,
    pub at: String,
    pub amount: String,
    pub status: String,
}

/// One operation on the operations page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct OperationItem {
    pub id: String,
    pub proposal_id: String,
    pub status: String,
    /// The proposal's canonical request restated in words.
    pub sentence: String,
    pub amount: String,
    pub idempotency_key: String,
    pub rail_reference: Option<String>,
    /// Why it waits, in words: the reconciler's finding, or what is being
    /// checked and when.
    pub why: String,
    /// The finding's code (`no_rail_record`, …), for scripts and tests: on
    /// the page as a data attribute, never as text.
    pub code: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// Operations a human must settle (`needs_review`), and those reconciliation
/// is still working on (`unknown`), of the viewer's tenant, newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct OperationsPage {
    /// The change count when read: the page waits for the next from here.
    pub change_seq: u64,
    pub needs_review: Vec<OperationItem>,
    pub reconciling: Vec<OperationItem>,
    /// Whether the viewer may resolve (admins only).
    pub can_resolve: bool,
    /// The documents the tenant's bank sent lately, those with problems first.
    pub rail_documents: Vec<RailDocumentItem>,
}

/// A document a bank rail read (a status report, a statement), and what
/// was wrong with it, in words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct RailDocumentItem {
    pub id: String,
    pub rail: String,
    pub file_name: String,
    /// `camt.054.001.08`, `pain.002.001.12`, or `unreadable`.
    pub kind: String,
    pub message_id: Option<String>,
    /// `applied`, `duplicate` or `refused`.
    pub status: String,
    pub entries: i64,
    pub received_at: String,
    /// Each problem's sentence, and its code (for scripts and tests).
    pub problems: Vec<String>,
    pub problem_codes: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct UserRow {
    pub id: String,
    pub username: String,
    pub roles: Vec<Role>,
    pub limits: Vec<String>,
    /// Each limit as the user form takes it: currency code → "50,000.00".
    pub limit_amounts: std::collections::BTreeMap<String, String>,
    pub slack_user_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct AgentRow {
    pub id: String,
    pub acts_for: String,
    pub source_accounts: Vec<String>,
    pub purposes: Vec<String>,
    /// The username its key was shown to on the console (they may not
    /// approve its payments); `None`: the operator made it.
    pub key_holder: Option<String>,
}

/// A passkey of the tenant, as the admin page lists it (no key material).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct PasskeyAdminRow {
    pub id: String,
    pub username: String,
    pub name: String,
    /// The first hex digits of its public key's SHA-256 (`sha256:…`).
    pub fingerprint: String,
    pub created_at: String,
    /// While it cools off: from when it can approve.
    pub usable_from: Option<String>,
    /// The admin who confirmed it early, if one did.
    pub confirmed_by: Option<String>,
    /// Why the viewer cannot confirm it (`None`: Confirm is offered). Only
    /// meaningful while it cools off.
    pub blocker: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct PayeeRow {
    pub id: String,
    pub masked: String,
    pub legal_name: String,
    pub trusted: bool,
}

/// A registry change proposed by one admin, waiting for a second.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct PendingChangeRow {
    pub id: String,
    /// user | agent | payee | slack_link | passkey_enrolment | passkey_removal
    pub kind: String,
    /// What it does, in words (accounts masked).
    pub lines: Vec<String>,
    /// The proposing admin's username.
    pub proposed_by: String,
    pub proposed_at: String,
    /// Why the viewer cannot confirm it, if they cannot.
    pub blocker: Option<String>,
    /// A policy change's backtest, line by line (empty for other kinds).
    pub backtest: Vec<String>,
}

/// An agent's webhook on the admin page. Never a secret: the URL is shown
/// without its query string.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct WebhookRow {
    pub agent_id: String,
    /// Scheme, host, port and path of the URL.
    pub target: String,
    /// Failed attempts at the event its stream is on (0: none failed).
    pub failed_attempts: i64,
    /// When the stream tries that event again, while it is failing.
    pub next_attempt_at: Option<String>,
    /// Redeliveries queued and not yet delivered or given up.
    pub queued_redeliveries: i64,
    /// The latest attempts, newest first.
    pub deliveries: Vec<DeliveryRow>,
}

/// One logged attempt of a webhook.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct DeliveryRow {
    /// What the Redeliver button posts (`/admin/webhook-deliveries/{id}/redeliver`).
    pub id: String,
    pub at: String,
    pub proposal_id: String,
    pub event_id: String,
    /// delivered | failed | abandoned
    pub outcome: String,
    pub http_status: Option<i64>,
    /// Why it failed, shortened.
    pub error: Option<String>,
    /// Which attempt at its event this was (from 1).
    pub attempt: i64,
    /// An attempt of a redelivery an admin asked for (not of the stream).
    pub redelivery: bool,
}

/// One UTC day of the human loop page: decisions and expiries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct DayCount {
    /// `YYYY-MM-DD`
    pub day: String,
    pub approvals: u32,
    pub rejections: u32,
    pub expiries: u32,
    /// Proposals escalated to a backup group that day.
    pub escalations: u32,
}

/// How long something took on one channel: median and 90th percentile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct ChannelSpread {
    pub channel: String,
    pub count: u32,
    pub median_secs: f64,
    pub p90_secs: f64,
}

/// The policy page (`/admin/policy`, admins): what decides, what observe
/// mode saw, a backtest, and the policy changes waiting for a second admin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct PolicyPage {
    /// "the TOML rules ([policy])" or "Cedar policy sha256:…".
    pub enforced: String,
    pub observed: Option<String>,
    /// Observe mode's newest differences.
    pub observations: Vec<ObservationRow>,
    /// The last backtest this admin asked for, line by line (shown once).
    pub backtest: Vec<String>,
    /// The candidate text of that backtest, to edit or propose.
    pub candidate: String,
    /// Policy changes waiting for a second admin (with their backtests).
    pub pending: Vec<PendingChangeRow>,
    /// The outcome of the last form post, once.
    pub flash: Option<String>,
}

/// One proposal the observed candidate would have decided differently.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct ObservationRow {
    /// Empty when the enforced policy refused it (never stored).
    pub proposal_id: String,
    pub amount: String,
    /// "auto_approved → needs_approval".
    pub change: String,
    pub enforced_rules: String,
    pub observed_rules: String,
    pub at: String,
}

/// The human loop page (`/admin/loop`, admins): the last 30 days.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct HumanLoopPage {
    /// Oldest first, today last.
    pub days: Vec<DayCount>,
    /// Proposal → a person's decision, by channel.
    pub decisions: Vec<ChannelSpread>,
    /// Proposal → its first notice delivered, by channel.
    pub notices: Vec<ChannelSpread>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct AdminData {
    pub users: Vec<UserRow>,
    pub agents: Vec<AgentRow>,
    /// The agents' webhooks and their delivery logs, by agent id.
    pub webhooks: Vec<WebhookRow>,
    pub payees: Vec<PayeeRow>,
    /// Changes waiting for a second admin, oldest first.
    pub pending_changes: Vec<PendingChangeRow>,
    /// Every passkey of the tenant, oldest first.
    pub passkeys: Vec<PasskeyAdminRow>,
    /// The accepted currencies, for approval limits typed in major units.
    pub currencies: Vec<String>,
    /// The kill switch: what is frozen now (the operator's global freeze
    /// too), widest first.
    pub freezes: Vec<FreezeRow>,
    /// The outcome of the last admin form, shown once.
    pub flash: Option<String>,
}

/// A freeze the kill switch holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct FreezeRow {
    /// "every commit", "every commit of tenant acme", "agent bot's commits".
    pub what: String,
    /// The agent, for a freeze of one agent (its Lift form names it).
    pub agent: Option<String>,
    /// Whether an admin may lift it here (not the operator's global one).
    pub liftable: bool,
    pub frozen_by: String,
    pub reason: String,
    pub at: String,
}

/// One record the rail holds that might settle an operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct RailRecord {
    pub reference: String,
    pub amount: String,
    /// Masked.
    pub destination: String,
    pub status: String,
    /// `None` when it settles the operation; else why not.
    pub mismatch: Option<String>,
}

/// The resolution page of an operation that needs review: the operation,
/// and what the rail holds for it, read when the page was loaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct ResolvePage {
    pub operation: OperationItem,
    /// transfer | reversal
    pub kind: String,
    pub records: Vec<RailRecord>,
    /// Set when the rail could not be read.
    pub rail_error: Option<String>,
}

/// One total of a batch's included lines: in a currency, or to a payee in
/// a currency.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct BatchTotalLine {
    /// "USD", or "Northwind Traders GmbH (ba_…0007)".
    pub label: String,
    /// "12,500.00 USD".
    pub amount: String,
    pub lines: u32,
}

/// One line of a batch as the review page shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct BatchLineItem {
    pub line: i64,
    /// `included`, `held` or `committed`.
    pub status: String,
    pub payee: String,
    pub masked_account: String,
    pub amount: String,
    pub invoice_id: Option<String>,
    /// The invoice it names, checked against the registry as it stands now.
    pub invoice: Option<InvoiceMatchLine>,
    /// Why it is held back, in sentences (empty when included).
    pub held_reasons: Vec<String>,
    /// "the checks at intake", "a reviewer", "the checks at commit".
    pub held_by: Option<String>,
    /// Once committed: the line's own proposal and its status.
    pub proposal_id: Option<String>,
    pub payment_status: Option<String>,
}

/// A batch's review page: totals first, then every line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct BatchReview {
    pub id: String,
    pub status: String,
    pub agent_id: String,
    /// The agent's label: untrusted text.
    pub label: Option<String>,
    /// What an approval names (`batch_hash` of the decision form).
    pub batch_hash: String,
    pub round: i64,
    pub required_approvals: u32,
    /// Who approved this round, by username.
    pub approved_by: Vec<String>,
    /// The decision's reasons, in sentences.
    pub reasons: Vec<String>,
    pub by_currency: Vec<BatchTotalLine>,
    pub by_payee: Vec<BatchTotalLine>,
    pub lines: Vec<BatchLineItem>,
    /// The viewer may approve, reject or hold lines back now.
    pub can_decide: bool,
    pub created_at: String,
}

/// One batch in the list of batches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct BatchSummary {
    pub id: String,
    pub status: String,
    pub label: Option<String>,
    /// "3 payments, 1 held back: 1,250.00 USD".
    pub summary: String,
    pub created_at: String,
}

/// The batches waiting for a decision, and those approved or committed lately.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, miniserde::Serialize, miniserde::Deserialize)]
pub struct BatchList {
    pub waiting: Vec<BatchSummary>,
    pub recent: Vec<BatchSummary>,
}

/// What can go wrong loading a page's data. The message is fixed per kind:
/// nothing internal reaches the browser.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConsoleError {
    SignInRequired,
    Forbidden,
    NotFound,
    Unavailable,
}

impl ConsoleError {
    pub fn message(&self) -> &'static str {
        match self {
            ConsoleError::SignInRequired => "Please sign in.",
            ConsoleError::Forbidden => "Your role does not allow this page.",
            ConsoleError::NotFound => "No such proposal.",
            ConsoleError::Unavailable => "The console could not load this page. Try again.",
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ConsoleError::SignInRequired => "sign_in_required",
            ConsoleError::Forbidden => "forbidden",
            ConsoleError::NotFound => "not_found",
            ConsoleError::Unavailable => "unavailable",
        }
    }

    pub fn from_code(code: &str) -> ConsoleError {
        match code {
            "sign_in_required" => ConsoleError::SignInRequired,
            "forbidden" => ConsoleError::Forbidden,
            "not_found" => ConsoleError::NotFound,
            _ => ConsoleError::Unavailable,
        }
    }
}
