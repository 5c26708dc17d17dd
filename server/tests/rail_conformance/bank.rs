//! Bank files: the ISO 20022 rail on its own SQLite ledger, its outbox and
//! inbox folders, and e2e/rails/bank/bank_sim.py as the bank — which
//! refuses (exit 2) any file not valid against the official
//! pain.001.001.09 XSD, and answers with pain.002 and camt.054 it validates
//! against theirs.

use countersign::config::rails::BankFileRail;
use countersign::rail::iso20022::BankFiles;
use countersign::rail::{Decline, Rail};
use countersign::store::{Backend, Db};
use std::path::{Path, PathBuf};

use crate::harness::{checkers_python, fresh, repo, Garbage, Harness, Order, Refusing};

pub const BENEFICIARIES: &str = r#"
[[beneficiary]]
id = "ba_northwind0007"
name = "Northwind Traders Ltd"
iban = "FR1420041010050500013M02606"
bic = "BNPAFRPP"

[[beneficiary]]
id = "ba_closed0001"
name = "Closed Account GmbH"
iban = "DE89370400440532013000"
"#;

pub struct BankHarness {
    rail: BankFiles,
    python: PathBuf,
    dir: tempfile::TempDir,
    /// `--reject E2E=CODE` for the bank's next answer.
    reject: std::sync::Mutex<Vec<String>>,
}

