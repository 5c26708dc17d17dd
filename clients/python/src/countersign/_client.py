"""The Countersign agent client (synchronous, on httpx)."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Generator, Mapping
from contextlib import closing
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import httpx

from ._deadline import Deadline, DeadlineLike
from ._errors import (
    ApprovalTokenInvalid,
    ConnectionFailed,
    CountersignError,
    DeadlineExceeded,
    IdempotencyKeyInUse,
    InvalidState,
    NotSettled,
    RateLimited,
    ServerError,
    TokenVerificationError,
    error_from_response,
)
from ._models import UNSETTLED_STATUSES, WAITING_STATUSES, Proposal, TokenClaims
from ._sse import read_events
from ._tokens import verify_approval_token

__all__ = ["Client", "ProposalPage", "payment_request"]

__version__ = "0.1.0"

log = logging.getLogger("countersign")

T = TypeVar("T")

#: The longest single long-poll (the server allows 60).
LONG_POLL_SECONDS = 25
#: How long a fetched key set is trusted before it is fetched again (the server's max-age).
JWKS_TTL_SECONDS = 60.0
#: Commit attempts within one pay() (a lost answer, a token replaced by a re-approval).
MAX_COMMIT_ATTEMPTS = 3


@dataclass(frozen=True)
class ProposalPage:
    """One page of ``GET /api/v1/proposals``: pass ``next_cursor`` back until it is ``None``."""

    data: list[Proposal]
    next_cursor: str | None


def payment_request(
    *,
    run_id: str,
    amount_minor: int,
    currency: str,
    source_account: str,
    destination: str,
    purpose_code: str,
    reference: str | None = None,
    invoice_id: str | None = None,
) -> dict[str, Any]:
    """The JSON body of a transfer proposal (fields left ``None`` are omitted)."""
    body: dict[str, Any] = {
        "run_id": run_id,
        "amount_minor": amount_minor,
        "currency": currency,
        "source_account": source_account,
        "destination": destination,
        "purpose_code": purpose_code,
    }
    if reference is not None:
        body["reference"] = reference
    if invoice_id is not None:
        body["invoice_id"] = invoice_id
    return body


def _waiting(p: Proposal) -> bool:
    return p.status in WAITING_STATUSES


def _unsettled(p: Proposal) -> bool:
    return p.status in UNSETTLED_STATUSES


class Client:
    """A Countersign agent: propose, wait for the human, verify, commit, settle.

    ``base_url`` is the server (``http://localhost:8080``); ``agent_key`` the
    agent's bearer key. ``http`` may be your own :class:`httpx.Client` (it is
    then not closed by :meth:`close`). ``jwks_url`` verifies approval tokens
    against other published keys than the server's own, ``issuer`` also
    requires the tokens' ``iss`` (the server's ``public_url``).
    ``use_sse=False`` waits by long-polling only.
    """

    def __init__(
        self,
        base_url: str,
        agent_key: str,
        *,
        timeout: float = 30.0,
        http: httpx.Client | None = None,
        jwks_url: str | None = None,
        issuer: str | None = None,
        use_sse: bool = True,
        leeway: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http:// or https:// URL")
        if not agent_key:
            raise ValueError("an agent key is required")
        self.base_url = base_url.rstrip("/")
        self._key = agent_key
        self.timeout = float(timeout)
        self._own_http = http is None
        self._http = http if http is not None else httpx.Client(timeout=self.timeout)
        self.jwks_url = jwks_url or f"{self.base_url}/.well-known/jwks.json"
        self.issuer = issuer
        self.use_sse = use_sse
        self.leeway = float(leeway)
        self.max_retries = max(0, int(max_retries))
        self._jwks: tuple[float, dict[str, Any]] | None = None
        #: The claims of the last token this client verified (``None`` before any).
        self.last_verified: TokenClaims | None = None

    # ------------------------------------------------------------ plumbing

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._own_http:
            self._http.close()

    def __repr__(self) -> str:  # never shows the key
        return f"Client({self.base_url!r})"

    def _headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        headers = {
            "Authorization": f"Bearer {self._key}",
            "Accept": "application/json",
            "User-Agent": f"countersign-python/{__version__}",
        }
        headers.update(extra or {})
        return headers

    @staticmethod
    def _path_id(proposal_id: str | Proposal) -> str:
        pid = proposal_id.id if isinstance(proposal_id, Proposal) else proposal_id
        if not isinstance(pid, str) or not pid:
            raise ValueError("a proposal id is required")
        return quote(pid, safe="")

    def _call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float | None = None,
        allow_304: bool = False,
    ) -> tuple[httpx.Response, Any]:
        """One API request; the answer and its JSON, or the typed error."""
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs["content"] = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
            headers = {**(headers or {}), "Content-Type": "application/json"}
        try:
            resp = self._http.request(
                method,
                self.base_url + path,
                headers=self._headers(headers),
                timeout=timeout if timeout is not None else self.timeout,
                **kwargs,
            )
        except httpx.TransportError as err:
            raise ConnectionFailed(f"{method} {path}: {type(err).__name__}: {err}") from err
        if resp.status_code == 304 and allow_304:
            return resp, None
        try:
            data = resp.json() if resp.content else None
        except ValueError:
            data = resp.text
        if resp.status_code >= 400:
            raise error_from_response(resp.status_code, resp.headers, data)
        if resp.status_code not in (200, 201) or not isinstance(data, dict):
            raise CountersignError(
                f"unexpected HTTP {resp.status_code} answer to {method} {path}",
                code="unexpected_response",
                status=resp.status_code,
                request_id=resp.headers.get("x-request-id"),
            )
        return resp, data

    def _retrying(self, op: Callable[[], T], *, deadline: Deadline | None = None) -> T:
        """``op`` again after a failure that a retry can fix (network, 429,
        502-504, a key still in use), at most ``max_retries`` times. Only for
        requests that are safe to repeat."""
        attempt = 0
        while True:
            try:
                return op()
            except (ConnectionFailed, RateLimited, IdempotencyKeyInUse, ServerError) as err:
                if isinstance(err, ServerError) and err.status not in (502, 503, 504):
                    raise
                attempt += 1
                if attempt > self.max_retries:
                    raise
                delay = 0.25 * 2 ** (attempt - 1)
                if isinstance(err, RateLimited) and err.retry_after is not None:
                    delay = max(delay, err.retry_after)
                if delay > 10 or (deadline is not None and delay >= deadline.remaining()):
                    raise
                log.info("retrying in %.2fs after %s", delay, err)
                time.sleep(delay)

    @staticmethod
    def _proposal(resp: httpx.Response, data: Mapping[str, Any]) -> Proposal:
        try:
            return Proposal.from_json(data, etag=resp.headers.get("etag"))
        except (KeyError, TypeError, ValueError):
            raise CountersignError(
                "the answer is not a proposal", code="unexpected_response", status=resp.status_code,
                request_id=resp.headers.get("x-request-id"),
            ) from None

    # ------------------------------------------------------------ endpoints

    def propose(
        self,
        *,
        run_id: str,
        amount_minor: int,
        currency: str,
        source_account: str,
        destination: str,
        purpose_code: str,
        reference: str | None = None,
        invoice_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Proposal:
        """``POST /api/v1/proposals``: a transfer proposal (nothing moves until commit).

        Every call sends an ``Idempotency-Key`` (a fresh one unless given), and
        the client's own retries reuse it, so a lost answer never makes two
        proposals. Pass the same ``idempotency_key`` to replay a call.
        """
        body = payment_request(
            run_id=run_id,
            amount_minor=amount_minor,
            currency=currency,
            source_account=source_account,
            destination=destination,
            purpose_code=purpose_code,
            reference=reference,
            invoice_id=invoice_id,
        )
        return self._propose(body, idempotency_key)

    def propose_reversal(
        self,
        *,
        run_id: str,
        transfer_id: str,
        reason_code: str,
        amount_minor: int | None = None,
        reference: str | None = None,
        idempotency_key: str | None = None,
    ) -> Proposal:
        """A reversal of one of this agent's succeeded transfers (same approval path)."""
        body: dict[str, Any] = {"run_id": run_id, "kind": "reversal", "transfer_id": transfer_id,
                                "reason_code": reason_code}
        if amount_minor is not None:
            body["amount_minor"] = amount_minor
        if reference is not None:
            body["reference"] = reference
        return self._propose(body, idempotency_key)

    def _propose(self, body: Mapping[str, Any], idempotency_key: str | None,
                 deadline: Deadline | None = None) -> Proposal:
        key = idempotency_key or f"countersign-py-{uuid.uuid4()}"

        def once() -> Proposal:
            resp, data = self._call("POST", "/api/v1/proposals", body=body, headers={"Idempotency-Key": key})
            return self._proposal(resp, data)

        return self._retrying(once, deadline=deadline)

    def get(self, proposal_id: str | Proposal) -> Proposal:
        """``GET /api/v1/proposals/{id}``: the proposal now."""
        path = f"/api/v1/proposals/{self._path_id(proposal_id)}"

        def once() -> Proposal:
            resp, data = self._call("GET", path)
            return self._proposal(resp, data)

        return self._retrying(once)

    def list_proposals(self, *, status: str | None = None, limit: int | None = None,
                       cursor: str | None = None) -> ProposalPage:
        """``GET /api/v1/proposals``: this agent's proposals, newest first."""
        query = {k: v for k, v in (("status", status), ("limit", limit), ("cursor", cursor)) if v is not None}
        path = "/api/v1/proposals" + (f"?{urlencode(query)}" if query else "")
        _, data = self._retrying(lambda: self._call("GET", path))
        items = data.get("data") or []
        next_cursor = data.get("next_cursor")
        return ProposalPage(
            data=[Proposal.from_json(item) for item in items if isinstance(item, dict)],
            next_cursor=next_cursor if isinstance(next_cursor, str) else None,
        )

    def cancel(self, proposal_id: str | Proposal) -> Proposal:
        """``POST /api/v1/proposals/{id}/cancel``: withdraw it while pending or approved.

        Raises :class:`InvalidState` when it was decided otherwise meanwhile
        (``.current_status`` says how); a repeated cancel returns the proposal.
        """
        path = f"/api/v1/proposals/{self._path_id(proposal_id)}/cancel"

        def once() -> Proposal:
            resp, data = self._call("POST", path)
            return self._proposal(resp, data)

        try:
            return self._retrying(once)
        except InvalidState as err:
            if err.current_status == "cancelled":
                return self.get(proposal_id)
            raise

    def commit(self, proposal_id: str | Proposal, token: str) -> Proposal:
        """``POST /api/v1/proposals/{id}/commit``: the only call that pays.

        Sent once, never retried here. The answer's status may be
        ``succeeded``, ``failed``, ``executing`` or ``unknown``: follow the
        last two with :meth:`settle`, never with another commit.
        """
        path = f"/api/v1/proposals/{self._path_id(proposal_id)}/commit"
        resp, data = self._call("POST", path, body={"approval_token": token})
        return self._proposal(resp, data)

    # ------------------------------------------------------------ waiting

    def _poll(self, pid: str, *, wait: int, etag: str | None, deadline: Deadline) -> Proposal | None:
        """One long-poll: the proposal when it differs from ``etag``, else ``None``."""
        path = f"/api/v1/proposals/{self._path_id(pid)}"
        if etag and wait > 0:
            path += f"?wait={wait}"
        headers = {"If-None-Match": etag} if etag else None
        connect = max(0.5, min(self.timeout, deadline.remaining() + 1))
        timeout = httpx.Timeout(connect=connect, read=wait + 2.0, write=connect, pool=connect)
        resp, data = self._call("GET", path, headers=headers, timeout=timeout, allow_304=True)
        if resp.status_code == 304:
            return None
        return self._proposal(resp, data)

    def _events(self, pid: str, current: Proposal | None, deadline: Deadline) -> Generator[Proposal, None, None]:
        headers = self._headers()
        if current is not None and current.etag:
            headers["Last-Event-ID"] = current.etag
        url = f"{self.base_url}/api/v1/proposals/{self._path_id(pid)}/events"
        with closing(read_events(self._http, url, headers, deadline, connect_timeout=self.timeout)) as events:
            for event in events:
                if event.event != "proposal":
                    continue
                try:
                    update = Proposal.from_json(json.loads(event.data), etag=event.id)
                except (KeyError, TypeError, ValueError):
                    raise ConnectionFailed("an event is not a proposal") from None
                yield update

    def _wait_while(
        self, pid: str, current: Proposal | None, still: Callable[[Proposal], bool], deadline: Deadline
    ) -> Proposal:
        """The proposal once ``still(proposal)`` is false; by SSE, else by
        long-poll; :class:`DeadlineExceeded` (with the last state) at the deadline."""
        proposal = current
        if proposal is not None and not still(proposal):
            return proposal
        if self.use_sse and not deadline.expired():
            try:
                with closing(self._events(pid, proposal, deadline)) as updates:
                    for update in updates:
                        proposal = update
                        if not still(update):
                            return update
            except CountersignError as err:
                # No stream (a proxy, an older server, a cut): long-poll instead.
                # A real refusal (401, 404) comes back from the poll as well.
                log.warning("event stream unavailable (%s); long-polling instead", err)
        etag = proposal.etag if proposal is not None else None
        while True:
            if proposal is not None and not still(proposal):
                return proposal
            remaining = deadline.remaining()
            if remaining <= 0:
                break
            # Whole seconds of long-poll while they fit; the last fraction of
            # a second by quick looks, so the wait ends at the deadline, not before.
            wait = int(min(LONG_POLL_SECONDS, remaining)) if etag else 0
            try:
                got = self._poll(pid, wait=wait, etag=etag, deadline=deadline)
            except (ConnectionFailed, RateLimited, ServerError) as err:
                if isinstance(err, ServerError) and err.status not in (502, 503, 504):
                    raise
                pause = err.retry_after if isinstance(err, RateLimited) and err.retry_after else 1.0
                log.info("poll failed (%s); again in %.1fs", err, pause)
                time.sleep(min(pause, deadline.remaining()))
                continue
            if got is not None:
                proposal, etag = got, got.etag
            if wait == 0 and (got is None or etag is None):
                time.sleep(min(0.25, deadline.remaining()))
        if proposal is not None and not still(proposal):
            return proposal
        raise DeadlineExceeded("the deadline passed while waiting", proposal=proposal)

    def wait(self, proposal: str | Proposal, *, deadline: DeadlineLike) -> Proposal:
        """The proposal once a human (or policy) has decided: ``approved``,
        ``rejected``, ``cancelled``, ``expired`` (or later, if it was committed).

        Waits by Server-Sent Events, falling back to long-polling, all under
        one ``deadline`` (a :class:`Deadline`, seconds from now, or a
        datetime). Raises :class:`DeadlineExceeded` (``.proposal`` the last
        state seen) when none came by then; it does not cancel.
        """
        current = proposal if isinstance(proposal, Proposal) else None
        pid = proposal.id if isinstance(proposal, Proposal) else proposal
        return self._wait_while(pid, current, _waiting, Deadline.of(deadline))

    def settle(self, proposal: str | Proposal, *, deadline: DeadlineLike) -> Proposal:
        """The proposal once its payment is final: follows ``executing``,
        ``unknown`` and ``needs_review`` (reconciliation, or an admin) without
        ever committing again. Raises :class:`NotSettled` at the deadline."""
        current = proposal if isinstance(proposal, Proposal) else None
        pid = proposal.id if isinstance(proposal, Proposal) else proposal
        try:
            return self._wait_while(pid, current, _unsettled, Deadline.of(deadline))
        except DeadlineExceeded as err:
            raise NotSettled(
                "the payment was committed but is not final yet; do not pay again", proposal=err.proposal
            ) from None

    # ------------------------------------------------------------ tokens

    def jwks(self, *, refresh: bool = False) -> dict[str, Any]:
        """The published verification keys (cached for a minute)."""
        if not refresh and self._jwks is not None and time.monotonic() - self._jwks[0] < JWKS_TTL_SECONDS:
            return self._jwks[1]

        def once() -> dict[str, Any]:
            # Public keys: the agent's key is never sent for them.
            try:
                resp = self._http.get(self.jwks_url, headers={"Accept": "application/json"}, timeout=self.timeout)
            except httpx.TransportError as err:
                raise ConnectionFailed(f"GET {self.jwks_url}: {err}") from err
            if resp.status_code != 200:
                raise TokenVerificationError(f"the key set answered HTTP {resp.status_code}",
                                             reason="jwks_unavailable")
            try:
                data = resp.json()
            except ValueError:
                data = None
            if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
                raise TokenVerificationError("the key set is not a JWKS", reason="jwks_unavailable")
            return data

        try:
            data = self._retrying(once)
        except ConnectionFailed as err:
            raise TokenVerificationError(f"the key set cannot be read: {err}", reason="jwks_unavailable") from None
        self._jwks = (time.monotonic(), data)
        return data

    def verify_token(self, token: str, proposal: Proposal, *,
                     expected: Mapping[str, Any] | None = None) -> TokenClaims:
        """Checks an approval token for ``proposal``, or raises
        :class:`TokenVerificationError` (``.reason`` names the check).

        The header must say ``alg: ES256`` and the approval ``typ``; the key is
        the published P-256 key of its ``kid`` (the set is read again once
        for an unknown kid: keys rotate); the signature must verify; ``aud``,
        ``nbf`` and ``exp`` (with ``leeway``) and, if set, ``iss`` must hold;
        and ``pid``, ``rh``, ``azp`` and ``tid`` must be this proposal's, its
        request hash (recomputed from its canonical request) and its agent
        and tenant. ``expected`` (the body the agent proposed) must match the
        approved canonical request: amount, currency, accounts, purpose.
        """
        cached = self._jwks is not None
        for attempt in (1, 2):
            jwks = self.jwks(refresh=attempt == 2)
            try:
                claims = verify_approval_token(
                    token, proposal, jwks, now=time.time(), leeway=self.leeway,
                    issuer=self.issuer, expected=expected,
                )
            except TokenVerificationError as err:
                if err.reason == "unknown_kid" and attempt == 1 and cached:
                    continue
                raise
            self.last_verified = claims
            return claims
        raise AssertionError("unreachable")

    # ------------------------------------------------------------ the whole flow

    def _cancel_quietly(self, pid: str) -> Proposal | None:
        """Withdraws the proposal; what it is afterwards (``None`` if unreadable)."""
        try:
            return self.cancel(pid)
        except CountersignError as err:
            log.warning("cancel of %s refused (%s); reading its status", pid, err)
        try:
            return self.get(pid)
        except CountersignError:
            return None

    def _give_up(self, proposal: Proposal, why: str) -> DeadlineExceeded:
        after = self._cancel_quietly(proposal.id) or proposal
        return DeadlineExceeded(f"{why}; the proposal is {after.status} and nothing was committed", proposal=after)

    def pay(
        self,
        *,
        run_id: str,
        amount_minor: int,
        currency: str,
        source_account: str,
        destination: str,
        purpose_code: str,
        deadline: DeadlineLike,
        reference: str | None = None,
        invoice_id: str | None = None,
        idempotency_key: str | None = None,
        settle_timeout: float = 120.0,
        on_proposed: Callable[[Proposal], None] | None = None,
    ) -> Proposal:
        """The whole safe flow: propose, wait for the human, verify the token,
        commit, follow the payment to its final status.

        ``deadline`` bounds everything up to the commit: if no approval has
        arrived by then, the proposal is cancelled and :class:`DeadlineExceeded`
        is raised; nothing is committed after it. Once committed, the payment
        is followed for at most ``settle_timeout`` more seconds
        (:class:`NotSettled` after that: it may still pay; never pay again).

        Returns the final proposal: ``succeeded`` (``.paid``), or ``rejected``,
        ``cancelled``, ``expired``, ``failed`` (``.operation.error.code``).
        ``on_proposed`` is called with the proposal as soon as it exists (to
        record its id, or show its ``approval_url`` to someone);
        ``last_verified`` holds the claims of the token that was committed.
        A token that does not verify is never committed: the proposal is
        cancelled and :class:`TokenVerificationError` raised.
        """
        limit = Deadline.of(deadline)
        if limit.expired():
            raise DeadlineExceeded("the deadline passed before proposing")
        body = payment_request(
            run_id=run_id,
            amount_minor=amount_minor,
            currency=currency,
            source_account=source_account,
            destination=destination,
            purpose_code=purpose_code,
            reference=reference,
            invoice_id=invoice_id,
        )
        p = self._propose(body, idempotency_key, limit)
        log.info("proposed %s: %s", p.id, p.status)
        if on_proposed is not None:
            on_proposed(p)
        commits = 0
        while True:
            if _waiting(p):
                try:
                    p = self._wait_while(p.id, p, _waiting, limit)
                except DeadlineExceeded as err:
                    raise self._give_up(err.proposal or p, "no approval before the deadline") from None
            if _unsettled(p):
                # Already committed (e.g. by an earlier run under the same key).
                return self.settle(p, deadline=settle_timeout)
            if p.status != "approved":
                return p  # rejected, cancelled, expired, or already final
            token = p.approval_token
            try:
                if not token:
                    raise TokenVerificationError("the approved proposal carries no token", reason="malformed")
                self.verify_token(token, p, expected=body)
            except TokenVerificationError:
                self._cancel_quietly(p.id)
                raise
            if limit.expired():
                raise self._give_up(p, "the deadline passed before commit")
            commits += 1
            try:
                committed = self.commit(p.id, token)
            except (ApprovalTokenInvalid, InvalidState, ConnectionFailed) as err:
                # Read what happened instead of guessing; the server never pays
                # twice for one proposal, and a lost answer is read, not re-sent blindly.
                try:
                    p = self.get(p.id)
                except CountersignError:
                    if isinstance(err, ConnectionFailed):
                        raise NotSettled("the commit's answer was lost and the proposal cannot be read; "
                                         "do not pay again") from err
                    raise err from None
                if _unsettled(p) or p.status not in ("approved", *WAITING_STATUSES):
                    continue
                if commits >= MAX_COMMIT_ATTEMPTS or (
                    p.status == "approved" and p.approval_token == token and not isinstance(err, ConnectionFailed)
                ):
                    raise err from None
                continue
            log.info("committed %s: %s", committed.id, committed.status)
            if _unsettled(committed):
                return self.settle(committed, deadline=settle_timeout)
            return committed
