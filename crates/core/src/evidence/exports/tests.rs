use super::*;
use crate::store::proposals::tests::{sample, setup};
use crate::store::proposals::{insert, insert_approval, ApprovalRow};
use crate::store::query;
use chrono::Duration;

fn day(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

#[test]
fn the_columns_are_the_records_fields_in_order() {
    let r = PaymentRecord {
        proposal_id: "p".into(),
        created_at: "t".into(),
        tenant_id: "t".into(),
        agent_id: "a".into(),
        payee: None,
        destination: "ba_…0007".into(),
        invoice_id: None,
        amount: "1.00".into(),
        currency: "USD".into(),
        amount_minor: 100,
        status: "succeeded".into(),
        policy_outcome: "needs_approval".into(),
        approvers: "ana".into(),
        approval_channels: "console".into(),
        rejected_by: None,
        decided_at: None,
        decision_seconds: None,
        operation_id: None,
        operation_status: None,
        rail_reference: None,
        evidence_id: "sha256:00".into(),
    };
    let value = serde_json::to_value(&r).unwrap();
    let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
    let mut sorted_columns = COLUMNS.to_vec();
    sorted_columns.sort_unstable();
    let mut sorted_keys = keys.clone();
    sorted_keys.sort_unstable();
    assert_eq!(sorted_keys, sorted_columns, "every field is a column, once");

    // CSV: the header, then the record; formula-looking text is defused,
    // commas and quotes are quoted.
    let mut w = Writer::new(Format::Csv);
    let mut out = w.start();
    let tricky =
        PaymentRecord { payee: Some("=HYPERLINK(\"x\")".into()), invoice_id: Some("INV, \"7\"".into()), ..r.clone() };
    out.extend(w.page(&[tricky]));
    out.extend(w.finish());
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.split("\r\n").collect();
    assert_eq!(lines[0], COLUMNS.join(","));
    assert!(lines[1].contains(r#","'=HYPERLINK(""x"")","#), "{}", lines[1]);
    assert!(lines[1].contains(r#","INV, ""7""","#), "{}", lines[1]);
    assert!(lines[1].starts_with("p,t,t,a,"), "{}", lines[1]);
    assert_eq!(lines[2], "", "the last line ends with CRLF");
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let row = reader.records().next().unwrap().unwrap();
    assert_eq!(row.len(), COLUMNS.len());
    assert_eq!(&row[COLUMNS.iter().position(|c| *c == "amount").unwrap()], "1.00");

    // JSON: an array, empty or not.
    for n in [0, 1, 3] {
        let mut w = Writer::new(Format::Json);
        let mut out = w.start();
        out.extend(w.page(&vec![r.clone(); n]));
        out.extend(w.finish());
        let parsed: Vec<Value> = serde_json::from_slice(&out).unwrap();
        assert_eq!(parsed.len(), n);
        assert_eq!(w.written(), n);
    }
}

#[test]
fn a_range_is_whole_utc_days_and_bad_ones_name_their_parameter() {
    let r = Range::parse(Some("2026-01-01"), Some("2026-01-31")).unwrap();
    let (from, to) = r.bounds();
    assert_eq!(store::ts(from), "2026-01-01T00:00:00.000Z");
    assert_eq!(store::ts(to), "2026-02-01T00:00:00.000Z", "to is included");
    assert_eq!(r.label(), "2026-01-01-to-2026-01-31");
    assert_eq!(
        Range::parse(Some("2026-03-04"), None).unwrap(),
        Range { from: day("2026-03-04"), to: day("2026-03-04") }
    );
    assert_eq!(Range::parse(None, Some("2026-01-01")).unwrap_err().field, "from");
    assert_eq!(Range::parse(Some("01/02/2026"), None).unwrap_err().field, "from");
    assert_eq!(Range::parse(Some("2026-01-02"), Some("2026-13-01")).unwrap_err().field, "to");
    assert_eq!(Range::parse(Some("2026-01-02"), Some("2026-01-01")).unwrap_err().field, "to");
}

#[test]
fn the_nightly_report_is_due_once_a_day_from_its_hour() {
    let dir = tempfile::tempdir().unwrap();
    let at = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
    assert_eq!(report_due(dir.path(), 2, at("2026-05-01T01:59:00Z")), None, "before the hour");
    let due = report_due(dir.path(), 2, at("2026-05-01T02:00:00Z")).expect("due at the hour");
    assert_eq!(due, dir.path().join("reconciliation-2026-05-01.json"));
    let report = ReconciliationReport { generated_at: "x".into(), open: 0, operations: Vec::new() };
    write_report(&due, &report).unwrap();
    assert_eq!(report_due(dir.path(), 2, at("2026-05-01T23:00:00Z")), None, "written today");
    assert!(report_due(dir.path(), 2, at("2026-05-02T03:00:00Z")).is_some(), "due again the next day");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file is left");
}

#[tokio::test]
async fn pages_cover_the_range_once_in_order_with_each_rounds_decisions() {
    for db in setup("exports_pages_cover_the_range").await {
        let t0 = DateTime::parse_from_rfc3339("2025-03-01T00:00:00Z").unwrap().with_timezone(&Utc);
        let mut c = db.write.acquire().await.unwrap();
        // 11 proposals on 2025-03-01, two on the same instant; one the day
        // before and one the day after, outside the range.
        let mut made = Vec::new();
        for i in 0..13i64 {
            let id = format!("p_{i:02}");
            let at = match i {
                0 => t0 - Duration::minutes(1),
                12 => t0 + Duration::days(1),
                _ => t0 + Duration::minutes(i / 2 * 7),
            };
            made.push((id, at));
        }
        for (id, at) in &made {
            insert(&mut c, &crate::store::proposals::NewProposal { id, run_id: id, ..sample(*at) }).await.unwrap();
        }
        let approve = |id: &str, who: &str, round: i64, minutes: i64| ApprovalRow {
            proposal_id: id.into(),
            round,
            approver_id: who.into(),
            decision: "approve".into(),
            reason: None,
            via: "slack".into(),
            amr: "pwd".into(),
            at: t0 + Duration::minutes(minutes),
            on_behalf_of: None,
            delegation_id: None,
        };
        insert_approval(&mut c, &approve("p_05", "usr_maya", 1, 30)).await.unwrap();
        insert_approval(&mut c, &approve("p_05", "usr_gone", 1, 40)).await.unwrap();
        // p_07's first approval round lapsed; only its second counts.
        insert_approval(&mut c, &approve("p_07", "usr_gone", 1, 25)).await.unwrap();
        insert_approval(&mut c, &approve("p_07", "usr_maya", 2, 50)).await.unwrap();
        query("UPDATE proposals SET approval_round = 2 WHERE id = 'p_07'").execute(&mut *c).await.unwrap();
        drop(c);

        let range = Range::parse(Some("2025-03-01"), None).unwrap();
        let mut payments = Payments::new("t", range);
        payments.page = 3;
        let mut seen = Vec::new();
        let mut pages = 0;
        while let Some(page) = payments.next_page(&db.read).await.unwrap() {
            pages += 1;
            seen.extend(page);
        }
        let ids: Vec<&str> = seen.iter().map(|r| r.proposal_id.as_str()).collect();
        let expected: Vec<String> = (1..12).map(|i| format!("p_{i:02}")).collect();
        assert_eq!(ids, expected, "{}: every one in range, once, in order", db.backend);
        assert_eq!(pages, 4, "3 + 3 + 3 + 2");
        let p05 = seen.iter().find(|r| r.proposal_id == "p_05").unwrap();
        assert_eq!(p05.approvers, "maya; usr_gone", "usernames, or the id of a user no longer known");
        assert_eq!(p05.approval_channels, "slack; slack");
        assert_eq!(p05.decision_seconds, Some(40 * 60 - 14 * 60));
        assert_eq!(p05.destination, mask_account_tagged("ba_x"));
        assert_eq!((p05.amount.as_str(), p05.payee.as_deref()), ("1.00", Some("X")));
        let p07 = seen.iter().find(|r| r.proposal_id == "p_07").unwrap();
        assert_eq!(p07.approvers, "maya", "the decisive round only");
        assert_eq!(Payments::new("other", range).next_page(&db.read).await.unwrap(), None, "another tenant's");
        db.finish().await;
    }
}
