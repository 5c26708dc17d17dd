//! The proposal lifecycle as a state machine. No transition leaves a
//! terminal state; the store applies transitions as compare-and-set.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
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

impl fmt::Display for ProposalStatus {
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
