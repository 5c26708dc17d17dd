//! The proposal lifecycle as a state machine. No transition leaves a
//! terminal state; the store applies transitions as compare-and-set.

use serde::{Deserialize, Serialize};
use std::fmt;
use strum::{EnumCount, EnumString, IntoStaticStr, VariantArray};

// The names (`as_str`, `parse`, serde's) are the variants' in snake case:
// strum and serde each derive them by the same rule (tests pin every one).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize, EnumString, IntoStaticStr, VariantArray)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ProposalStatus {
    PendingApproval,
    Approved,
    Rejected,
    Cancelled,
    Expired,
    ApprovalExpired,
    Executing,
    Succeeded,
    Failed,
    Unknown,
    NeedsReview,
    Reversed,
}

use ProposalStatus::*;

impl ProposalStatus {
    /// Every status, in declaration order.
    pub const ALL: &'static [ProposalStatus] = <Self as VariantArray>::VARIANTS;

    pub fn as_str(&self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self, Rejected | Cancelled | Expired | Failed | Reversed)
    }

    /// Whether the lifecycle allows moving from `self` to `to`.
    pub fn can_become(&self, to: ProposalStatus) -> bool {
        match self {
            PendingApproval => matches!(to, Approved | Rejected | Cancelled | Expired),
            Approved => matches!(to, Executing | Cancelled | ApprovalExpired),
            ApprovalExpired => matches!(to, Approved | Rejected | Cancelled | Expired),
            Executing => matches!(to, Succeeded | Failed | Unknown | NeedsReview),
            // Reconciliation found the rail accepted it, and it has not settled yet.
            Unknown => matches!(to, Executing | Succeeded | Failed | NeedsReview),
            NeedsReview => matches!(to, Succeeded | Failed),
            Succeeded => matches!(to, Reversed),
            Rejected | Cancelled | Expired | Failed | Reversed => false,
        }
    }
}

impl ProposalStatus {
    /// The statuses in which a proposal waits for a human decision.
    pub const AWAITING_DECISION: [ProposalStatus; 2] = [PendingApproval, ApprovalExpired];

    /// Whether a proposal in this status waits for a human decision.
    pub fn awaits_decision(self) -> bool {
        Self::AWAITING_DECISION.contains(&self)
    }

    /// What a person reads for this status (no internal codes on screen).
    pub fn label(&self) -> &'static str {
        match self {
            PendingApproval => "Waiting for approval",
            Approved => "Approved",
            Rejected => "Rejected",
            Cancelled => "Cancelled",
            Expired => "Expired",
            ApprovalExpired => "Approval expired",
            Executing => "Paying",
            Succeeded => "Paid",
            Failed => "Failed",
            Unknown => "Checking with the bank",
            NeedsReview => "Needs review",
            Reversed => "Reversed",
        }
    }
}

impl fmt::Display for ProposalStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an operation (the payment of a committed proposal) stands.
/// `Pending`, `Accepted` and `Unknown` are open (reconciliation looks at
/// them); the rest are settled or wait for a human.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, EnumCount, EnumString, IntoStaticStr, VariantArray,
)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum OpStatus {
    /// Recorded; the rail has not answered yet (or the process died mid-call).
    Pending,
    /// The rail accepted the transfer; it has not settled yet.
    Accepted,
    Succeeded,
    /// A typed decline: the money did not move.
    Failed,
    /// The money may or may not have moved.
    Unknown,
    /// Reconciliation could not decide: a human must.
    NeedsReview,
    /// A reversal past the rail's cutoff: escalate to operations.
    TooLate,
}

impl OpStatus {
    /// Every status, in declaration order.
    pub const ALL: [OpStatus; OpStatus::COUNT] = *OpStatus::VARIANTS.first_chunk().expect("COUNT variants");
    pub const OPEN: [OpStatus; 3] = [OpStatus::Pending, OpStatus::Accepted, OpStatus::Unknown];

