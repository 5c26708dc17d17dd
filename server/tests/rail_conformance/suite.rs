//! The checks every rail passes (see main.rs).

use chrono::Utc;
use countersign::rail::{CreateOutcome, Lookup, RailStatus, RailTransfer, ReversalOutcome, UnknownCause};

use crate::harness::{fresh, Garbage, Harness, Order, Refusing};

fn lookup(o: &Order) -> Lookup<'_> {
    Lookup { key: &o.key, destination: &o.destination, since: Utc::now() - chrono::Duration::hours(1) }
}

async fn found(h: &dyn Harness, o: &Order) -> Vec<RailTransfer> {
    h.rail().find(&lookup(o)).await.unwrap_or_else(|e| panic!("reading the rail for {}: {e:?}", o.key))
}

fn matches(t: &RailTransfer, o: &Order) -> bool {
    t.amount_minor == o.amount && t.currency == o.currency && t.destination == o.destination
}

fn accepted(outcome: CreateOutcome, what: &str) -> RailTransfer {
    match outcome {
        CreateOutcome::Accepted(t) => t,
        other => panic!("{what}: expected accepted, got {other:?}"),
    }
}

pub async fn resubmission_after_a_lost_answer(h: &dyn Harness) {
    // The caller lost the first answer (whatever it was) and submits again.
    let o = h.order(12_500);
    let _lost = h.rail().create_transfer(&o.as_order()).await;
    let again = accepted(h.rail().create_transfer(&o.as_order()).await, "the resubmission");
    assert!(matches(&again, &o), "{again:?}");
    assert_eq!(h.count(&o).await, 1, "the rail holds one payment for the key");

    // The same through the transport: made, and the connection closed.
    if h.drop_next().await {
        let o = h.order(7_700);
        match h.rail().create_transfer(&o.as_order()).await {
            CreateOutcome::Unknown(UnknownCause::Connection | UnknownCause::Timeout) => {}
            other => panic!("a dropped answer is unknown, got {other:?}"),
        }
        let first = found(h, &o).await;
        assert_eq!(first.len(), 1, "the rail made it: {first:?}");
        let again = accepted(h.rail().create_transfer(&o.as_order()).await, "the resubmission after a drop");
        assert_eq!(again.id, first[0].id, "the same payment");
        assert_eq!(h.count(&o).await, 1);
    }
}

pub async fn unknown_settled_by_reading(h: &dyn Harness) {
    let o = h.order(25_000);
    if h.drop_next().await {
        assert!(matches!(h.rail().create_transfer(&o.as_order()).await, CreateOutcome::Unknown(_)));
    } else {
        // Its answer lost.
        let _ = h.rail().create_transfer(&o.as_order()).await;
    }
    h.settle().await;
    let records = found(h, &o).await;
    assert_eq!(records.len(), 1, "one record under the key: {records:?}");
    let t = &records[0];
    assert!(matches(t, &o), "{t:?}");
    assert_eq!(t.transfer_group.as_deref(), Some(o.key.as_str()));
    assert_eq!(t.status, RailStatus::Paid, "settled by the rail's own record: {t:?}");
    if h.rail().profile().kind == countersign::rail::RailKind::Iso20022 {
        let evidence = t.evidence.as_deref().expect("a bank document settles it");
        assert!(evidence.starts_with("camt.05"), "{evidence}");
    }
    let by_id = h.rail().get_transfer(&t.id).await.unwrap().expect("read by its id");
    assert_eq!(by_id.id, t.id);
    // A key the rail never saw: nothing, not an error.
    let never = h.order(1);
    assert!(found(h, &never).await.is_empty());
}

pub async fn refusal_mapped(h: &dyn Harness) {
    let (o, expected, when) = h.refused_order().await;
    let refusal = match (h.rail().create_transfer(&o.as_order()).await, when) {
        (CreateOutcome::Declined(r), Refusing::AtOnce) => r,
        (CreateOutcome::Accepted(t), Refusing::Later) => {
            assert_eq!(t.status, RailStatus::Pending, "{t:?}");
            h.settle().await;
            let records = found(h, &o).await;
            assert_eq!(records.len(), 1);
            assert_eq!(records[0].status, RailStatus::Failed, "{:?}", records[0]);
            records[0].failure.expect("a failed payment says why")
        }
        (other, _) => panic!("expected a refusal, got {other:?}"),
    };
    assert_eq!(refusal.decline, expected, "{refusal:?}");
    assert!(refusal.reason.len() > 20 && refusal.reason.ends_with('.'), "a sentence: {:?}", refusal.reason);
    for raw in ["<html", "{", "Traceback", "error\":"] {
        assert!(!refusal.reason.contains(raw), "no rail text in the reason: {:?}", refusal.reason);
    }
}

