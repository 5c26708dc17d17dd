use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::api::{console_error, load_proposal};
use crate::components::{CsrfField, DecidedNotice, LoadError, ReachCard, SignalList, StatusBadge, When};
use crate::views::{ProposalDetail, Viewer};

/// Fixed messages for the outcome of a decision form (never reflected text).
pub fn outcome_message(code: &str) -> &'static str {
    match code {
        "approved" => "Your approval was recorded.",
        "rejected" => "The proposal was rejected.",
        "reason_required" => "A reason is required to reject.",
        "segregation_of_duties" => {
            "You cannot approve a proposal of an agent that acts for you, or whose key you were given."
        }
        "approver_limit" => "This amount is beyond your approval limit (or you have none in its currency).",
        "distinct_approvers" => "You have already approved; another approver must give the next approval.",
        "invalid_state" => "This proposal is no longer waiting for a decision.",
        "policy_denied" => "Policy no longer allows this payment.",
        "forbidden" => "Your role does not allow this.",
        "not_found" => "No such proposal in your tenant.",
        "invalid" => "The form was not understood; nothing was done.",
        "duplicate_invoice" => {
            "This invoice is already approved or paid: approve it only from its own page, saying why it is not a \
             duplicate."
        }
        "duplicate_pair" => {
            "Two of these payments are the same invoice: nothing was approved. Drop one of the pair, then approve."
        }
        "step_up_required" => {
            "Approving this payment needs your passkey: press Approve again and follow the prompt. If this device \
             holds none of your passkeys, choose to use a phone in the prompt (a QR code), or approve from the \
             device that holds it."
        }
        "passkey_required" => "Approving needs a passkey: register one on your Passkeys page first.",
        "passkey_cooling_off" => {
            "Your passkey is new: it can approve payments after its cool-off, or once an admin confirms it on the \
             admin page."
        }
        "delegation" => {
            "You cannot approve for that person now: their delegation to you is not in force, or they could not \
             approve this themselves. Nothing was done."
        }
        "passkey_refused" => {
            "Your passkey's answer was refused (another payment, used already, or not your passkey): try again."
        }
        _ => "The decision could not be recorded.",
    }
}

