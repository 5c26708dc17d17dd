//! `pain.001.001.09`, the customer credit transfer initiation: one file per
//! batch, one payment information block per currency, one transaction per
//! payment whose end-to-end id is Countersign's operation id. Element order
//! and datatypes as the official schema requires (the tests validate every
//! file written against it: e2e/rails/iso20022/pain.001.001.09.xsd).

use chrono::{DateTime, NaiveDate, Utc};
use std::collections::BTreeMap;
use std::fmt::Write;

use super::beneficiaries::{Account, Beneficiary};
use super::fields::{clip, decimal, escape, latin};

pub const NAMESPACE: &str = "urn:iso:std:iso:20022:tech:xsd:pain.001.001.09";

/// The paying company.
#[derive(Clone, Debug)]
pub struct Debtor {
    pub name: String,
    pub iban: String,
    pub bic: Option<String>,
}

/// One payment of a batch.
#[derive(Clone, Debug)]
pub struct Payment<'a> {
    /// ≤ 35 characters: the operation id.
    pub end_to_end_id: &'a str,
    pub amount_minor: u64,
    /// Upper-case ISO 4217.
    pub currency: &'a str,
    /// The currency's decimals.
    pub exponent: u32,
    pub creditor: &'a Beneficiary,
    /// The agent's reference (sent as unstructured remittance information,
    /// in the banks' character set).
    pub reference: &'a str,
}

/// One file.
#[derive(Clone, Debug)]
pub struct Batch<'a> {
    /// ≤ 35 characters: the batch id.
    pub message_id: &'a str,
    pub created: DateTime<Utc>,
    pub execution_date: NaiveDate,
    pub debtor: &'a Debtor,
    pub payments: Vec<Payment<'a>>,
}

/// The file's bytes. The same batch always gives the same bytes.
pub fn write(batch: &Batch<'_>) -> String {
    let mut by_currency: BTreeMap<&str, Vec<&Payment<'_>>> = BTreeMap::new();
    for p in &batch.payments {
        by_currency.entry(p.currency).or_default().push(p);
    }
    let mut x = String::with_capacity(1024 + 700 * batch.payments.len());
    x.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(x, "<Document xmlns=\"{NAMESPACE}\">");
    x.push_str("<CstmrCdtTrfInitn>\n<GrpHdr>\n");
    el(&mut x, "MsgId", batch.message_id);
    el(&mut x, "CreDtTm", &batch.created.format("%Y-%m-%dT%H:%M:%S").to_string());
    el(&mut x, "NbOfTxs", &batch.payments.len().to_string());
    el(&mut x, "CtrlSum", &control_sum(batch.payments.iter()));
    x.push_str("<InitgPty>");
    el(&mut x, "Nm", &clip(&latin(&batch.debtor.name), 140));
    x.push_str("</InitgPty>\n</GrpHdr>\n");
    for (currency, payments) in &by_currency {
        let sepa = *currency == "EUR";
        x.push_str("<PmtInf>\n");
        el(&mut x, "PmtInfId", &format!("{}-{currency}", batch.message_id));
        el(&mut x, "PmtMtd", "TRF");
        el(&mut x, "BtchBookg", "false");
        el(&mut x, "NbOfTxs", &payments.len().to_string());
        el(&mut x, "CtrlSum", &control_sum(payments.iter().copied()));
        if sepa {
            x.push_str("<PmtTpInf><SvcLvl><Cd>SEPA</Cd></SvcLvl></PmtTpInf>\n");
        }
        x.push_str("<ReqdExctnDt>");
        el(&mut x, "Dt", &batch.execution_date.format("%Y-%m-%d").to_string());
        x.push_str("</ReqdExctnDt>\n<Dbtr>");
        el(&mut x, "Nm", &clip(&latin(&batch.debtor.name), 140));
        x.push_str("</Dbtr>\n<DbtrAcct><Id>");
        el(&mut x, "IBAN", &batch.debtor.iban);
        x.push_str("</Id></DbtrAcct>\n<DbtrAgt><FinInstnId>");
        match &batch.debtor.bic {
            Some(bic) => el(&mut x, "BICFI", bic),
            None => x.push_str("<Othr><Id>NOTPROVIDED</Id></Othr>"),
        }
        x.push_str("</FinInstnId></DbtrAgt>\n");
        el(&mut x, "ChrgBr", if sepa { "SLEV" } else { "SHAR" });
        for p in payments {
            transaction(&mut x, p);
        }
        x.push_str("</PmtInf>\n");
    }
    x.push_str("</CstmrCdtTrfInitn>\n</Document>\n");
    x
}

