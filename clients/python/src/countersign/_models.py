"""The API's objects as typed, immutable dataclasses.

Each keeps the JSON it was read from in ``.raw`` (for fields added later),
and ``canonical_request`` stays the exact object the server hashed, so the
request hash can be recomputed from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

__all__ = [
    "Approval",
    "ApiErrorInfo",
    "DECIDED_STATUSES",
    "FINAL_STATUSES",
    "Operation",
    "Payee",
    "PolicyDecision",
    "PolicyReason",
    "Proposal",
    "ProposalStatus",
    "TokenClaims",
    "parse_time",
]

ProposalStatus = Literal[
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

#: Statuses in which a proposal waits for a human decision.
WAITING_STATUSES: frozenset[str] = frozenset({"pending_approval", "approval_expired"})
#: Statuses of a committed payment whose outcome is not known yet.
UNSETTLED_STATUSES: frozenset[str] = frozenset({"executing", "unknown", "needs_review"})
#: Statuses that end the story without money moving (or after it moved: ``succeeded``).
FINAL_STATUSES: frozenset[str] = frozenset({"succeeded", "failed", "rejected", "cancelled", "expired", "reversed"})
#: Statuses meaning a human (or policy) has decided.
DECIDED_STATUSES: frozenset[str] = frozenset(
    {"approved", "rejected", "cancelled", "expired"} | UNSETTLED_STATUSES | {"succeeded", "failed", "reversed"}
)


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 string as an aware datetime (``None`` stays ``None``)."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    # Python 3.10's fromisoformat takes at most 6 fractional digits.
    if "." in text:
        head, _, tail = text.partition(".")
        digits = ""
        rest = tail
        while rest and rest[0].isdigit():
            digits, rest = digits + rest[0], rest[1:]
        text = f"{head}.{(digits + '000000')[:6]}{rest}"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class ApiErrorInfo:
    """``{code, message}``: an operation that failed or needs review, or why a
    proposal is in its status (``status_reason``)."""

    code: str
    message: str | None = None

    @classmethod
    def from_json(cls, data: Any) -> ApiErrorInfo | None:
        if not isinstance(data, Mapping) or not isinstance(data.get("code"), str):
            return None
        return cls(code=data["code"], message=_str(data.get("message")))


@dataclass(frozen=True)
class Payee:
    id: str
    legal_name: str | None
    masked_account: str | None
    trusted: bool

    @classmethod
    def from_json(cls, data: Any) -> Payee | None:
        if not isinstance(data, Mapping) or not isinstance(data.get("id"), str):
            return None
        return cls(
            id=data["id"],
            legal_name=_str(data.get("legal_name")),
            masked_account=_str(data.get("masked_account")),
            trusted=bool(data.get("trusted")),
        )


@dataclass(frozen=True)
class PolicyReason:
    rule: str
    message: str


@dataclass(frozen=True)
class PolicyDecision:
    outcome: Literal["auto_approved", "needs_approval", "denied"] | str
    required_approvals: int
    reasons: tuple[PolicyReason, ...]
    #: Approvals required from named groups: ``(group, count)`` pairs
    #: (empty when no group rule applies).
    groups: tuple[tuple[str, int], ...] = ()

    @classmethod
    def from_json(cls, data: Any) -> PolicyDecision | None:
        if not isinstance(data, Mapping):
            return None
        reasons = tuple(
            PolicyReason(rule=str(r.get("rule", "")), message=str(r.get("message", "")))
            for r in data.get("reasons") or []
            if isinstance(r, Mapping)
        )
        required = data.get("required_approvals")
        return cls(
            outcome=str(data.get("outcome", "")),
            required_approvals=required if isinstance(required, int) else 0,
            reasons=reasons,
            groups=tuple(
                (str(g.get("group", "")), int(g.get("count", 0)))
                for g in data.get("groups") or []
                if isinstance(g, Mapping)
            ),
        )


@dataclass(frozen=True)
class Approval:
    approver_id: str
    decision: Literal["approve", "reject"] | str
    reason: str | None
    via: str | None
    at: datetime | None
    # Given by a delegate for someone away: the user it counts for
    # (``approver_id`` is the delegate). None otherwise.
    on_behalf_of: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Approval:
        return cls(
            approver_id=str(data.get("approver_id", "")),
            decision=str(data.get("decision", "")),
            reason=_str(data.get("reason")),
            via=_str(data.get("via")),
            at=parse_time(data.get("at")),
            on_behalf_of=_str(data.get("on_behalf_of")),
        )


@dataclass(frozen=True)
class Operation:
    """The payment made by commit."""

    id: str
    status: Literal["pending", "accepted", "succeeded", "failed", "unknown", "needs_review", "too_late"] | str
    idempotency_key: str | None
    rail_reference: str | None
    error: ApiErrorInfo | None
    action_required: str | None
    created_at: datetime | None
    updated_at: datetime | None

    @classmethod
    def from_json(cls, data: Any) -> Operation | None:
        if not isinstance(data, Mapping) or not isinstance(data.get("id"), str):
            return None
        return cls(
            id=data["id"],
            status=str(data.get("status", "")),
            idempotency_key=_str(data.get("idempotency_key")),
            rail_reference=_str(data.get("rail_reference")),
            error=ApiErrorInfo.from_json(data.get("error")),
            action_required=_str(data.get("action_required")),
            created_at=parse_time(data.get("created_at")),
            updated_at=parse_time(data.get("updated_at")),
        )


@dataclass(frozen=True)
class Proposal:
    """A proposal as the server answered it (propose, read, wait, cancel, commit)."""

    id: str
    status: ProposalStatus | str
    kind: str
    run_id: str
    request_hash: str
    canonical_request: dict[str, Any]
    payee: Payee | None
    policy: PolicyDecision | None
    approvals: tuple[Approval, ...]
    approval_token: str | None
    approval_expires_at: datetime | None
    operation: Operation | None
    approval_url: str | None
    created_at: datetime | None
    updated_at: datetime | None
    expires_at: datetime | None
    #: Why it is in its status, when that needs saying: ``expired`` with
    #: ``no_decision`` (nobody decided in time; never approved by default),
    #: ``approval_expired`` with ``approval_lapsed``.
    status_reason: ApiErrorInfo | None = None
    #: The ETag the server sent with it (``None`` when the answer carried none).
    etag: str | None = field(default=None, compare=False)
    #: The JSON it was read from.
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], etag: str | None = None) -> Proposal:
        canonical = data.get("canonical_request")
        return cls(
            id=str(data["id"]),
            status=str(data["status"]),
            kind=str(data.get("kind") or "transfer"),
            run_id=str(data.get("run_id") or ""),
            request_hash=str(data.get("request_hash") or ""),
            canonical_request=dict(canonical) if isinstance(canonical, Mapping) else {},
            payee=Payee.from_json(data.get("payee")),
            policy=PolicyDecision.from_json(data.get("policy")),
            approvals=tuple(Approval.from_json(a) for a in data.get("approvals") or [] if isinstance(a, Mapping)),
            approval_token=_str(data.get("approval_token")),
            approval_expires_at=parse_time(data.get("approval_expires_at")),
            operation=Operation.from_json(data.get("operation")),
            approval_url=_str(data.get("approval_url")),
            created_at=parse_time(data.get("created_at")),
            updated_at=parse_time(data.get("updated_at")),
            expires_at=parse_time(data.get("expires_at")),
            status_reason=ApiErrorInfo.from_json(data.get("status_reason")),
            etag=etag,
            raw=dict(data),
        )

    @property
    def amount_minor(self) -> int | None:
        value = self.canonical_request.get("amount_minor")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def currency(self) -> str | None:
        return _str(self.canonical_request.get("currency"))

    @property
    def paid(self) -> bool:
        """True when the payment settled (``succeeded``)."""
        return self.status == "succeeded"

    @property
    def final(self) -> bool:
        """True when the status will not change by itself any more."""
        return self.status in FINAL_STATUSES

    @property
    def rejection_reason(self) -> str | None:
        """The reason of the rejecting approver, when rejected."""
        for approval in self.approvals:
            if approval.decision == "reject":
                return approval.reason
        return None


@dataclass(frozen=True)
class TokenClaims:
    """The verified claims of an approval token (SPEC section 5)."""

    iss: str
    aud: str
    sub: str
    approvers: tuple[str, ...]
    tid: str
    pid: str
    rh: str
    azp: str
    amr: tuple[str, ...]
    iat: int
    nbf: int
    exp: int
    jti: str
    kid: str
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