    pub fn as_str(&self) -> &'static str {
        self.into()
    }

    pub fn parse(s: &str) -> Option<OpStatus> {
        s.parse().ok()
    }

    /// What a person reads for this status.
    pub fn label(&self) -> &'static str {
        match self {
            OpStatus::Pending => "Sent to the bank",
            OpStatus::Accepted => "Accepted by the bank",
            OpStatus::Succeeded => "Paid",
            OpStatus::Failed => "Failed",
            OpStatus::Unknown => "Checking with the bank",
            OpStatus::NeedsReview => "Needs review",
            OpStatus::TooLate => "Too late to reverse",
        }
    }
}

impl fmt::Display for OpStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_round_trip() {
        for st in ProposalStatus::ALL {
            assert_eq!(ProposalStatus::parse(st.as_str()), Some(*st));
            assert_eq!(serde_json::to_value(st).unwrap(), serde_json::json!(st.as_str()));
        }
        assert_eq!(ProposalStatus::parse("done"), None);
    }

    #[test]
    fn operation_statuses_round_trip_and_every_status_has_words() {
        for st in OpStatus::ALL {
            assert_eq!(OpStatus::parse(st.as_str()), Some(st));
            assert_eq!(serde_json::to_value(st).unwrap(), serde_json::json!(st.as_str()));
            assert!(!st.label().contains('_'));
        }
        for st in ProposalStatus::ALL {
            assert!(!st.label().contains('_'), "{st}: no internal code on screen");
        }
        assert_eq!(OpStatus::parse("done"), None);
    }

    /// The stored and wire names, every one, in `ALL`'s order: `ALL` lists
    /// each variant once, and each name reads back as its variant.
    #[test]
    fn every_status_has_its_name_and_all_lists_each_once() {
        let names: Vec<&str> = ProposalStatus::ALL.iter().map(ProposalStatus::as_str).collect();
        assert_eq!(
            names,
            [
                "pending_approval",
                "approved",
                "rejected",
                "cancelled",
                "expired",
                "approval_expired",
                "executing",
                "succeeded",
                "failed",
                "unknown",
                "needs_review",
                "reversed",
            ]
        );
        for st in ProposalStatus::ALL {
            assert_eq!(st.as_str().parse::<ProposalStatus>(), Ok(*st), "FromStr, as the store reads it");
        }
        let names: Vec<&str> = OpStatus::ALL.iter().map(OpStatus::as_str).collect();
        assert_eq!(names, ["pending", "accepted", "succeeded", "failed", "unknown", "needs_review", "too_late"]);
        for st in OpStatus::ALL {
            assert_eq!(st.as_str().parse::<OpStatus>(), Ok(st), "FromStr, as the store reads it");
        }
        assert!("Pending".parse::<OpStatus>().is_err(), "exact names only");
        assert_eq!(ProposalStatus::parse("Approved"), None, "exact names only");
    }

    #[test]
    fn a_code_both_lifecycles_use_reads_the_same() {
        // The console's badge shows either kind of status by its code.
        for op in OpStatus::ALL {
            if let Some(p) = ProposalStatus::parse(op.as_str()) {
                assert_eq!(p.label(), op.label(), "{op}");
            }
        }
    }

    #[test]
    fn the_happy_path_is_allowed() {
        let path = [PendingApproval, Approved, Executing, Succeeded, Reversed];
        for pair in path.windows(2) {
            assert!(pair[0].can_become(pair[1]), "{} -> {}", pair[0], pair[1]);
        }
    }

    proptest! {
        #[test]
        fn terminal_states_never_move(walk in prop::collection::vec(0usize..12, 1..20)) {
            // Follow any sequence of attempted transitions; once terminal, stay.
            let mut st = PendingApproval;
            for i in walk {
                let to = ProposalStatus::ALL[i];
                if st.is_terminal() {
                    prop_assert!(!st.can_become(to));
                }
                if st.can_become(to) {
                    st = to;
                }
            }
        }

        #[test]
        fn nothing_goes_back_to_pending(i in 0usize..12) {
            prop_assert!(!ProposalStatus::ALL[i].can_become(PendingApproval));
        }
    }
}
