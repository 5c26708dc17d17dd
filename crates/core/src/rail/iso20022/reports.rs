//! Reading what the bank sends back: `pain.002` payment status reports and
//! `camt.053` statements / `camt.054` debit notifications, of any version
//! that keeps the elements' names (pain.002.001.03 to .15, camt.05x.001.02
//! to .13), by namespace and element name only.
//!
//! What a reader must look for, where the versions differ:
//! - a status report's transactions: `OrgnlPmtInfAndSts/TxInfAndSts` with
//!   `OrgnlEndToEndId`, `TxSts` and `StsRsnInf/Rsn/Cd`; a whole block's
//!   status in `OrgnlPmtInfAndSts/PmtInfSts`; the whole file's in
//!   `OrgnlGrpInfAndSts/GrpSts`;
//! - an entry's status: `Ntry/Sts` is text up to version .02 (`BOOK`) and
//!   `Ntry/Sts/Cd` from .03 on;
//! - an entry's transactions: `Ntry/NtryDtls/TxDtls` with `Refs/EndToEndId`
//!   and the transaction's amount in `TxDtls/Amt` (from .03) or
//!   `TxDtls/AmtDtls/(TxAmt|InstdAmt)/Amt`; without one, the entry's own
//!   `Amt` when it holds one transaction.
//!
//! Anything else — another namespace, not XML, a document type this rail
//! does not read — is [`ReadError`], and nothing of it is applied.

use quick_xml::events::Event;
use quick_xml::Reader;

/// A status report.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct StatusReport {
    /// e.g. `pain.002.001.12`.
    pub kind: String,
    pub message_id: String,
    /// The batch it answers (our file's `MsgId`).
    pub original_message_id: Option<String>,
    pub group_status: Option<String>,
    pub group_reason: Option<String>,
    /// Whole payment-information blocks: (`OrgnlPmtInfId`, status, reason).
    pub blocks: Vec<BlockStatus>,
    pub transactions: Vec<TxStatus>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BlockStatus {
    pub block_id: String,
    pub status: Option<String>,
    pub reason: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TxStatus {
    pub end_to_end_id: String,
    pub status: String,
    pub reason: Option<String>,
}

/// A statement or a notification: its booked and pending entries.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Statement {
    /// e.g. `camt.054.001.08`.
    pub kind: String,
    pub message_id: String,
    pub bookings: Vec<Booking>,
}

/// One transaction of an entry.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Booking {
    pub end_to_end_id: Option<String>,
    /// The decimal amount as written, and its currency.
    pub amount: String,
    pub currency: String,
    /// `DBIT` (money left the account) rather than `CRDT`.
    pub debit: bool,
    /// `BOOK` rather than `PDNG`/`INFO`.
    pub booked: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Document {
    Status(StatusReport),
    Statement(Statement),
}

impl Document {
    pub fn kind(&self) -> &str {
        match self {
            Document::Status(r) => &r.kind,
            Document::Statement(s) => &s.kind,
        }
    }

    pub fn message_id(&self) -> &str {
        match self {
            Document::Status(r) => &r.message_id,
            Document::Statement(s) => &s.message_id,
        }
    }
}

/// Why a document could not be read. The texts are this module's own.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    #[error("not well-formed XML")]
    NotXml,
    #[error("not an ISO 20022 document this rail reads (pain.002, camt.053 or camt.054)")]
    NotRead,
    #[error("its {0} is missing")]
    Missing(&'static str),
    #[error("it is larger than a bank document this rail reads (16 MiB)")]
    TooLarge,
}

const MAX_BYTES: usize = 16 * 1024 * 1024;

