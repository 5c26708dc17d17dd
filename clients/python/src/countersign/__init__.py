"""Countersign's Python client: agents propose payments, humans approve, and
the agent commits only with a verified, short-lived approval token.

    from countersign import Client

    with Client("http://localhost:8080", agent_key) as cs:
        paid = cs.pay(run_id="run-42", amount_minor=25_000, currency="USD",
                      source_account="acct_0123456789abcdef", destination="ba_northwind0007",
                      purpose_code="vendor", reference="Invoice 1842", deadline=300)
        print(paid.status)   # succeeded, or rejected / expired / failed
"""

from ._client import Client, ProposalPage, __version__, payment_request
from ._deadline import Deadline, DeadlineLike
from ._errors import (
    ApprovalTokenInvalid,
    ConnectionFailed,
    CountersignError,
    DeadlineExceeded,
    Forbidden,
    IdempotencyKeyInUse,
    IdempotencyKeyReused,
    InvalidState,
    NotFound,
    NotSettled,
    PolicyDenied,
    RateLimited,
    ServerError,
    TokenVerificationError,
    Unauthenticated,
    UnknownDestination,
    ValidationFailed,
)
from ._models import (
    DECIDED_STATUSES,
    FINAL_STATUSES,
    UNSETTLED_STATUSES,
    WAITING_STATUSES,
    ApiErrorInfo,
    Approval,
    Operation,
    Payee,
    PolicyDecision,
    PolicyReason,
    Proposal,
    ProposalStatus,
    TokenClaims,
)
from ._tokens import jcs, request_hash

__all__ = [
    "DECIDED_STATUSES",
    "FINAL_STATUSES",
    "UNSETTLED_STATUSES",
    "WAITING_STATUSES",
    "ApiErrorInfo",
    "Approval",
    "ApprovalTokenInvalid",
    "Client",
    "ConnectionFailed",
    "CountersignError",
    "Deadline",
    "DeadlineExceeded",
    "DeadlineLike",
    "Forbidden",
    "IdempotencyKeyInUse",
    "IdempotencyKeyReused",
    "InvalidState",
    "NotFound",
    "NotSettled",
    "Operation",
    "Payee",
    "PolicyDecision",
    "PolicyDenied",
    "PolicyReason",
    "Proposal",
    "ProposalPage",
    "ProposalStatus",
    "RateLimited",
    "ServerError",
    "TokenClaims",
    "TokenVerificationError",
    "Unauthenticated",
    "UnknownDestination",
    "ValidationFailed",
    "__version__",
    "jcs",
    "payment_request",
    "request_hash",
]
