//! What the bank sends back, applied: each document read once (by file
//! name), checked for duplicates (content, message id), and applied in one
//! transaction with its record and its audit entry. Status reports accept
//! or reject payments; statements book them. What does not fit is a
//! [`Problem`] of its document, never a guess.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::{exponent, reports, sha256, status, BankFiles, SyncError};
use crate::domain::Currency;
use crate::rail::iso20022::fields;
use crate::store::audit::AuditEntry;
use crate::store::bank::{self, DocumentRow, Move};

/// What one document did, for the caller's log and the tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub file_name: String,
    pub status: String,
    pub problems: Vec<Problem>,
}

/// Something wrong with a document, in words (no account number, ever).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Problem {
    pub code: String,
    pub end_to_end_id: Option<String>,
    pub message: String,
}

impl BankFiles {
    /// Reads and applies one document, in one transaction with its record
    /// and its audit entry.
    pub(super) async fn receive(
        &self,
        file_name: &str,
        bytes: &[u8],
        too_large: bool,
        now: DateTime<Utc>,
    ) -> Result<Received, SyncError> {
        let sha = sha256(bytes);
        let id = crate::domain::ids::time_ordered_id("bdoc", now.timestamp_millis().max(0) as u64, rand::random());
        let read = if too_large { Err(reports::ReadError::TooLarge) } else { reports::read(bytes) };
        let mut tx = self.db.begin().await?;
        let (status, kind, message_id, entries, problems) = match &read {
            Err(e) => {
                let p = Problem {
                    code: "unreadable".into(),
                    end_to_end_id: None,
                    message: format!("The document is {e}."),
                };
                ("refused", "unreadable".to_owned(), None, 0, vec![p])
            }
            Ok(doc) => {
                let kind = doc.kind().to_owned();
                let message = doc.message_id().to_owned();
                match bank::document_like(&mut *tx, &self.name, &sha, Some((&kind, &message))).await? {
                    Some(first) => {
                        let p = Problem {
                            code: "duplicate".into(),
                            end_to_end_id: None,
                            message: format!(
                                "The same {kind} (message id {}) was received before as {}: nothing of it was applied again.",
                                first.message_id.as_deref().unwrap_or("?"),
                                first.file_name
                            ),
                        };
                        ("duplicate", kind, Some(message), 0, vec![p])
                    }
                    None => {
                        let (entries, problems) = match doc {
                            reports::Document::Status(r) => self.apply_status(&mut tx, r, &id, now).await?,
                            reports::Document::Statement(s) => self.apply_statement(&mut tx, s, &id, now).await?,
                        };
                        ("applied", kind, Some(message), entries, problems)
                    }
                }
            }
        };
        let row = DocumentRow {
            id: id.clone(),
            rail: self.name.clone(),
            tenant_id: self.tenant.clone(),
            file_name: file_name.to_owned(),
            sha256: sha.clone(),
            kind: kind.clone(),
            message_id: message_id.clone(),
            status: status.to_owned(),
            problems: serde_json::to_string(&problems).unwrap_or_else(|_| "[]".into()),
            entries,
            received_at: now,
        };
        bank::insert_document(&mut tx, &row).await?;
        let action = match status {
            "applied" => "rail.document.applied",
            "duplicate" => "rail.document.duplicate",
            _ => "rail.document.refused",
        };
        crate::store::audit::append(
            &mut tx,
            &AuditEntry {
                tenant_id: self.tenant.clone(),
                actor: format!("rail:{}", self.name),
                action: action.into(),
                proposal_id: None,
                request_hash: None,
                data: json!({"rail": self.name, "document_id": id, "file": file_name, "sha256": sha, "kind": kind,
                             "message_id": message_id, "entries": entries, "problems": problems}),
            },
        )
        .await?;
        tx.commit().await?;
        if !problems.is_empty() {
            tracing::warn!(rail = %self.name, file = file_name, status, problems = problems.len(), "bank document with problems");
        }
        Ok(Received { file_name: file_name.to_owned(), status: status.to_owned(), problems })
    }

