//! The proposal lifecycle as a state machine. No transition leaves a
//! terminal state; the store applies transitions as compare-and-set.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
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
    pub const ALL: &'static [ProposalStatus] = &[
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
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            PendingApproval => "pending_approval",
            Approved => "approved",
            Rejected => "rejected",
            Cancelled => "cancelled",
            Expired => "expired",
            ApprovalExpired => "approval_expired",
            Executing => "executing",
            Succeeded => "succeeded",
            Failed => "failed",
            Unknown => "unknown",
            NeedsReview => "needs_review",
            Reversed => "reversed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|st| st.as_str() == s)
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
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
    pub const ALL: [OpStatus; 7] = [
        OpStatus::Pending,
        OpStatus::Accepted,
        OpStatus::Succeeded,
        OpStatus::Failed,
        OpStatus::Unknown,
        OpStatus::NeedsReview,
        OpStatus::TooLate,
    ];
    pub const OPEN: [OpStatus; 3] = [OpStatus::Pending, OpStatus::Accepted, OpStatus::Unknown];

    pub fn as_str(&self) -> &'static str {
        match self {
            OpStatus::Pending => "pending",
            OpStatus::Accepted => "accepted",
            OpStatus::Succeeded => "succeeded",
            OpStatus::Failed => "failed",
            OpStatus::Unknown => "unknown",
            OpStatus::NeedsReview => "needs_review",
            OpStatus::TooLate => "too_late",
        }
    }

    pub fn parse(s: &str) -> Option<OpStatus> {
        OpStatus::ALL.into_iter().find(|st| st.as_str() == s)
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
