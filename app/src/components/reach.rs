//! How a waiting proposal reaches its approvers: its
//! reminder and escalation, counted down, and who has been told. The
//! detail page shows it whole ([`ReachCard`]), the queue in a line
//! ([`ReachNote`]).

use leptos::prelude::*;

use super::When;
use crate::views::ReachLine;

/// The steps of the tenant's escalation rule and the people notified.
#[component]
pub fn ReachCard(reach: ReachLine, now: String) -> impl IntoView {
    let remind = reach.remind_at.clone().filter(|_| reach.escalated_at.is_none()).map(|at| {
        view! { <li id="remind-at">"Approvers reminded "<When at=at now=now.clone()/></li> }
    });
    let group = reach.escalate_to.clone().unwrap_or_default();
    let escalation = match (reach.escalated_at.clone(), reach.escalate_at.clone()) {
        (Some(at), _) => Some(view! {
            <li id="escalated" data-group=group.clone()>{format!("Escalated to {group} ")}<When at=at now=now.clone()/></li>
        }.into_any()),
        (None, Some(at)) => Some(view! {
            <li id="escalates-at" data-group=group.clone()>{format!("Escalates to {group} ")}<When at=at now=now.clone()/></li>
        }.into_any()),
        _ => None,
    };
    let nobody = reach.notified.is_empty();
    let people = reach
        .notified
        .into_iter()
        .map(|p| {
            let how = match (p.channels.is_empty(), p.quiet) {
                (true, _) => "not notified: quiet hours".to_owned(),
                (false, true) => format!("by {} (held back once by quiet hours)", p.channels),
                (false, false) => format!("by {}", p.channels),
            };
            let escalated = p.escalated.then_some(" (escalated)");
            let at = p.at.map(|at| view! { ", "<When at=at now=now.clone()/> });
            let name = p.username.clone();
            view! {
                <li data-user=p.username><strong>{name}</strong>{escalated}" — "{how}{at}</li>
            }
        })
        .collect_view();
    view! {
        // Not `reach`: that is the account page's settings, which /reach.js drives.
        <div id="reaching-approvers" class="reach">
            <h3>"Reaching approvers"</h3>
            <ul class="plain" id="reach-steps">{remind}{escalation}</ul>
            <ul class="plain" id="notified">{people}</ul>
            {nobody.then(|| view! { <p class="muted small" id="nobody-notified">"Nobody has been notified by email or push yet."</p> })}
        </div>
    }
}

/// The queue's line under "expires": the escalation countdown, or where it
/// escalated, and how many people were told.
#[component]
pub fn ReachNote(reach: ReachLine, now: String) -> impl IntoView {
    let group = reach.escalate_to.clone().unwrap_or_default();
    let step = match (reach.escalated_at.is_some(), reach.escalate_at.clone()) {
        (true, _) => Some(view! { <span data-reach="escalated">{format!("escalated to {group}")}</span> }.into_any()),
        (false, Some(at)) => Some(
            view! {
                <span data-reach="escalates">"escalates "<When at=at now=now brief=true/></span>
            }
            .into_any(),
        ),
        _ => None,
    };
    let told = reach.notified.iter().filter(|p| !p.channels.is_empty()).count();
    let told = (told > 0).then(|| view! { <span data-reach="notified">{format!("{told} notified")}</span> });
    view! { <span class="reach-note small muted">{step}{told}</span> }
}
