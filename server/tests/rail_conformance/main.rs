//! The rail conformance suite: one set of checks every connector passes,
//! each run against a real counterpart in its own process or folder:
//!
//! | harness | connector | counterpart |
//! |---|---|---|
//! | `simulator` | `rail::simulator` | the bundled rail simulator (HTTP, its own SQLite file) |
//! | `stripe_transfers`, `stripe_payouts` | `rail::stripe` | e2e/rails/stripe/stripe_fake.py: Stripe's API as its published OpenAPI description says (a Python process) |
//! | `bank_files` | `rail::iso20022` | e2e/rails/bank/bank_sim.py: a bank that validates every file against the official ISO 20022 XSD and answers with pain.002 and camt.054 |
//!
//! The checks (each in every harness's module):
//! - a resubmission after a lost answer makes one payment at the rail;
//! - an unknown outcome is settled by reading the rail;
//! - a refusal is mapped to a clear reason;
//! - a settled transfer is reversed, or the rail says it is too late;
//! - a rail that is down fails closed: nothing recorded, nothing lost, and
//!   once it is back the same order makes one payment;
//! - an answer that is garbage is never a payment, and never a refusal;
//! - what the rail made is listed since a time.
//!
//! The HTTP counterparts sit behind a TCP proxy this file runs, which can
//! refuse every connection ("down") and forward again ("up").

mod bank;
mod harness;
mod localstripe;
mod sim;
mod stripe;
mod suite;

/// Each check of the suite, for one harness.
macro_rules! conformance {
    ($name:ident, $start:expr) => {
        mod $name {
            use super::*;

            async fn start() -> Option<Box<dyn harness::Harness>> {
                $start.await
            }

            #[tokio::test]
            async fn a_resubmission_after_a_lost_answer_makes_one_payment() {
                let Some(h) = start().await else { return };
                suite::resubmission_after_a_lost_answer(h.as_ref()).await;
            }

            #[tokio::test]
            async fn an_unknown_outcome_is_settled_by_reading_the_rail() {
                let Some(h) = start().await else { return };
                suite::unknown_settled_by_reading(h.as_ref()).await;
            }

            #[tokio::test]
            async fn a_refusal_is_mapped_to_a_clear_reason() {
                let Some(h) = start().await else { return };
                suite::refusal_mapped(h.as_ref()).await;
            }

            #[tokio::test]
            async fn a_settled_transfer_is_reversed_or_too_late() {
                let Some(h) = start().await else { return };
                suite::reversal(h.as_ref()).await;
            }

            #[tokio::test]
            async fn a_rail_that_is_down_fails_closed_and_loses_nothing() {
                let Some(h) = start().await else { return };
                suite::down_fails_closed(h.as_ref()).await;
            }

            #[tokio::test]
            async fn garbage_is_never_a_payment_nor_a_refusal() {
                let Some(h) = start().await else { return };
                suite::garbage(h.as_ref()).await;
            }

            #[tokio::test]
            async fn what_the_rail_made_is_listed_since_a_time() {
                let Some(h) = start().await else { return };
                suite::list_since(h.as_ref()).await;
            }
        }
    };
}

conformance!(simulator, async { Some(Box::new(sim::SimHarness::start().await) as Box<dyn harness::Harness>) });
conformance!(stripe_transfers, async {
    stripe::StripeHarness::start(stripe::Mode::Transfers).await.map(|h| Box::new(h) as Box<dyn harness::Harness>)
});
conformance!(stripe_payouts, async {
    stripe::StripeHarness::start(stripe::Mode::Payouts).await.map(|h| Box::new(h) as Box<dyn harness::Harness>)
});
conformance!(bank_files, async { bank::BankHarness::start().await.map(|h| Box::new(h) as Box<dyn harness::Harness>) });