/// Proposal detail: the canonical request restated in words, the evidence a
/// reviewer needs, and the decision forms.
#[component]
pub fn ProposalPage() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let id = move || params.with(|p| p.get("id").unwrap_or_default());
    let tick = RwSignal::new(0u64);
    let data = crate::codec::page(move || (id(), tick.get()), |(id, _)| load_proposal(id));

    // In the browser: wait for changes; when this proposal's data differs
    // from what is shown (another approver acted, the agent committed…),
    // read it again. Unchanged data is not re-rendered, so a reason being
    // typed is not lost to someone else's change.
    #[cfg(feature = "hydrate")]
    {
        let generation = StoredValue::new(0u64);
        // Runs again whenever the data is read again (or another proposal
        // is opened): the newest loop is the only one that goes on.
        Effect::new(move |_| {
            let id = id();
            let mine = generation.get_value() + 1;
            generation.set_value(mine);
            // Only a proposal that was shown is followed (not a "not found").
            let Some(Ok(first)) = data.get() else { return };
            let mut seen = first.change_seq;
            let mut shown = Some(first.without_clock());
            leptos::task::spawn_local(async move {
                while let Ok(now) = crate::api::wait_for_change(seen).await {
                    if generation.try_get_value() != Some(mine) {
                        break; // another proposal is shown now, or the page is gone
                    }
                    if now == seen {
                        continue;
                    }
                    seen = now;
                    let Ok(fresh) = load_proposal(id.clone()).await else { continue };
                    let fresh = Some(fresh.without_clock());
                    if fresh != shown {
                        shown = fresh;
                        if tick.try_update(|t| *t += 1).is_none() {
                            break;
                        }
                    }
                }
            });
        });
    }
    let flash =
        move || query.with(|q| q.get("result").or_else(|| q.get("error")).map(|c| (q.get("error").is_some(), c)));
    view! {
        <Title text="Proposal"/>
        <section class="proposal">
            <DecidedNotice/>
            {move || flash().map(|(is_error, code)| {
                let class = if is_error { "notice notice-error" } else { "notice notice-ok" };
                view! { <p class=class role="status">{outcome_message(&code)}</p> }
            })}
            <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match data.await {
                        Ok(detail) => {
                            // The tab names the payment, not just "Proposal".
                            let title = format!("{} · {}", detail.amount, detail.payee_name);
                            view! { <Title text=title/><Detail detail/> }.into_any()
                        }
                        Err(e) => view! { <h1>"Proposal"</h1><LoadError error=console_error(&e)/> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn Detail(detail: ProposalDetail) -> impl IntoView {
    let viewer = use_context::<Viewer>();
    let csrf = viewer.as_ref().map(|v| v.csrf_token.clone()).unwrap_or_default();
    // The proof bundle (docs/EVIDENCE.md): admins and auditors.
    let evidence = viewer.as_ref().is_some_and(Viewer::exports_evidence).then(|| {
        let href = format!("/api/v1/console/proposals/{}/evidence", detail.id);
        view! {
            <p class="evidence-link">
                <a id="download-evidence" href=href download=format!("evidence-{}.json", detail.id)>"Download evidence"</a>
                " "<span class="muted small">"Signed receipts and log proofs anyone can check offline."</span>
            </p>
        }
    });
    let reasons =
        detail.reasons.iter().map(|r| view! { <li data-rule=r.rule.clone()>{r.message.clone()}</li> }).collect_view();
    let now = detail.now.clone();
    let line = |a: &crate::views::ApprovalLine| {
        view! {
            <li>
                <strong>{a.approver.clone()}</strong>" "{a.decision.clone()}" "{a.via.clone()}", "<When at=a.at.clone()/>
                {a.reason.clone().map(|r| view! { <span class="muted">{format!(" — “{r}”")}</span> })}
            </li>
        }
    };
    let round = detail.approval_round;
    let waiting = matches!(detail.status.as_str(), "pending_approval" | "approval_expired");
    let approvals = detail.approvals.iter().filter(|a| a.round == round).map(line).collect_view();
    // Earlier rounds: their approvals lapsed with an unused token.
    let earlier = (1..round)
        .rev()
        .filter_map(|r| {
            let lines: Vec<_> = detail.approvals.iter().filter(|a| a.round == r).map(line).collect();
            (!lines.is_empty()).then(|| {
                view! {
                    <h3 class="small">{format!("Round {r}: expired unused")}</h3>
                    <ul class="muted" data-round=r>{lines}</ul>
                }
            })
        })
        .collect_view();
    let timeline = detail
        .timeline
        .iter()
        .map(|t| view! { <li><When at=t.at.clone()/>" — "{t.action.clone()}" ("{t.actor.clone()}")"</li> })
        .collect_view();
    let token = match (detail.status.as_str(), detail.token_expires_at.clone()) {
        ("approved", Some(at)) => Some(view! {
            <p id="token-expiry">
                "Approved. The agent must commit before the approval token expires, "<When at now=now.clone()/>
                "; if it does not, the approvals lapse and a new round is needed."
            </p>
        }.into_any()),
        ("approval_expired", _) => Some(view! {
            <p class="notice" id="approval-lapsed">
                {format!(
                    "The approval expired unused: the agent did not commit within {} of approval (approval tokens are \
                     short-lived on purpose). Approvals start again: round {round}.",
                    minutes(detail.token_ttl_secs)
                )}
            </p>
        }.into_any()),
        _ => None,
    };
    let no_approvals = !detail.approvals.iter().any(|a| a.round == round);
    // Approving for someone away, beside (or instead of) approving as oneself.
    let approve_for = detail
        .approve_for
        .iter()
        .map(|name| {
            view! {
                <a class="button" data-approve-for=name.clone()
                    href=format!("/proposals/{}/approve?for={}", detail.id, name)>{format!("Approve for {name}…")}</a>
            }
        })
        .collect_view();
    let approve = if detail.can_approve {
        view! { <a class="button primary" id="approve" href=format!("/proposals/{}/approve", detail.id)>"Approve…"</a> }
            .into_any()
    } else if !detail.approve_for.is_empty() {
        ().into_any()
    } else {
        // Shown, disabled, with the reason: nobody learns only after confirming.
        detail
            .approve_blocker
            .clone()
            .map(|why| {
                view! {
                    <button type="button" id="approve-unavailable" disabled=true aria-describedby="approve-blocker">"Approve"</button>
                    <p class="muted" id="approve-blocker">{why}</p>
                }
            })
            .into_any()
    };
    let twins = (!detail.twins.is_empty()).then(|| view! { <Twins detail=detail.clone() csrf=csrf.clone()/> });
    let reject = detail.can_reject.then(|| {
        view! {
            <form method="post" action=format!("/proposals/{}/decision", detail.id) class="reject stack" id="reject-form">
                <CsrfField token=csrf/>
                <input type="hidden" name="decision" value="reject"/>
                <label>"Reason for rejecting" <textarea name="reason" required maxlength="500"></textarea></label>
                <button type="submit" class="danger" id="reject">"Reject"</button>
            </form>
        }
    });
    let history = detail
        .payee_history
        .iter()
        .map(|h| {
            view! {
                <li><a href=format!("/proposals/{}", h.id)>{h.amount.clone()}</a>" "<StatusBadge status=h.status.clone()/>" "<When at=h.at.clone()/></li>
            }
        })
        .collect_view();
    let no_history = detail.payee_history.is_empty();
    let payment = detail.operation_status.clone().map(|status| {
        view! {
            <Payment
                status
                rail_reference=detail.rail_reference.clone()
                error=detail.operation_error.clone()
                action_required=detail.action_required.clone()
                evidence=detail.rail_evidence.clone()
            />
        }
    });
    // The decision first: on a phone the facts a reviewer checks and the two
    // buttons are on the first screen, the buttons staying in reach while
    // the evidence scrolls by (a sticky bar).
    let decision_bar = (detail.can_approve
        || detail.approve_blocker.is_some()
        || detail.can_reject
        || !detail.approve_for.is_empty())
    .then(|| {
        let jump = detail.can_reject.then(|| {
            view! { <a class="button danger-outline" id="reject-jump" href="#reject-form">"Reject…"</a> }
        });
        view! { <div class="decision-bar" id="decision-bar" role="group" aria-label="Decision">{approve}{approve_for}{jump}</div> }
    });
    let delegations = (!detail.delegations.is_empty()).then(|| {
        let lines = detail
            .delegations
            .iter()
            .map(|d| {
                view! {
                    <li>{format!("{} approves for {} until ", d.delegate, d.delegator)}<When at=d.until.clone() now=detail.now.clone()/></li>
                }
            })
            .collect_view();
        view! { <ul id="delegations" class="plain small">{lines}</ul> }
    });
    let signal_tags = detail
        .signals
        .iter()
        .map(|s| view! { <span class="tag" data-signal=s.code.clone()>{s.label.clone()}</span> })
        .collect_view();
    let no_signals = detail.signals.is_empty();
    view! {
        <header class="proposal-head">
            <StatusBadge status=detail.status.clone()/>
            <h1 class="sentence">{detail.sentence.clone()}</h1>
        </header>
        {detail.approver_gap.clone().map(|gap| view! {
            <p class="notice notice-error" role="alert" id="no-approver">{format!("{gap}.")}</p>
        })}
        <dl class="facts card facts-top" id="facts-card">
            <dt>"Payee"</dt>
            <dd>{detail.payee_name.clone()}" "<span class="muted">{detail.payee_masked.clone()}</span>{detail.payee_trusted.then(|| view! { " " <span class="badge">"trusted"</span> })}</dd>
            <dt>"Amount"</dt><dd class="num amount-big">{detail.amount.clone()}</dd>
            {detail.invoice.clone().map(|m| view! {
                <dt>"Invoice"</dt>
                <dd id="invoice-verdict" data-verdict=m.verdict.clone()>
                    <a href="#invoice-match" class=format!("verdict verdict-{}", m.verdict)>{verdict_mark(&m.verdict)}" "{m.summary.clone()}</a>
                </dd>
            })}
            <dt>"Signals"</dt>
            <dd class="tags">{signal_tags}{no_signals.then(|| view! { <span class="muted">"none"</span> })}</dd>
            <dt>"Expires"</dt><dd id="expires"><When at=detail.expires_at.clone() now=detail.now.clone()/></dd>
        </dl>
        {decision_bar}
        {payment}
        {twins}
        {detail.invoice.clone().map(|m| view! { <InvoiceMatch found=m amount=detail.amount.clone() payee=detail.payee_name.clone()/> })}
        <div class="card" id="signals">
            <h2>"Risk signals"</h2>
            <SignalList signals=detail.signals.clone()/>
        </div>
        <div class="grid">
            <dl class="facts card">
                <dt>"From"</dt><dd>{detail.source_label.clone().map(|l| view! { {l}" " })}<span class="muted">{detail.source_masked.clone()}</span></dd>
                {detail.budget_today.clone().map(|b| view! { <dt>"Budget"</dt><dd id="budget-today">{b}</dd> })}
                <dt>"Purpose"</dt><dd>{detail.purpose.clone()}</dd>
                <dt>"Invoice"</dt><dd>{detail.invoice_id.clone().unwrap_or_else(|| "—".into())}</dd>
                <dt>"Proposed"</dt><dd><When at=detail.created_at.clone() now=detail.now.clone()/></dd>
            </dl>
            <div class="card untrusted">
                <h2>"Reference from the agent"</h2>
                <p class="muted small">"Untrusted text written by the agent. It is data, never an instruction."</p>
                <blockquote class="reference" id="agent-reference">{detail.reference.clone().unwrap_or_else(|| "(none)".into())}</blockquote>
            </div>
        </div>
        <details class="card technical" id="technical">
            <summary>"Technical details"</summary>
            <dl class="facts">
                <dt>"Agent"</dt><dd>{detail.agent_id.clone()}" "<span class="muted">{format!("run {}", detail.run_id)}</span></dd>
                <dt>"Request hash"</dt><dd><code class="hash">{detail.request_hash.clone()}</code></dd>
            </dl>
        </details>
        <div class="card">
            <h2>{format!("Policy: {}", detail.policy_outcome)}</h2>
            <p>{format!("Approvals required: {}", detail.required_approvals)}</p>
            <ul class="reasons">{reasons}</ul>
        </div>
        <div class="card">
            <h2>"Approvals"</h2>
            {token}
            {detail.still_needed.clone().map(|n| view! { <p id="still-needed">{n}</p> })}
            {delegations}
            {waiting.then(|| view! { <ReachCard reach=detail.reach.clone() now=detail.now.clone()/> })}
            {if no_approvals { Some(view! { <p class="muted">"None in this round yet."</p> }) } else { None }}
            <ul id="approvals" data-round=round>{approvals}</ul>
            {earlier}
            <div class="actions">{reject}</div>
        </div>
        <div class="card" id="payee-history">
            <h2>"Earlier proposals to this payee"</h2>
            {if no_history { Some(view! { <p class="muted">"None: this is the first."</p> }) } else { None }}
            <ul class="history">{history}</ul>
        </div>
        <div class="card">
            <h2>"Timeline"</h2>
            <ol class="timeline">{timeline}</ol>
            {evidence}
        </div>
    }
}

/// The other proposals for the same invoice, beside this one, fact by fact,
/// and while this one waits a one-click "Reject as duplicate".
/// ✓ for a match, ✗ for a mismatch, ? for an invoice not registered.
fn verdict_mark(verdict: &str) -> &'static str {
    match verdict {
        "matches" => "\u{2713}",
        "mismatch" => "\u{2717}",
        _ => "?",
    }
}

/// The payment beside the invoice it names: the invoice's facts, then each
/// check in plain words, a failing one first.
#[component]
fn InvoiceMatch(found: crate::views::InvoiceMatchLine, amount: String, payee: String) -> impl IntoView {
    let mut checks = found.checks.clone();
    checks.sort_by_key(|c| c.ok);
    let checks = checks
        .into_iter()
        .map(|c| {
            let class = if c.ok { "check ok" } else { "check fail" };
            let mark = if c.ok { "\u{2713}" } else { "\u{2717}" };
            view! { <li class=class data-check=c.code.clone()><span class="mark" aria-hidden="true">{mark}</span>" "<span class="sr-only">{if c.ok { "holds: " } else { "fails: " }}</span>{c.message}</li> }
        })
        .collect_view();
    let facts = found.vendor.clone().map(|vendor| view! {
        <table class="invoice-side">
            <thead><tr><th scope="col"></th><th scope="col">"This payment"</th><th scope="col">"The invoice"</th></tr></thead>
            <tbody>
                <tr><th scope="row">"To"</th><td>{payee.clone()}</td><td>{vendor}</td></tr>
                <tr><th scope="row">"Amount"</th><td class="num">{amount.clone()}</td><td class="num">{found.amount.clone().unwrap_or_default()}</td></tr>
                <tr><th scope="row">"Open"</th><td></td><td class="num" id="invoice-open">{found.open.clone().unwrap_or_default()}</td></tr>
                <tr><th scope="row">"Due"</th><td></td><td>{found.due_date.clone().unwrap_or_default()}</td></tr>
            </tbody>
        </table>
    });
    let note = found.note.clone().map(|n| view! {
        <div class="untrusted">
            <p class="muted small">"Note on the invoice, from the accounting export: untrusted text, never an instruction."</p>
            <blockquote class="reference" id="invoice-note">{n}</blockquote>
        </div>
    });
    view! {
        <div class=format!("card invoice-match verdict-{}", found.verdict) id="invoice-match" data-verdict=found.verdict.clone()>
            <h2>{format!("Invoice {}", found.number)}</h2>
            <p class="verdict-line" id="invoice-summary">{verdict_mark(&found.verdict)}" "{found.summary.clone()}</p>
            {facts}
            <ul class="plain checks" id="invoice-checks">{checks}</ul>
            {note}
        </div>
    }
}

#[component]
fn Twins(detail: ProposalDetail, csrf: String) -> impl IntoView {
    let invoice = detail.invoice_id.clone().unwrap_or_default();
    let several = detail.twins.len() > 1;
    let heads = detail
        .twins
        .iter()
        .enumerate()
        .map(|(n, t)| {
            let label = if several { format!("Other {}", n + 1) } else { "The other".to_owned() };
            view! { <th scope="col"><a href=format!("/proposals/{}", t.id) data-twin=t.id.clone()>{label}</a></th> }
        })
        .collect_view();
    let row = |label: &'static str, this: AnyView, others: Vec<AnyView>| {
        view! { <tr><th scope="row">{label}</th><td>{this}</td>{others.into_iter().map(|o| view! { <td>{o}</td> }).collect_view()}</tr> }
    };
    let each = |f: &dyn Fn(&crate::views::TwinLine) -> AnyView| detail.twins.iter().map(f).collect::<Vec<_>>();
    let status = row(
        "Status",
        view! { <StatusBadge status=detail.status.clone()/> }.into_any(),
        each(&|t| view! { <StatusBadge status=t.status.clone()/> }.into_any()),
    );
    let amount = row(
        "Amount",
        view! { <span class="num">{detail.amount.clone()}</span> }.into_any(),
        each(&|t| view! { <span class="num">{t.amount.clone()}</span> }.into_any()),
    );
    let agent = row("Agent", detail.agent_id.clone().into_any(), each(&|t| t.agent_id.clone().into_any()));
    let proposed = row(
        "Proposed",
        view! { <When at=detail.created_at.clone() now=detail.now.clone()/> }.into_any(),
        each(&|t| view! { <When at=t.created_at.clone() now=detail.now.clone()/> }.into_any()),
    );
    let first = detail.twins.first().map(|t| t.id.clone()).unwrap_or_default();
    let reject = detail.can_reject.then(|| {
        let reason = format!("Duplicate of {first} (invoice {invoice}).");
        view! {
            <form method="post" action=format!("/proposals/{}/decision", detail.id) class="inline">
                <CsrfField token=csrf/>
                <input type="hidden" name="decision" value="reject"/>
                <input type="hidden" name="reason" value=reason/>
                <button type="submit" class="danger" id="reject-duplicate">"Reject as duplicate"</button>
            </form>
        }
    });
    let paid = detail.twins.iter().any(|t| t.approved_or_paid);
    view! {
        <div class="card twins" id="twins" role="region" aria-label="Same invoice">
            <h2>{format!("Invoice {invoice}: {} proposals for this payee", detail.twins.len() + 1)}</h2>
            {paid.then(|| view! {
                <p id="twin-paid">
                    {if several { "One of the others is" } else { "The other is" }}
                    " already approved or paid. Approving this one needs your statement that it is not a duplicate, \
                     and one more approver."
                </p>
            })}
            <div class="table-wrap">
                <table class="compare">
                    <thead><tr><td></td><th scope="col">"This one"</th>{heads}</tr></thead>
                    <tbody>{status}{amount}{agent}{proposed}</tbody>
                </table>
            </div>
            {reject}
        </div>
    }
}

/// "5 minutes", "90 seconds": a token lifetime in words.
fn minutes(secs: u64) -> String {
    match secs {
        s if s % 60 == 0 && s >= 60 => format!("{} minute{}", s / 60, if s == 60 { "" } else { "s" }),
        s => format!("{s} seconds"),
    }
}

/// What one sentence says about an operation in each status.
fn operation_explained(status: &str) -> &'static str {
    match status {
        "pending" => "Recorded; the rail has not answered yet.",
        "accepted" => "The rail accepted the transfer; it has not settled yet.",
        "succeeded" => "The rail settled the payment.",
        "failed" => "The rail refused the payment: no money moved.",
        "unknown" => "The rail's answer was lost. Reconciliation is reading the rail's record; nothing to do yet.",
        "needs_review" => {
            "Reconciliation could not tell whether money moved: an admin must decide on the Operations page."
        }
        "too_late" => "The transfer is past the rail's reversal cutoff.",
        _ => "",
    }
}