    /// A status report: accepts or rejects payments.
    async fn apply_status(
        &self,
        tx: &mut crate::store::Conn,
        r: &reports::StatusReport,
        doc: &str,
        now: DateTime<Utc>,
    ) -> Result<(i64, Vec<Problem>), SyncError> {
        let mut problems = Vec::new();
        // What each end-to-end id is told: its own status, else its block's,
        // else the whole file's.
        let mut told: Vec<(String, String, Option<String>)> =
            r.transactions.iter().map(|t| (t.end_to_end_id.clone(), t.status.clone(), t.reason.clone())).collect();
        if let Some(batch) = &r.original_message_id {
            let named: std::collections::HashSet<String> = told.iter().map(|(e, ..)| e.clone()).collect();
            let mut wide = Vec::new();
            for b in &r.blocks {
                if let Some(st) = &b.status {
                    let currency = b.block_id.strip_prefix(&format!("{batch}-"));
                    for e in bank::batch_end_to_end_ids(&mut *tx, &self.name, batch, currency).await? {
                        wide.push((e, st.clone(), b.reason.clone().or(r.group_reason.clone())));
                    }
                }
            }
            if let Some(st) =
                r.group_status.as_deref().filter(|s| matches!(*s, "RJCT" | "ACCP" | "ACSP" | "ACSC" | "ACTC"))
            {
                let all = bank::batch_end_to_end_ids(&mut *tx, &self.name, batch, None).await?;
                if all.is_empty() && told.is_empty() {
                    problems.push(Problem {
                        code: "unknown_batch".into(),
                        end_to_end_id: None,
                        message: format!("The report answers file {batch}, which this rail never sent."),
                    });
                }
                for e in all {
                    wide.push((e, st.to_owned(), r.group_reason.clone()));
                }
            }
            for w in wide {
                if !named.contains(&w.0) && !told.iter().any(|t| t.0 == w.0) {
                    told.push(w);
                }
            }
        }
        for (e2e, st, reason) in &told {
            let Some(row) = bank::payment_by_end_to_end(&mut *tx, &self.name, e2e).await? else {
                problems.push(unknown_e2e(e2e));
                continue;
            };
            let base = Move { to: status::ACCEPTED, reason_code: None, booked: None, document_id: doc };
            match st.as_str() {
                "RJCT" => {
                    let code = reason.as_deref().unwrap_or("NARR");
                    let m = Move { to: status::REJECTED, reason_code: Some(code), ..base };
                    if !bank::move_payment(tx, &self.name, e2e, &status::OPEN, m, now).await?
                        && matches!(row.status.as_str(), status::BOOKED | status::MISMATCH)
                    {
                        problems.push(Problem {
                            code: "rejected_after_booking".into(),
                            end_to_end_id: Some(e2e.clone()),
                            message: format!("The bank rejects {e2e} ({code}), which a statement already booked: check with the bank."),
                        });
                    }
                }
                "ACCP" | "ACSP" | "ACSC" | "ACTC" | "ACWC" | "ACCC" | "ACFC" | "ACWP" | "PDNG" | "PART" | "RCVD" => {
                    bank::move_payment(tx, &self.name, e2e, &[status::QUEUED, status::SENT], base, now).await?;
                }
                other => problems.push(Problem {
                    code: "unknown_status".into(),
                    end_to_end_id: Some(e2e.clone()),
                    message: format!("The report gives {e2e} a status this rail does not know ({}).", clip_code(other)),
                }),
            }
        }
        Ok((told.len() as i64, problems))
    }

    /// A statement or notification: books payments.
    async fn apply_statement(
        &self,
        tx: &mut crate::store::Conn,
        s: &reports::Statement,
        doc: &str,
        now: DateTime<Utc>,
    ) -> Result<(i64, Vec<Problem>), SyncError> {
        let mut problems = Vec::new();
        let mut entries = 0;
        for b in &s.bookings {
            let (Some(e2e), true) = (&b.end_to_end_id, b.booked) else { continue };
            if e2e == "NOTPROVIDED" {
                continue;
            }
            entries += 1;
            let Some(row) = bank::payment_by_end_to_end(&mut *tx, &self.name, e2e).await? else {
                if b.debit {
                    problems.push(unknown_e2e(e2e));
                }
                continue;
            };
            let booked = Currency::parse(&b.currency).ok().and_then(|c| {
                fields::minor_units(&b.amount, u32::from(c.exponent())).map(|m| (m, c.code().to_owned()))
            });
            let Some((amount, currency)) = booked else {
                problems.push(Problem {
                    code: "bad_amount".into(),
                    end_to_end_id: Some(e2e.clone()),
                    message: format!("The booking of {e2e} has an amount this rail cannot read."),
                });
                continue;
            };
            if !b.debit {
                problems.push(Problem {
                    code: "credit_for_payment".into(),
                    end_to_end_id: Some(e2e.clone()),
                    message: format!(
                        "The bank credited {} {currency} back for {e2e} (a return?): check it with the bank.",
                        fields::decimal(amount, exponent(&currency))
                    ),
                });
                continue;
            }
            let same = amount == row.amount_minor && currency == row.currency;
            let m = Move {
                to: if same { status::BOOKED } else { status::MISMATCH },
                reason_code: None,
                booked: Some((amount, &currency)),
                document_id: doc,
            };
            let moved = bank::move_payment(tx, &self.name, e2e, &status::OPEN, m, now).await?;
            if !same {
                problems.push(Problem {
                    code: "amount_differs".into(),
                    end_to_end_id: Some(e2e.clone()),
                    message: format!(
                        "The bank booked {} {currency} for {e2e}; {} {} was sent. Nothing is marked paid: a human decides.",
                        fields::decimal(amount, exponent(&currency)),
                        fields::decimal(row.amount_minor, exponent(&row.currency)),
                        row.currency
                    ),
                });
            } else if !moved && row.status == status::REJECTED {
                problems.push(Problem {
                    code: "booked_after_rejection".into(),
                    end_to_end_id: Some(e2e.clone()),
                    message: format!("The bank booked {e2e}, which a status report had rejected: check with the bank."),
                });
            }
        }
        Ok((entries, problems))
    }
}

fn unknown_e2e(e2e: &str) -> Problem {
    Problem {
        code: "unknown_end_to_end_id".into(),
        end_to_end_id: Some(clip_code(e2e)),
        message: format!("The document names end-to-end id {}, which this rail never sent.", clip_code(e2e)),
    }
}

/// A code or id from a document, as it may be shown: at most 35 of its
/// letters, digits and `_-.`.
fn clip_code(s: &str) -> String {
    s.chars().filter(|c| c.is_ascii_alphanumeric() || "_-.".contains(*c)).take(35).collect()
}
