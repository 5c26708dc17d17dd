//! What the console shows of the rails' own word: the documents a bank
//! rail read (with what was wrong with them), and a payment's evidence.

use app::views::{ConsoleError, RailDocumentItem};

use super::ConsoleService;
use crate::flow::unavailable;
use crate::rail::iso20022::{describe, Problem};
use crate::store::{self, bank::DocumentRow};

/// The documents as the operations page lists them: those with problems first.
pub(super) fn rail_documents(rows: Vec<DocumentRow>) -> Vec<RailDocumentItem> {
    let mut items: Vec<RailDocumentItem> = rows
        .into_iter()
        .map(|d| {
            let problems: Vec<Problem> = serde_json::from_str(&d.problems).unwrap_or_default();
            RailDocumentItem {
                id: d.id,
                rail: d.rail,
                file_name: d.file_name,
                kind: d.kind,
                message_id: d.message_id,
                status: d.status,
                entries: d.entries,
                received_at: store::ts(d.received_at),
                problem_codes: problems.iter().map(|p| p.code.clone()).collect(),
                problems: problems.into_iter().map(|p| p.message).collect(),
            }
        })
        .collect();
    items.sort_by_key(|d| d.problems.is_empty());
    items
}

impl ConsoleService {
    /// A payment's evidence from a bank rail: the document that booked or
    /// rejected it, or the file it went out in.
    pub(super) async fn rail_evidence(&self, tenant: &str, operation: &str) -> Result<Option<String>, ConsoleError> {
        let found = store::bank::evidence_for(&self.state.db.read, tenant, operation).await.map_err(unavailable)?;
        Ok(found.map(|(payment, document)| match document {
            Some(d) => {
                let how = match payment.status.as_str() {
                    store::bank::status::BOOKED => "Booked by the bank",
                    store::bank::status::REJECTED => "Rejected by the bank",
                    store::bank::status::MISMATCH => "Booked by the bank for another amount",
                    _ => "Answered by the bank",
                };
                format!("{how}: {}", describe(&d))
            }
            None => match payment.batch_id {
                Some(batch) => format!("Sent to the bank in file {batch}; no statement has booked it yet."),
                None => "Waiting to be written into the next bank file.".to_owned(),
            },
        }))
    }
}