/// The committed payment: its operation's status, the rail's reference,
/// the error, and what a human must do, if anything.
#[component]
fn Payment(
    status: String,
    rail_reference: Option<String>,
    error: Option<String>,
    action_required: Option<String>,
    evidence: Option<String>,
) -> impl IntoView {
    let explained = operation_explained(&status);
    let review =
        (status == "needs_review").then(|| view! { " " <a href="/operations">"Operations needing review"</a> });
    let escalate = action_required.as_deref() == Some("escalate_to_ops");
    view! {
        <div class="card payment" id="payment">
            <h2>"Payment"</h2>
            <dl class="facts">
                <dt>"Operation"</dt><dd id="operation-status"><StatusBadge status=status/></dd>
                <dt>"Rail reference"</dt>
                <dd>{match rail_reference {
                    Some(r) => view! { <code id="rail-reference">{r}</code> }.into_any(),
                    None => view! { <span class="muted">"none yet"</span> }.into_any(),
                }}</dd>
                {error.map(|e| view! { <dt>"Error"</dt><dd class="error-text" id="operation-error">{e}</dd> })}
                {evidence.map(|e| view! { <dt>"Bank's word"</dt><dd id="rail-evidence">{e}</dd> })}
            </dl>
            <p class="muted small">{explained}{review}</p>
            {escalate.then(|| view! {
                <div class="notice notice-error" role="alert" id="escalate">
                    <strong>"Escalate to operations."</strong>
                    " The rail can no longer reverse this transfer automatically. Retrying will not help: \
                     operations must recover the money with the payee directly."
                </div>
            })}
        </div>
    }
}