/// Reads one document.
pub fn read(bytes: &[u8]) -> Result<Document, ReadError> {
    if bytes.len() > MAX_BYTES {
        return Err(ReadError::TooLarge);
    }
    let mut reader = Reader::from_reader(bytes);
    reader.config_mut().trim_text(true);
    let mut path: Vec<String> = Vec::new();
    let mut kind: Option<String> = None;
    let mut text = String::new();
    let mut ccy: Option<String> = None;
    let mut status = StatusReport::default();
    let mut statement = Statement::default();
    let mut tx = TxStatus::default();
    let mut block = BlockStatus::default();
    // An entry and the transactions read inside it.
    let mut entry = Booking::default();
    let mut entry_txs: Vec<Booking> = Vec::new();
    let mut txd = Booking::default();
    let mut txd_rank = usize::MAX;
    let mut buf = Vec::new();
    loop {
        let event = reader.read_event_into(&mut buf).map_err(|_| ReadError::NotXml)?;
        match event {
            Event::Start(e) => {
                let name = local(e.name().as_ref());
                if path.is_empty() {
                    if name != "Document" {
                        return Err(ReadError::NotRead);
                    }
                    let ns = e
                        .attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == b"xmlns")
                        .and_then(|a| String::from_utf8(a.value.into_owned()).ok())
                        .ok_or(ReadError::NotRead)?;
                    let k = ns.strip_prefix("urn:iso:std:iso:20022:tech:xsd:").ok_or(ReadError::NotRead)?;
                    if !(k.starts_with("pain.002.001.")
                        || k.starts_with("camt.053.001.")
                        || k.starts_with("camt.054.001."))
                    {
                        return Err(ReadError::NotRead);
                    }
                    kind = Some(k.to_owned());
                }
                ccy = e
                    .attributes()
                    .flatten()
                    .find(|a| a.key.as_ref() == b"Ccy")
                    .and_then(|a| String::from_utf8(a.value.into_owned()).ok());
                match name.as_str() {
                    "TxInfAndSts" => tx = TxStatus::default(),
                    "OrgnlPmtInfAndSts" => block = BlockStatus::default(),
                    "Ntry" => {
                        entry = Booking::default();
                        entry_txs.clear();
                    }
                    "TxDtls" => {
                        txd = Booking::default();
                        txd_rank = usize::MAX;
                    }
                    _ => {}
                }
                path.push(name);
                text.clear();
            }
            Event::Empty(_) => {}
            Event::Text(_) if path.is_empty() => return Err(ReadError::NotRead),
            Event::Text(t) => {
                text.push_str(&t.decode().map_err(|_| ReadError::NotXml)?);
            }
            Event::GeneralRef(r) => {
                // `&amp;`, `&#233;`…: text like any other (in the tree's element).
                let resolved = match r.resolve_char_ref().map_err(|_| ReadError::NotXml)? {
                    Some(c) => c.to_string(),
                    None => {
                        let name = r.decode().map_err(|_| ReadError::NotXml)?;
                        quick_xml::escape::resolve_predefined_entity(&name).ok_or(ReadError::NotXml)?.to_owned()
                    }
                };
                text.push_str(&resolved);
            }
            Event::CData(t) => text.push_str(&String::from_utf8_lossy(&t)),
            Event::End(_) => {
                let value = std::mem::take(&mut text);
                let at = |suffix: &[&str]| ends_with(&path, suffix);
                let is_pain = kind.as_deref().is_some_and(|k| k.starts_with("pain"));
                if is_pain {
                    if at(&["GrpHdr", "MsgId"]) {
                        status.message_id = value;
                    } else if at(&["OrgnlGrpInfAndSts", "OrgnlMsgId"]) {
                        status.original_message_id = Some(value);
                    } else if at(&["OrgnlGrpInfAndSts", "GrpSts"]) {
                        status.group_status = Some(value);
                    } else if at(&["OrgnlGrpInfAndSts", "StsRsnInf", "Rsn", "Cd"]) {
                        status.group_reason.get_or_insert(value);
                    } else if at(&["TxInfAndSts", "OrgnlEndToEndId"]) {
                        tx.end_to_end_id = value;
                    } else if at(&["TxInfAndSts", "TxSts"]) {
                        tx.status = value;
                    } else if at(&["TxInfAndSts", "StsRsnInf", "Rsn", "Cd"]) {
                        tx.reason.get_or_insert(value);
                    } else if at(&["TxInfAndSts"]) {
                        status.transactions.push(std::mem::take(&mut tx));
                    } else if at(&["OrgnlPmtInfAndSts", "OrgnlPmtInfId"]) {
                        block.block_id = value;
                    } else if at(&["OrgnlPmtInfAndSts", "PmtInfSts"]) {
                        block.status = Some(value);
                    } else if at(&["OrgnlPmtInfAndSts", "StsRsnInf", "Rsn", "Cd"]) {
                        block.reason.get_or_insert(value);
                    } else if at(&["OrgnlPmtInfAndSts"]) {
                        status.blocks.push(std::mem::take(&mut block));
                    }
                } else if at(&["GrpHdr", "MsgId"]) {
                    statement.message_id = value;
                } else if at(&["Ntry", "Amt"]) {
                    entry.amount = value;
                    entry.currency = ccy.take().unwrap_or_default();
                } else if at(&["Ntry", "CdtDbtInd"]) {
                    entry.debit = value == "DBIT";
                } else if at(&["Ntry", "Sts"]) || at(&["Ntry", "Sts", "Cd"]) {
                    if !value.is_empty() {
                        entry.booked = value == "BOOK";
                    }
                } else if at(&["TxDtls", "Refs", "EndToEndId"]) {
                    txd.end_to_end_id = Some(value);
                } else if let Some(rank) = [
                    &["TxDtls", "Amt"][..],
                    &["TxDtls", "AmtDtls", "TxAmt", "Amt"][..],
                    &["TxDtls", "AmtDtls", "InstdAmt", "Amt"][..],
                ]
                .iter()
                .position(|p| at(p))
                {
                    // The amount booked wins over the one instructed: the
                    // transaction's own, then its transaction amount, then
                    // the instructed amount the bank echoes.
                    if rank < txd_rank {
                        txd_rank = rank;
                        txd.amount = value;
                        txd.currency = ccy.take().unwrap_or_default();
                    }
                } else if at(&["TxDtls", "CdtDbtInd"]) {
                    txd.debit = value == "DBIT";
                } else if at(&["TxDtls"]) {
                    entry_txs.push(std::mem::take(&mut txd));
                } else if at(&["Ntry"]) {
                    let single = entry_txs.len() == 1;
                    if entry_txs.is_empty() {
                        entry_txs.push(Booking::default());
                    }
                    for mut b in entry_txs.drain(..) {
                        if b.amount.is_empty() && single || b.amount.is_empty() && b.end_to_end_id.is_none() {
                            b.amount.clone_from(&entry.amount);
                            b.currency.clone_from(&entry.currency);
                        }
                        b.debit = entry.debit;
                        b.booked = entry.booked;
                        statement.bookings.push(b);
                    }
                }
                path.pop();
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    let kind = kind.ok_or(ReadError::NotRead)?;
    if kind.starts_with("pain") {
        if status.message_id.is_empty() {
            return Err(ReadError::Missing("message id (GrpHdr/MsgId)"));
        }
        status.kind = kind;
        Ok(Document::Status(status))
    } else {
        if statement.message_id.is_empty() {
            return Err(ReadError::Missing("message id (GrpHdr/MsgId)"));
        }
        statement.kind = kind;
        Ok(Document::Statement(statement))
    }
}

fn local(name: &[u8]) -> String {
    let name = String::from_utf8_lossy(name);
    name.rsplit(':').next().unwrap_or_default().to_owned()
}

fn ends_with(path: &[String], suffix: &[&str]) -> bool {
    path.len() >= suffix.len() && path[path.len() - suffix.len()..].iter().zip(suffix).all(|(a, b)| a == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAIN002_V03: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.002.001.03"><CstmrPmtStsRpt>
<GrpHdr><MsgId>STS-1</MsgId><CreDtTm>2026-12-07T10:00:00</CreDtTm></GrpHdr>
<OrgnlGrpInfAndSts><OrgnlMsgId>csb_1</OrgnlMsgId><OrgnlMsgNmId>pain.001.001.09</OrgnlMsgNmId><GrpSts>PART</GrpSts></OrgnlGrpInfAndSts>
<OrgnlPmtInfAndSts><OrgnlPmtInfId>csb_1-EUR</OrgnlPmtInfId>
<TxInfAndSts><OrgnlEndToEndId>op_a</OrgnlEndToEndId><TxSts>ACCP</TxSts></TxInfAndSts>
<TxInfAndSts><OrgnlEndToEndId>op_b</OrgnlEndToEndId><TxSts>RJCT</TxSts><StsRsnInf><Rsn><Cd>AC04</Cd></Rsn></StsRsnInf></TxInfAndSts>
</OrgnlPmtInfAndSts></CstmrPmtStsRpt></Document>"#;

    #[test]
    fn a_status_report_names_each_transaction() {
        let Document::Status(r) = read(PAIN002_V03.as_bytes()).unwrap() else { panic!() };
        assert_eq!((r.kind.as_str(), r.message_id.as_str()), ("pain.002.001.03", "STS-1"));
        assert_eq!(r.original_message_id.as_deref(), Some("csb_1"));
        assert_eq!(r.group_status.as_deref(), Some("PART"));
        assert_eq!(r.blocks.len(), 1);
        assert_eq!(
            r.transactions,
            [
                TxStatus { end_to_end_id: "op_a".into(), status: "ACCP".into(), reason: None },
                TxStatus { end_to_end_id: "op_b".into(), status: "RJCT".into(), reason: Some("AC04".into()) },
            ]
        );
    }

    #[test]
    fn a_notification_books_by_end_to_end_id_in_both_status_shapes() {
        let v08 = r#"<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.054.001.08"><BkToCstmrDbtCdtNtfctn>
<GrpHdr><MsgId>NTF-1</MsgId></GrpHdr><Ntfctn><Id>N1</Id>
<Ntry><Amt Ccy="EUR">250.00</Amt><CdtDbtInd>DBIT</CdtDbtInd><Sts><Cd>BOOK</Cd></Sts>
<NtryDtls><TxDtls><Refs><EndToEndId>op_a</EndToEndId></Refs><Amt Ccy="EUR">250.00</Amt></TxDtls></NtryDtls></Ntry>
<Ntry><Amt Ccy="EUR">30.00</Amt><CdtDbtInd>DBIT</CdtDbtInd><Sts><Cd>BOOK</Cd></Sts>
<NtryDtls><TxDtls><Refs><EndToEndId>op_b</EndToEndId></Refs><AmtDtls><InstdAmt><Amt Ccy="EUR">10.00</Amt></InstdAmt></AmtDtls></TxDtls>
<TxDtls><Refs><EndToEndId>op_c</EndToEndId></Refs><AmtDtls><TxAmt><Amt Ccy="EUR">20.00</Amt></TxAmt></AmtDtls></TxDtls></NtryDtls></Ntry>
<Ntry><Amt Ccy="EUR">5.00</Amt><CdtDbtInd>CRDT</CdtDbtInd><Sts><Cd>PDNG</Cd></Sts></Ntry>
</Ntfctn></BkToCstmrDbtCdtNtfctn></Document>"#;
        let Document::Statement(s) = read(v08.as_bytes()).unwrap() else { panic!() };
        assert_eq!((s.kind.as_str(), s.message_id.as_str()), ("camt.054.001.08", "NTF-1"));
        let got: Vec<_> = s
            .bookings
            .iter()
            .map(|b| (b.end_to_end_id.as_deref(), b.amount.as_str(), b.currency.as_str(), b.debit, b.booked))
            .collect();
        assert_eq!(
            got,
            [
                (Some("op_a"), "250.00", "EUR", true, true),
                (Some("op_b"), "10.00", "EUR", true, true),
                (Some("op_c"), "20.00", "EUR", true, true),
                (None, "5.00", "EUR", false, false),
            ]
        );
        let v02 =
            v08.replace("camt.054.001.08", "camt.054.001.02").replace("<Sts><Cd>BOOK</Cd></Sts>", "<Sts>BOOK</Sts>");
        let Document::Statement(s2) = read(v02.as_bytes()).unwrap() else { panic!() };
        assert_eq!(s2.bookings.iter().filter(|b| b.booked).count(), 3);
    }

    #[test]
    fn anything_else_is_refused() {
        assert_eq!(read(b"<html><body>hi</body></html>"), Err(ReadError::NotRead));
        assert_eq!(read(b"not xml at all <<<"), Err(ReadError::NotRead));
        assert_eq!(
            read(b"<Document xmlns=\"urn:iso:std:iso:20022:tech:xsd:pain.001.001.09\"/>"),
            Err(ReadError::NotRead)
        );
        assert_eq!(
            read(b"<Document xmlns=\"urn:iso:std:iso:20022:tech:xsd:camt.053.001.08\"><a></b></Document>"),
            Err(ReadError::NotXml)
        );
        assert_eq!(
            read(b"<Document xmlns=\"urn:iso:std:iso:20022:tech:xsd:camt.053.001.08\"><BkToCstmrStmt/></Document>"),
            Err(ReadError::Missing("message id (GrpHdr/MsgId)"))
        );
    }
}