/// A bank-file rail's folders and settings in `dir`.
pub fn settings(dir: &Path) -> BankFileRail {
    for sub in ["out", "in"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    std::fs::write(dir.join("beneficiaries.toml"), BENEFICIARIES).unwrap();
    BankFileRail {
        outbox: dir.join("out"),
        inbox: dir.join("in"),
        debtor_name: "Acme Corp".into(),
        debtor_iban: "DE89370400440532013000".into(),
        debtor_bic: Some("COBADEFFXXX".into()),
        beneficiaries: dir.join("beneficiaries.toml"),
        cut_every_secs: 0,
    }
}

/// Runs the bank once over the folders: every new file validated against
/// the XSD (the test fails on an invalid one), answers written to the inbox.
pub fn bank_answers(python: &Path, dir: &Path, args: &[String]) -> serde_json::Value {
    let out = std::process::Command::new(python)
        .arg(repo().join("e2e/rails/bank/bank_sim.py"))
        .arg("respond")
        .arg("--outbox")
        .arg(dir.join("out"))
        .arg("--inbox")
        .arg(dir.join("in"))
        .arg("--state")
        .arg(dir.join("bank-state.json"))
        .args(args)
        .output()
        .expect("run the bank");
    assert!(
        out.status.success(),
        "the bank refused what Countersign wrote (XSD): {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).expect("the bank's summary")
}

impl BankHarness {
    pub async fn start() -> Option<BankHarness> {
        let python = checkers_python()?;
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect(&Backend::Sqlite { data_dir: dir.path().join("data") }).await.unwrap();
        let rail = BankFiles::new("bank", Some("acme".into()), settings(dir.path()), db, Default::default()).unwrap();
        Some(BankHarness { rail, python, dir, reject: Default::default() })
    }
}

#[async_trait::async_trait]
impl Harness for BankHarness {
    fn rail(&self) -> &dyn Rail {
        &self.rail
    }

    fn order(&self, amount: u64) -> Order {
        let operation = fresh("op");
        Order {
            key: format!("cs-{operation}"),
            operation,
            amount,
            currency: "EUR".into(),
            destination: "ba_northwind0007".into(),
        }
    }

    /// The bank's view: transactions with this end-to-end id in the files.
    async fn count(&self, o: &Order) -> usize {
        self.rail.sync().await.unwrap();
        let needle = format!("<EndToEndId>{}</EndToEndId>", o.operation);
        std::fs::read_dir(self.dir.path().join("out"))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .map(|e| std::fs::read_to_string(e.path()).unwrap().matches(&needle).count())
            .sum()
    }

    async fn settle(&self) {
        self.rail.sync().await.unwrap();
        let mut args = Vec::new();
        for r in self.reject.lock().unwrap().drain(..) {
            args.push("--reject".to_owned());
            args.push(r);
        }
        bank_answers(&self.python, self.dir.path(), &args);
        self.rail.sync().await.unwrap();
    }

    async fn refused_order(&self) -> (Order, Decline, Refusing) {
        let o = Order { destination: "ba_closed0001".into(), ..self.order(5_000) };
        self.reject.lock().unwrap().push(format!("{}=AC04", o.operation));
        (o, Decline::DestinationClosed, Refusing::Later)
    }

    /// Down: the outbox folder is gone (an unmounted share).
    async fn down(&self) {
        std::fs::rename(self.dir.path().join("out"), self.dir.path().join("out-away")).unwrap();
    }

    async fn up(&self) {
        std::fs::rename(self.dir.path().join("out-away"), self.dir.path().join("out")).unwrap();
    }

    async fn drop_next(&self) -> bool {
        false
    }

    async fn garbage(&self) -> Garbage {
        std::fs::write(self.dir.path().join("in/9999-garbage.xml"), b"<html><body>not a statement</body></html>")
            .unwrap();
        Garbage::Document
    }
}

/// The other shapes a bank answers in: an end-of-day statement (camt.053)
/// books, and a status report of the version most banks still send
/// (pain.002.001.03) rejects with its reason.
#[tokio::test]
async fn a_statement_and_an_older_status_report_are_read_too() {
    use countersign::rail::{CreateOutcome, Decline, Lookup, RailStatus};
    let Some(h) = BankHarness::start().await else { return };
    let (paid, refused) = (h.order(12_345), h.order(6_789));
    for o in [&paid, &refused] {
        assert!(matches!(h.rail.create_transfer(&o.as_order()).await, CreateOutcome::Accepted(_)));
    }
    h.rail.sync().await.unwrap();
    let reject = format!("{}=AM04", refused.operation);
    let args: Vec<String> =
        ["--statement", "camt053", "--pain002", "03", "--reject", &reject].iter().map(|s| (*s).to_owned()).collect();
    bank_answers(&h.python, h.dir.path(), &args);
    h.rail.sync().await.unwrap();
    let since = chrono::Utc::now() - chrono::Duration::hours(1);
    fn lookup(o: &Order, since: chrono::DateTime<chrono::Utc>) -> Lookup<'_> {
        Lookup { key: &o.key, destination: &o.destination, since }
    }
    let booked = h.rail.find(&lookup(&paid, since)).await.unwrap().pop().unwrap();
    assert_eq!(booked.status, RailStatus::Paid);
    assert!(booked.evidence.as_deref().unwrap().starts_with("camt.053.001.08"), "{booked:?}");
    let rejected = h.rail.find(&lookup(&refused, since)).await.unwrap().pop().unwrap();
    assert_eq!(rejected.status, RailStatus::Failed);
    assert_eq!(rejected.failure.map(|f| f.decline), Some(Decline::InsufficientFunds));
}

/// A payee whose bank details leave the beneficiaries file after its
/// payment was accepted holds back its own batch only: the next batch goes
/// out, and the held one once the details are back.
#[tokio::test]
async fn a_batch_whose_payee_lost_its_details_holds_back_only_itself() {
    use countersign::rail::CreateOutcome;
    let Some(python) = checkers_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = Db::connect(&Backend::Sqlite { data_dir: dir.path().join("data") }).await.unwrap();
    let settings = BankFileRail { cut_every_secs: 1, ..settings(dir.path()) };
    let rail = BankFiles::new("bank", Some("acme".into()), settings, db, Default::default()).unwrap();
    let h = BankHarness { rail, python, dir, reject: Default::default() };
    let held = h.order(1_000);
    assert!(matches!(h.rail.create_transfer(&held.as_order()).await, CreateOutcome::Accepted(_)));
    let without_northwind = BENEFICIARIES
        .split("[[beneficiary]]")
        .filter(|b| !b.contains("ba_northwind0007"))
        .collect::<Vec<_>>()
        .join("[[beneficiary]]");
    std::fs::write(h.dir.path().join("beneficiaries.toml"), &without_northwind).unwrap();
    h.rail.sync().await.unwrap();
    assert_eq!(h.count(&held).await, 0, "not written without the payee's details");

    let other = Order { destination: "ba_closed0001".into(), ..h.order(2_000) };
    assert!(matches!(h.rail.create_transfer(&other.as_order()).await, CreateOutcome::Accepted(_)));
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    assert_eq!(h.count(&other).await, 1, "the next batch goes out");
    assert_eq!(h.count(&held).await, 0);

    std::fs::write(h.dir.path().join("beneficiaries.toml"), BENEFICIARIES).unwrap();
    assert_eq!(h.count(&held).await, 1, "written once its details are back");
    bank_answers(&h.python, h.dir.path(), &[]);
}
