//! The admin page's user form: adding a user, or changing one, pre-filled
//! from what the user has now (`/admin?edit=ben`), with what saving will
//! change listed as the admin edits — a limit left blank reads "Remove
//! ben's USD limit (50,000.00)" before anyone presses Save. The server
//! decides what applies at once and what waits for a second admin.

use leptos::prelude::*;
use std::collections::BTreeMap;

use crate::components::CsrfField;
use crate::views::UserRow;
use countersign_domain::Role;

const ROLES: [Role; 4] = [Role::Viewer, Role::Approver, Role::Admin, Role::Auditor];

/// The form as filled in now.
#[derive(Clone, Debug, Default, PartialEq)]
struct Filled {
    username: String,
    password: bool,
    roles: Vec<Role>,
    /// Non-blank limits, as typed.
    limits: BTreeMap<String, String>,
    slack: String,
}

impl Filled {
    fn of(user: &UserRow) -> Filled {
        Filled {
            username: user.username.clone(),
            password: false,
            roles: user.roles.clone(),
            limits: user.limit_amounts.clone(),
            slack: user.slack_user_id.clone().unwrap_or_default(),
        }
    }
}

/// An amount as typed ("50,000.00"), comparable; `None` when not a number.
fn amount(text: &str) -> Option<f64> {
    text.replace(',', "").trim().parse::<f64>().ok()
}

fn role_names(roles: &[Role]) -> String {
    roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ")
}

/// What saving `now` changes for `before` (none: a new user), line by line.
fn changes(before: Option<&Filled>, now: &Filled) -> Vec<String> {
    let name = if now.username.trim().is_empty() { "the user" } else { now.username.trim() };
    let Some(before) = before else {
        let mut lines = vec![format!("Create user {name} with roles {}", role_names(&now.roles))];
        lines.extend(now.limits.iter().map(|(c, a)| format!("Give {name} a {c} limit of {a}")));
        if !now.slack.trim().is_empty() {
            lines.push(format!("Link {name} to Slack user {}", now.slack.trim()));
        }
        return lines;
    };
    let mut lines = Vec::new();
    for role in ROLES {
        match (before.roles.contains(&role), now.roles.contains(&role)) {
            (false, true) => lines.push(format!("Give {name} the role {}", role.as_str())),
            (true, false) => lines.push(format!("Remove {name}'s role {}", role.as_str())),
            _ => {}
        }
    }
    let currencies: std::collections::BTreeSet<&String> = before.limits.keys().chain(now.limits.keys()).collect();
    for code in currencies {
        match (before.limits.get(code), now.limits.get(code)) {
            (Some(was), None) => lines.push(format!("Remove {name}'s {code} limit ({was})")),
            (None, Some(new)) => lines.push(format!("Give {name} a {code} limit of {new}")),
            (Some(was), Some(new)) if amount(was) != amount(new) => {
                let verb = if amount(new) > amount(was) { "Raise" } else { "Lower" };
                lines.push(format!("{verb} {name}'s {code} limit from {was} to {new}"));
            }
            _ => {}
        }
    }
    match (before.slack.trim(), now.slack.trim()) {
        (was, now) if was == now => {}
        (was, "") => lines.push(format!("Unlink {name} from Slack user {was}")),
        (_, now) => lines.push(format!("Link {name} to Slack user {now}")),
    }
    if now.password {
        lines.push(format!("Set a new password for {name} (their sessions end)"));
    }
    lines
}

