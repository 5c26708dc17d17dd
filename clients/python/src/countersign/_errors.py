"""Typed errors.

Every refusal by the API arrives as ``{"error": {"code", "message", "details",
"request_id", ...}}``; it is raised here as a :class:`CountersignError` (or the
subclass for its ``code``). Act on ``.code``; ``.message`` is for people.

Conditions found by the client itself (a deadline, a token that does not
verify, a payment not settled in time, a network failure) have their own
classes, all below :class:`CountersignError` so one ``except`` catches all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._models import Proposal

__all__ = [
    "ApprovalTokenInvalid",
    "ConnectionFailed",
    "CountersignError",
    "DeadlineExceeded",
    "Forbidden",
    "IdempotencyKeyInUse",
    "IdempotencyKeyReused",
    "InvalidState",
    "NotFound",
    "NotSettled",
    "PolicyDenied",
    "RateLimited",
    "ServerError",
    "TokenVerificationError",
    "Unauthenticated",
    "UnknownDestination",
    "ValidationFailed",
    "error_from_response",
]


class CountersignError(Exception):
    """An error from the API (``code`` is its ``error.code``) or the client."""

    code: str
    status: int | None
    message: str
    request_id: str | None
    details: list[dict[str, Any]]
    reason: str | None
    body: Any

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: int | None = None,
        request_id: str | None = None,
        details: list[dict[str, Any]] | None = None,
        reason: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.status = status
        self.message = message
        self.request_id = request_id
        self.details = list(details or [])
        self.reason = reason
        self.body = body

    def __str__(self) -> str:
        where = f"HTTP {self.status} " if self.status is not None else ""
        extra = f" (reason: {self.reason})" if self.reason else ""
        rid = f" [request {self.request_id}]" if self.request_id else ""
        return f"{where}{self.code}: {self.message}{extra}{rid}"


# ------------------------------------------------------------ API error codes


class Unauthenticated(CountersignError):
    """401 ``unauthenticated``: no, unknown or revoked agent key."""


class ApprovalTokenInvalid(CountersignError):
    """401 ``approval_token_invalid``: the server refused the token; ``.reason`` says which check."""


class Forbidden(CountersignError):
    """403 ``forbidden``."""


class PolicyDenied(CountersignError):
    """403 ``policy_denied``: ``.rules`` lists the rules that fired."""

    @property
    def rules(self) -> list[str]:
        return [str(d["rule"]) for d in self.details if "rule" in d]


class NotFound(CountersignError):
    """404 ``not_found`` (also another tenant's or agent's object)."""


class InvalidState(CountersignError):
    """409 ``invalid_state``: ``.current_status`` is the proposal's status."""

    current_status: str | None

    def __init__(self, message: str, *, current_status: str | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        if current_status is None:
            for d in self.details:
                if isinstance(d.get("current_status"), str):
                    current_status = d["current_status"]
                    break
        self.current_status = current_status


class IdempotencyKeyInUse(CountersignError):
    """409 ``idempotency_key_in_use``: the first request under this key still runs; retry later."""


class ValidationFailed(CountersignError):
    """422 ``validation_failed``: ``.fields`` names every offending field."""

    @property
    def fields(self) -> list[str]:
        return [str(d["field"]) for d in self.details if "field" in d]


class UnknownDestination(CountersignError):
    """422 ``unknown_destination``: the destination is not in the payee registry."""


class IdempotencyKeyReused(CountersignError):
    """422 ``idempotency_key_reused``: the key was first used with another body."""


class RateLimited(CountersignError):
    """429 ``rate_limited``: wait ``.retry_after`` seconds (``None`` when not given)."""

    retry_after: float | None

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class ServerError(CountersignError):
    """A 5xx answer (``internal_error``, ``rail_unavailable``, a proxy's page...)."""


# ------------------------------------------------------------ client-side


class ConnectionFailed(CountersignError):
    """The server could not be reached, or the connection broke (code ``connection_failed``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="connection_failed")


class DeadlineExceeded(CountersignError):
    """The overall deadline passed before a decision (code ``deadline_exceeded``).

    Raised by :meth:`Client.wait` (``.proposal`` is the last state seen) and by
    :meth:`Client.pay`, which has then cancelled the proposal and committed
    nothing (``.proposal`` is the proposal after the cancel).
    """

    proposal: Proposal | None

    def __init__(self, message: str, *, proposal: Proposal | None = None) -> None:
        super().__init__(message, code="deadline_exceeded")
        self.proposal = proposal


class NotSettled(CountersignError):
    """A committed payment is still not final when the settle deadline passed
    (code ``not_settled``). The money may have moved: never pay again; read
    the proposal later (``.proposal`` is the last state seen)."""

    proposal: Proposal | None

    def __init__(self, message: str, *, proposal: Proposal | None = None) -> None:
        super().__init__(message, code="not_settled")
        self.proposal = proposal


class TokenVerificationError(CountersignError):
    """The approval token failed a check made by this client (code
    ``token_verification_failed``; ``.reason`` names the check, e.g.
    ``wrong_alg``, ``unknown_kid``, ``bad_signature``, ``wrong_proposal``)."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message, code="token_verification_failed", reason=reason)


_BY_CODE: dict[str, type[CountersignError]] = {
    "unauthenticated": Unauthenticated,
    "approval_token_invalid": ApprovalTokenInvalid,
    "forbidden": Forbidden,
    "policy_denied": PolicyDenied,
    "not_found": NotFound,
    "invalid_state": InvalidState,
    "idempotency_key_in_use": IdempotencyKeyInUse,
    "validation_failed": ValidationFailed,
    "unknown_destination": UnknownDestination,
    "idempotency_key_reused": IdempotencyKeyReused,
    "rate_limited": RateLimited,
}


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def error_from_response(status: int, headers: Mapping[str, str], body: Any) -> CountersignError:
    """The typed error for an error answer (``body`` is its parsed JSON, or text)."""
    envelope = body.get("error") if isinstance(body, dict) else None
    if not isinstance(envelope, dict):
        code = "internal_error" if status >= 500 else f"http_{status}"
        cls: type[CountersignError] = ServerError if status >= 500 else CountersignError
        # Never echo an unexpected body (it may be a proxy's page): status only.
        return cls(f"unexpected HTTP {status} answer", code=code, status=status,
                   request_id=headers.get("x-request-id"), body=body)
    code = str(envelope.get("code") or f"http_{status}")
    message = str(envelope.get("message") or code)
    raw_details = envelope.get("details")
    details = [d for d in raw_details if isinstance(d, dict)] if isinstance(raw_details, list) else []
    reason = envelope.get("reason")
    if not isinstance(reason, str):
        reason = next((d["reason"] for d in details if isinstance(d.get("reason"), str)), None)
    request_id = envelope.get("request_id") or headers.get("x-request-id")
    common: dict[str, Any] = {
        "code": code,
        "status": status,
        "request_id": str(request_id) if request_id else None,
        "details": details,
        "reason": reason,
        "body": body,
    }
    cls = _BY_CODE.get(code) or (ServerError if status >= 500 else CountersignError)
    if cls is RateLimited:
        return RateLimited(message, retry_after=_retry_after(headers), **common)
    if cls is InvalidState:
        current = envelope.get("current_status")
        return InvalidState(message, current_status=current if isinstance(current, str) else None, **common)
    return cls(message, **common)