fn transaction(x: &mut String, p: &Payment<'_>) {
    x.push_str("<CdtTrfTxInf>\n<PmtId>");
    el(x, "InstrId", p.end_to_end_id);
    el(x, "EndToEndId", p.end_to_end_id);
    x.push_str("</PmtId>\n<Amt>");
    let _ = write!(x, "<InstdAmt Ccy=\"{}\">{}</InstdAmt>", escape(p.currency), decimal(p.amount_minor, p.exponent));
    x.push_str("</Amt>\n");
    if let Some(bic) = &p.creditor.bic {
        x.push_str("<CdtrAgt><FinInstnId>");
        el(x, "BICFI", bic);
        x.push_str("</FinInstnId></CdtrAgt>\n");
    }
    x.push_str("<Cdtr>");
    el(x, "Nm", &clip(&latin(&p.creditor.name), 140));
    x.push_str("</Cdtr>\n<CdtrAcct><Id>");
    match &p.creditor.account {
        Account::Iban(iban) => el(x, "IBAN", iban),
        Account::Other(id) => {
            x.push_str("<Othr>");
            el(x, "Id", id);
            x.push_str("</Othr>");
        }
    }
    x.push_str("</Id></CdtrAcct>\n");
    let reference = clip(&latin(p.reference.trim()), 140);
    if !reference.trim().is_empty() {
        x.push_str("<RmtInf>");
        el(x, "Ustrd", reference.trim());
        x.push_str("</RmtInf>\n");
    }
    x.push_str("</CdtTrfTxInf>\n");
}

/// The sum of the payments' amounts, as the schema's `DecimalNumber` (the
/// amounts of one file may be in several currencies: a checksum, not money).
fn control_sum<'a>(payments: impl Iterator<Item = &'a Payment<'a>>) -> String {
    // Summed in the largest exponent, so mixing 0- and 2-decimal currencies
    // stays exact.
    let mut sum: u128 = 0;
    let mut exp = 0u32;
    let list: Vec<_> = payments.collect();
    for p in &list {
        exp = exp.max(p.exponent);
    }
    for p in &list {
        sum += u128::from(p.amount_minor) * 10u128.pow(exp - p.exponent);
    }
    if exp == 0 {
        return sum.to_string();
    }
    let scale = 10u128.pow(exp);
    format!("{}.{:0width$}", sum / scale, sum % scale, width = exp as usize)
}

fn el(x: &mut String, name: &str, text: &str) {
    let _ = write!(x, "<{name}>{}</{name}>", escape(text));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creditor(account: Account) -> Beneficiary {
        Beneficiary { id: "ba_1".into(), name: "Northwind Traders".into(), account, bic: Some("COBADEFFXXX".into()) }
    }

    #[test]
    fn a_batch_is_one_block_per_currency_and_deterministic() {
        let debtor = Debtor { name: "Acme Corp".into(), iban: "DE89370400440532013000".into(), bic: None };
        let eur = creditor(Account::Iban("FR1420041010050500013M02606".into()));
        let usd = creditor(Account::Other("123456789".into()));
        let created = DateTime::parse_from_rfc3339("2026-12-07T10:00:00Z").unwrap().with_timezone(&Utc);
        let batch = Batch {
            message_id: "csb_1",
            created,
            execution_date: created.date_naive(),
            debtor: &debtor,
            payments: vec![
                Payment {
                    end_to_end_id: "op_a",
                    amount_minor: 25_000,
                    currency: "EUR",
                    exponent: 2,
                    creditor: &eur,
                    reference: "Invoice <1842> & «x»",
                },
                Payment {
                    end_to_end_id: "op_b",
                    amount_minor: 999,
                    currency: "USD",
                    exponent: 2,
                    creditor: &usd,
                    reference: "",
                },
                Payment {
                    end_to_end_id: "op_c",
                    amount_minor: 5,
                    currency: "EUR",
                    exponent: 2,
                    creditor: &eur,
                    reference: "r",
                },
            ],
        };
        let xml = write(&batch);
        assert_eq!(xml, write(&batch));
        assert_eq!(xml.matches("<PmtInf>").count(), 2);
        assert!(xml.contains("<NbOfTxs>3</NbOfTxs><CtrlSum>260.04</CtrlSum>"), "{xml}");
        assert!(xml.contains("<PmtInfId>csb_1-EUR</PmtInfId>"));
        assert!(xml.contains("<InstdAmt Ccy=\"EUR\">250.00</InstdAmt>"));
        assert!(xml.contains("<Ustrd>Invoice .1842. . .x.</Ustrd>"), "{xml}");
        assert!(xml.contains("<Othr><Id>NOTPROVIDED</Id></Othr>"));
        assert!(xml.contains("<Othr><Id>123456789</Id></Othr>"));
        assert_eq!(xml.matches("<RmtInf>").count(), 2, "an empty reference sends none");
    }

    #[test]
    fn control_sums_mix_exponents_exactly() {
        let c = creditor(Account::Other("1".into()));
        let p = |amount, currency, exponent| Payment {
            end_to_end_id: "e",
            amount_minor: amount,
            currency,
            exponent,
            creditor: &c,
            reference: "",
        };
        let list = [p(100, "JPY", 0), p(5, "EUR", 2)];
        assert_eq!(control_sum(list.iter()), "100.05");
        assert_eq!(control_sum([p(100, "JPY", 0)].iter()), "100");
    }
}