pub async fn reversal(h: &dyn Harness) {
    let o = h.order(40_000);
    let t = accepted(h.rail().create_transfer(&o.as_order()).await, "the transfer");
    h.settle().await;
    let settled = found(h, &o).await.pop().expect("the transfer");
    assert_eq!(settled.status, RailStatus::Paid);
    let key = fresh("rev");
    let outcome = h.rail().reverse(&t.id, &key, None).await;
    if !h.reverses() {
        assert_eq!(outcome, ReversalOutcome::TooLate, "a rail that cannot reverse says it is too late");
        return;
    }
    let ReversalOutcome::Reversed { reversal_id } = outcome else { panic!("expected a reversal, got {outcome:?}") };
    // The same reversal again (its answer lost): the same reversal, once.
    let again = h.rail().reverse(&t.id, &key, None).await;
    assert_eq!(again, ReversalOutcome::Reversed { reversal_id: reversal_id.clone() });
    let reversals = h.rail().reversals_of(&t.id).await.unwrap();
    assert_eq!(reversals.len(), 1, "{reversals:?}");
    assert_eq!((reversals[0].id.as_str(), reversals[0].key.as_deref()), (reversal_id.as_str(), Some(key.as_str())));
    assert_eq!(reversals[0].amount_minor, 40_000);
    let after = found(h, &o).await.pop().unwrap();
    assert_eq!((after.status, after.amount_reversed), (RailStatus::Reversed, 40_000), "{after:?}");
}

pub async fn down_fails_closed(h: &dyn Harness) {
    let o = h.order(9_900);
    h.down().await;
    match h.rail().create_transfer(&o.as_order()).await {
        CreateOutcome::Unknown(UnknownCause::Connection | UnknownCause::Timeout) => {}
        other => panic!("a rail that is down is unknown, never accepted nor refused: {other:?}"),
    }
    if let Ok(records) = h.rail().find(&lookup(&o)).await {
        assert!(records.is_empty(), "nothing was made while down: {records:?}");
    }
    h.up().await;
    assert!(found(h, &o).await.is_empty(), "nothing was made while down");
    let t = accepted(h.rail().create_transfer(&o.as_order()).await, "the same order once the rail is back");
    assert!(matches(&t, &o));
    assert_eq!(h.count(&o).await, 1, "one payment");
}

pub async fn garbage(h: &dyn Harness) {
    let o = h.order(3_300);
    match h.garbage().await {
        Garbage::NextAnswer => {
            match h.rail().create_transfer(&o.as_order()).await {
                CreateOutcome::Unknown(UnknownCause::BadResponse) => {}
                other => panic!("garbage is unknown, never accepted nor refused: {other:?}"),
            }
            let records = found(h, &o).await;
            assert_eq!(records.len(), 1, "the rail's own record tells what happened: {records:?}");
            assert!(matches(&records[0], &o));
            assert_eq!(h.count(&o).await, 1);
        }
        Garbage::Document => {
            let t = accepted(h.rail().create_transfer(&o.as_order()).await, "the transfer");
            assert_eq!(t.status, RailStatus::Pending);
            h.rail().sync().await.expect("a document the rail cannot read stops nothing");
            let after = found(h, &o).await.pop().unwrap();
            assert_eq!(after.status, RailStatus::Pending, "garbage settles nothing: {after:?}");
        }
    }
}

pub async fn list_since(h: &dyn Harness) {
    let start = Utc::now() - chrono::Duration::seconds(2);
    let (a, b) = (h.order(1_100), h.order(2_200));
    let ta = accepted(h.rail().create_transfer(&a.as_order()).await, "a");
    let tb = accepted(h.rail().create_transfer(&b.as_order()).await, "b");
    let listed = h.rail().list_since(start, 100).await.expect("listing");
    let ids: Vec<&str> = listed.iter().map(|t| t.id.as_str()).collect();
    assert!(ids.contains(&ta.id.as_str()) && ids.contains(&tb.id.as_str()), "{ids:?}");
    let later = h.rail().list_since(Utc::now() + chrono::Duration::hours(1), 100).await.expect("listing");
    assert!(later.iter().all(|t| t.id != ta.id && t.id != tb.id), "nothing made after an hour from now");
}