/// The user form; `editing`: the user it changes, pre-filled.
#[component]
pub fn UserForm(editing: Option<UserRow>, currencies: Vec<String>, csrf: String) -> impl IntoView {
    let before = editing.as_ref().map(Filled::of);
    let filled = RwSignal::new(before.clone().unwrap_or_default());
    let start = before.clone().unwrap_or_default();
    let role_box = move |role: Role| {
        let name = format!("role_{}", role.as_str());
        let checked = start.roles.contains(&role);
        view! {
            <label>
                <input type="checkbox" name=name value="on" checked=checked
                    on:change=move |ev| {
                        let on = event_target_checked(&ev);
                        filled.update(|f| {
                            f.roles.retain(|r| *r != role);
                            if on { f.roles.push(role); }
                        });
                    }/>
                {format!(" {}", role.as_str())}
            </label>
        }
    };
    let roles = ROLES.into_iter().map(role_box).collect_view();
    let limit_inputs = currencies
        .into_iter()
        .map(|code| {
            let value = start.limits.get(&code).cloned().unwrap_or_default();
            let key = code.clone();
            view! {
                <label class="limit">
                    {format!("{code} limit ")}
                    <input name=format!("limit_{code}") inputmode="decimal" placeholder="none" autocomplete="off"
                        value=value
                        on:input=move |ev| {
                            let typed = event_target_value(&ev);
                            filled.update(|f| {
                                if typed.trim().is_empty() { f.limits.remove(&key); } else { f.limits.insert(key.clone(), typed); }
                            });
                        }/>
                </label>
            }
        })
        .collect_view();
    let editing_name = editing.as_ref().map(|u| u.username.clone());
    let heading = editing_name.clone().map_or_else(|| "Add a user".to_owned(), |n| format!("Change {n}"));
    let preview = move || {
        let lines = changes(before.as_ref(), &filled.get());
        if lines.is_empty() {
            return view! { <p class="muted small" id="user-changes">"Nothing changes yet."</p> }.into_any();
        }
        let items = lines.into_iter().map(|l| view! { <li>{l}</li> }).collect_view();
        view! {
            <div id="user-changes" class="notice">
                <p><strong>"Saving will:"</strong></p>
                <ul>{items}</ul>
            </div>
        }
        .into_any()
    };
    view! {
        <h3 id="user-form-heading">{heading}</h3>
        <p class="muted small">
            "The form sets the whole user: roles, limits in each currency (blank: none) and Slack id. "
            "Anything that grants more — a new user, a role, a higher limit, a password, a Slack link — "
            "waits for a second admin; so does a change that leaves a waiting payment with nobody able to approve it."
        </p>
        <form method="post" action="/admin/users" class="inline-form" id="user-form" aria-labelledby="user-form-heading">
            <CsrfField token=csrf/>
            <input name="username" placeholder="username" required aria-label="Username"
                value=editing_name.clone().unwrap_or_default() readonly=editing_name.is_some()
                on:input=move |ev| { let v = event_target_value(&ev); filled.update(|f| f.username = v); }/>
            <input name="password" type="password" placeholder="password (blank keeps the current one)" minlength="8"
                autocomplete="new-password" aria-label="Password"
                on:input=move |ev| { let set = !event_target_value(&ev).is_empty(); filled.update(|f| f.password = set); }/>
            {roles}
            {limit_inputs}
            <input name="slack_user_id" placeholder="Slack user id" aria-label="Slack user id"
                value=start.slack.clone()
                on:input=move |ev| { let v = event_target_value(&ev); filled.update(|f| f.slack = v); }/>
            {preview}
            <button type="submit" id="save-user">"Save user"</button>
            {editing_name.map(|_| view! { <a href="/admin#user-form">"Add another user instead"</a> })}
        </form>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ben() -> Filled {
        Filled {
            username: "ben".into(),
            password: false,
            roles: vec![Role::Approver],
            limits: BTreeMap::from([("USD".into(), "50,000.00".into())]),
            slack: "U0BEN".into(),
        }
    }

    #[test]
    fn each_change_is_said_and_nothing_else() {
        let before = ben();
        assert!(changes(Some(&before), &before).is_empty());
        let mut now = ben();
        now.slack.clear();
        assert_eq!(changes(Some(&before), &now), ["Unlink ben from Slack user U0BEN"]);
        now.limits.clear();
        now.roles.push(Role::Admin);
        now.password = true;
        assert_eq!(
            changes(Some(&before), &now),
            [
                "Give ben the role admin",
                "Remove ben's USD limit (50,000.00)",
                "Unlink ben from Slack user U0BEN",
                "Set a new password for ben (their sessions end)"
            ]
        );
        let mut lower = ben();
        lower.limits.insert("USD".into(), "5,000".into());
        assert_eq!(changes(Some(&before), &lower), ["Lower ben's USD limit from 50,000.00 to 5,000"]);
        lower.limits.insert("USD".into(), "50000".into());
        assert!(changes(Some(&before), &lower).is_empty(), "the same amount, written another way");
    }
}
