#!/usr/bin/env python3
"""bank_sim: a test "bank" for Countersign's payment rails.

It reads the pain.001.001.09 credit-transfer initiations Countersign writes to
an outbox directory and answers into an inbox directory with pain.002 status
reports (v03 or v12) and camt.054.001.08 debit notifications or
camt.053.001.08 statements.  Every file it reads or writes is validated
against the official ISO 20022 XSDs vendored in ../iso20022/ (xmlschema).

Commands (see README.md and `bank_sim.py COMMAND --help`):

  respond         process new outbox files, write the bank's answers
  validate        validate files against the XSD their namespace names
  sample-pain001  write a realistic, schema-valid pain.001.001.09 file

Exit codes: 0 ok; 1 `validate` found an invalid file; 2 invalid input
(a pain.001 that fails the XSD or the checks below, a re-sent batch with
other content, a bad option or state file); 3 a bug in this tool (a file it
was about to write failed its own XSD).  Nothing is written when the exit
code is not 0.

Only the standard library and xmlschema (pinned: xmlschema==4.3.2) are used.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ET
from decimal import Decimal, InvalidOperation
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_XSD_DIR = HERE.parent / "iso20022"

PAIN001 = "pain.001.001.09"
PAIN002_V03 = "pain.002.001.03"
PAIN002_V12 = "pain.002.001.12"
CAMT053 = "camt.053.001.08"
CAMT054 = "camt.054.001.08"
MESSAGES = (PAIN001, PAIN002_V03, PAIN002_V12, CAMT053, CAMT054)


def ns_uri(msg: str) -> str:
    return f"urn:iso:std:iso:20022:tech:xsd:{msg}"


NS_TO_MSG = {ns_uri(m): m for m in MESSAGES}

DEFAULT_ACCOUNT_IBAN = "DE89370400440532013000"
DEFAULT_BANK_BIC = "BSIMDEFFXXX"
DEFAULT_OPENING_BALANCE_MINOR = 100_000_000

# ISO 4217 minor units.  Everything not listed has 2.
CURRENCY_EXPONENT = {
    **{c: 0 for c in ("BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW",
                      "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF",
                      "XPF")},
    **{c: 3 for c in ("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND")},
    **{c: 4 for c in ("CLF", "UYW")},
}

# External status reason codes (ExternalStatusReason1Code) the tool knows a
# description for; any other 4-character code is accepted as well.
REASON_TEXT = {
    "AC01": "Incorrect account number",
    "AC04": "Closed account number",
    "AC06": "Blocked account",
    "AG01": "Transaction forbidden",
    "AM01": "Zero amount",
    "AM04": "Insufficient funds",
    "AM05": "Duplication",
    "BE04": "Missing creditor address",
    "FF01": "Invalid file format",
    "MS02": "Not specified reason customer generated",
    "MS03": "Not specified reason agent generated",
    "RC01": "Bank identifier incorrect",
    "RR04": "Regulatory reason",
}

IBAN_RE = re.compile(r"[A-Z]{2}[0-9]{2}[a-zA-Z0-9]{1,30}")
BICFI_RE = re.compile(r"[A-Z0-9]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?")
BIC_V03_RE = re.compile(r"[A-Z]{6}[A-Z2-9][A-NP-Z0-9]([A-Z0-9]{3})?")
REASON_RE = re.compile(r"[A-Z0-9]{4}")

GARBAGE = (b"<html><head><title>502 Bad Gateway</title></head>\n"
           b"<body><h1>502 Bad Gateway</h1><p>The statement service is "
           b"temporarily unavailable.</p></body></html>\n")


class InputError(Exception):
    """Invalid input or usage: exit 2."""


class InternalError(Exception):
    """A file this tool produced fails its XSD: exit 3."""


# --------------------------------------------------------------------------
# Amounts


def exponent(ccy: str) -> int:
    return CURRENCY_EXPONENT.get(ccy, 2)


def to_minor(text: str, ccy: str) -> int:
    """Decimal amount text -> integer minor units; at most the currency's
    number of decimals is allowed (JPY "1000" yes, "1000.00" no)."""
    try:
        d = Decimal(text.strip())
    except InvalidOperation:
        raise InputError(f"amount {text!r} is not a decimal number") from None
    exp = exponent(ccy)
    frac = -d.as_tuple().exponent if d.as_tuple().exponent < 0 else 0
    if frac > exp:
        raise InputError(f"amount {text!r} has {frac} decimals but {ccy} has "
                         f"{exp} (ISO 4217 minor units)")
    return int(d.scaleb(exp))


def fmt_amount(minor: int, ccy: str) -> str:
    if minor < 0:
        raise InternalError(f"negative amount {minor} {ccy}")
    exp = exponent(ccy)
    if exp == 0:
        return str(minor)
    q, r = divmod(minor, 10 ** exp)
    return f"{q}.{r:0{exp}d}"


def fmt_decimal(d: Decimal) -> str:
    return format(d, "f")


# --------------------------------------------------------------------------
# IBAN helpers


def _iban_digits(s: str) -> int:
    return int("".join(str(int(c, 36)) for c in s.upper()))


def iban_checksum_ok(iban: str) -> bool:
    if not IBAN_RE.fullmatch(iban):
        return False
    return _iban_digits(iban[4:] + iban[:4]) % 97 == 1


def make_iban(country: str, bban: str) -> str:
    check = 98 - _iban_digits(bban + country + "00") % 97
    return f"{country}{check:02d}{bban}"


# --------------------------------------------------------------------------
# Schemas and validation

_SCHEMA_CACHE: dict = {}


def _xmlschema():
    try:
        import xmlschema  # noqa: PLC0415
    except ImportError:
        sys.stderr.write("bank_sim: the Python package xmlschema is missing "
                         "(pip install xmlschema==4.3.2)\n")
        raise SystemExit(3)
    return xmlschema


def schema_for(msg: str, xsd_dir: Path):
    key = (str(xsd_dir), msg)
    if key not in _SCHEMA_CACHE:
        path = Path(xsd_dir) / f"{msg}.xsd"
        if not path.is_file():
            raise InputError(f"XSD not found: {path}")
        _SCHEMA_CACHE[key] = _xmlschema().XMLSchema(str(path))
    return _SCHEMA_CACHE[key]


_NS_IN_TEXT = re.compile(r"\{urn:iso:std:iso:20022:tech:xsd:[a-z0-9.]+\}")


def check_document(data: bytes, xsd_dir: Path, expected: str | None = None):
    """Return (message name or None, reason or None); reason None = valid."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        return None, f"not well-formed XML: {e}"
    tag = root.tag
    if not tag.startswith("{"):
        return None, (f"root element <{tag}> has no namespace: not an "
                      f"ISO 20022 document")
    uri, local = tag[1:].split("}", 1)
    msg = NS_TO_MSG.get(uri)
    if expected is not None and msg != expected:
        return msg, (f"expected a {expected} document (namespace "
                     f"{ns_uri(expected)}), found <{local}> in namespace {uri}")
    if msg is None:
        return None, (f"unknown namespace {uri}; this tool validates "
                      f"{', '.join(MESSAGES)}")
    schema = schema_for(msg, xsd_dir)
    errors = list(schema.iter_errors(root))
    if not errors:
        return msg, None
    e = errors[0]
    reason = _NS_IN_TEXT.sub("", str(e.reason or e.message)).strip()
    where = f" (at {_NS_IN_TEXT.sub('', e.path)})" if e.path else ""
    more = f" [and {len(errors) - 1} more error(s)]" if len(errors) > 1 else ""
    return msg, f"{reason}{where}{more}"


# --------------------------------------------------------------------------
# XML building


class Builder:
    """Tiny helper that creates namespaced children in document order."""

    def __init__(self, msg: str):
        self.msg = msg
        self.ns = ns_uri(msg)
        self.root = ET.Element(self.q("Document"))

    def q(self, tag: str) -> str:
        return f"{{{self.ns}}}{tag}"

    def sub(self, parent, tag: str, text=None, **attrs):
        el = ET.SubElement(parent, self.q(tag), {k: str(v) for k, v in attrs.items()})
        if text is not None:
            el.text = str(text)
        return el

    def path(self, parent, path: str, text=None, **attrs):
        """Create a chain A/B/C (always new elements) and return the last."""
        parts = path.split("/")
        for i, p in enumerate(parts):
            last = i == len(parts) - 1
            parent = self.sub(parent, p, text if last else None,
                              **(attrs if last else {}))
        return parent

    def tobytes(self) -> bytes:
        ET.indent(self.root, space="  ")
        # ET's default_namespace= refuses the unqualified Ccy attribute;
        # mapping the message namespace to the empty prefix does the same.
        ET.register_namespace("", self.ns)
        body = ET.tostring(self.root, encoding="unicode")
        return ('<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n").encode("utf-8")


def now_local() -> dt.datetime:
    return dt.datetime.now().astimezone().replace(microsecond=0)


def tz_suffix(now: dt.datetime) -> str:
    return now.isoformat()[19:]  # "+01:00"


# --------------------------------------------------------------------------
# Reading pain.001.001.09


def _find_text(el, ns: str, path: str):
    x = el.find("/".join(f"{{{ns}}}{p}" for p in path.split("/")))
    if x is None or x.text is None:
        return None
    return x.text.strip()


def parse_pain001(data: bytes, file_name: str, sha: str) -> dict:
    """Parse an XSD-valid pain.001.001.09 and run the semantic checks a bank
    runs on a file (amount decimals, NbOfTxs, CtrlSum, unique ids)."""
    ns = ns_uri(PAIN001)
    root = ET.fromstring(data)
    init = root.find(f"{{{ns}}}CstmrCdtTrfInitn")
    t = lambda el, p: _find_text(el, ns, p)  # noqa: E731
    grp = init.find(f"{{{ns}}}GrpHdr")
    batch = {
        "file": file_name, "sha256": sha,
        "msg_id": t(grp, "MsgId"), "cre_dt_tm": t(grp, "CreDtTm"),
        "nb_of_txs": t(grp, "NbOfTxs"), "ctrl_sum": t(grp, "CtrlSum"),
        "pmt_infs": [],
    }
    problems = []
    seen_e2e, seen_pmtinf = set(), set()
    total_n, total_sum = 0, Decimal(0)
    for pi in init.findall(f"{{{ns}}}PmtInf"):
        pmt = {
            "pmt_inf_id": t(pi, "PmtInfId"),
            "nb_of_txs": t(pi, "NbOfTxs"), "ctrl_sum": t(pi, "CtrlSum"),
            "reqd_exctn_dt": t(pi, "ReqdExctnDt/Dt") or (t(pi, "ReqdExctnDt/DtTm") or "")[:10],
            "txs": [],
        }
        if pmt["pmt_inf_id"] in seen_pmtinf:
            problems.append(f"PmtInfId {pmt['pmt_inf_id']!r} occurs twice")
        seen_pmtinf.add(pmt["pmt_inf_id"])
        n, s = 0, Decimal(0)
        for tx in pi.findall(f"{{{ns}}}CdtTrfTxInf"):
            e2e = t(tx, "PmtId/EndToEndId")
            amt = tx.find(f"{{{ns}}}Amt/{{{ns}}}InstdAmt")
            if amt is None:
                problems.append(f"transaction {e2e!r}: only Amt/InstdAmt is "
                                f"supported (found Amt/EqvtAmt)")
                continue
            ccy, text = amt.get("Ccy"), (amt.text or "").strip()
            try:
                minor = to_minor(text, ccy)
            except InputError as e:
                problems.append(f"transaction {e2e!r}: {e}")
                minor = 0
            if e2e in seen_e2e:
                problems.append(f"EndToEndId {e2e!r} occurs twice in the file")
            seen_e2e.add(e2e)
            n += 1
            s += Decimal(text)
            pmt["txs"].append({
                "end_to_end_id": e2e, "instr_id": t(tx, "PmtId/InstrId"),
                "amount_text": text, "currency": ccy, "amount_minor": minor,
                "cdtr_nm": t(tx, "Cdtr/Nm"),
                "cdtr_iban": t(tx, "CdtrAcct/Id/IBAN"),
                "cdtr_othr": t(tx, "CdtrAcct/Id/Othr/Id"),
                "cdtr_bic": t(tx, "CdtrAgt/FinInstnId/BICFI"),
                "ustrd": [u.text for u in tx.findall(f"{{{ns}}}RmtInf/{{{ns}}}Ustrd")
                          if u.text],
            })
        if pmt["nb_of_txs"] is not None and int(pmt["nb_of_txs"]) != n:
            problems.append(f"PmtInf {pmt['pmt_inf_id']!r}: NbOfTxs is "
                            f"{pmt['nb_of_txs']} but it has {n} CdtTrfTxInf")
        if pmt["ctrl_sum"] is not None and Decimal(pmt["ctrl_sum"]) != s:
            problems.append(f"PmtInf {pmt['pmt_inf_id']!r}: CtrlSum is "
                            f"{pmt['ctrl_sum']} but the amounts add up to {fmt_decimal(s)}")
        total_n += n
        total_sum += s
        batch["pmt_infs"].append(pmt)
    if int(batch["nb_of_txs"]) != total_n:
        problems.append(f"GrpHdr/NbOfTxs is {batch['nb_of_txs']} but the file "
                        f"has {total_n} CdtTrfTxInf")
    if batch["ctrl_sum"] is not None and Decimal(batch["ctrl_sum"]) != total_sum:
        problems.append(f"GrpHdr/CtrlSum is {batch['ctrl_sum']} but the "
                        f"amounts add up to {fmt_decimal(total_sum)}")
    if problems:
        raise InputError("; ".join(problems))
    return batch


def all_txs(batch: dict):
    for pmt in batch["pmt_infs"]:
        for tx in pmt["txs"]:
            yield pmt, tx


# --------------------------------------------------------------------------
# pain.002 (v03 and v12)


def group_status(statuses) -> str:
    s = set(statuses)
    return s.pop() if len(s) == 1 else "PART"


def build_pain002(version: str, msg_id: str, now: dt.datetime, bank_bic: str,
                  batch: dict, listed: set, next_id) -> bytes:
    """Status report for `batch`; GrpSts / PmtInfSts reflect every
    transaction's current status, TxInfAndSts lists those in `listed`."""
    msg = PAIN002_V12 if version == "12" else PAIN002_V03
    v12 = msg == PAIN002_V12
    b = Builder(msg)
    rpt = b.sub(b.root, "CstmrPmtStsRpt")
    gh = b.sub(rpt, "GrpHdr")
    b.sub(gh, "MsgId", msg_id)
    b.sub(gh, "CreDtTm", now.isoformat())
    b.path(gh, "DbtrAgt/FinInstnId/" + ("BICFI" if v12 else "BIC"), bank_bic)

    txs = [tx for _, tx in all_txs(batch)]
    og = b.sub(rpt, "OrgnlGrpInfAndSts")
    b.sub(og, "OrgnlMsgId", batch["msg_id"])
    b.sub(og, "OrgnlMsgNmId", PAIN001)
    if batch.get("cre_dt_tm"):
        b.sub(og, "OrgnlCreDtTm", batch["cre_dt_tm"])
    b.sub(og, "OrgnlNbOfTxs", len(txs))
    b.sub(og, "OrgnlCtrlSum", fmt_decimal(sum((Decimal(t["amount_text"]) for t in txs), Decimal(0))))
    b.sub(og, "GrpSts", group_status(t["status"] for t in txs))
    for sts in sorted({t["status"] for t in txs}):
        these = [t for t in txs if t["status"] == sts]
        ns_ = b.sub(og, "NbOfTxsPerSts")
        b.sub(ns_, "DtldNbOfTxs", len(these))
        b.sub(ns_, "DtldSts", sts)
        b.sub(ns_, "DtldCtrlSum", fmt_decimal(sum((Decimal(t["amount_text"]) for t in these), Decimal(0))))

    for pmt in batch["pmt_infs"]:
        shown = [t for t in pmt["txs"] if t["end_to_end_id"] in listed]
        if not shown:
            continue
        op = b.sub(rpt, "OrgnlPmtInfAndSts")
        b.sub(op, "OrgnlPmtInfId", pmt["pmt_inf_id"])
        b.sub(op, "OrgnlNbOfTxs", len(pmt["txs"]))
        b.sub(op, "OrgnlCtrlSum", fmt_decimal(sum((Decimal(t["amount_text"]) for t in pmt["txs"]), Decimal(0))))
        b.sub(op, "PmtInfSts", group_status(t["status"] for t in pmt["txs"]))
        for tx in shown:
            ti = b.sub(op, "TxInfAndSts")
            b.sub(ti, "StsId", next_id("sts"))
            if tx.get("instr_id"):
                b.sub(ti, "OrgnlInstrId", tx["instr_id"])
            b.sub(ti, "OrgnlEndToEndId", tx["end_to_end_id"])
            b.sub(ti, "TxSts", tx["status"])
            if tx.get("reason"):
                sr = b.sub(ti, "StsRsnInf")
                b.path(sr, "Rsn/Cd", tx["reason"])
                if tx["reason"] in REASON_TEXT:
                    b.sub(sr, "AddtlInf", REASON_TEXT[tx["reason"]])
            if tx["status"] == "ACCP":
                b.sub(ti, "AccptncDtTm", now.isoformat())
            ref = b.sub(ti, "OrgnlTxRef")
            b.path(ref, "Amt/InstdAmt", tx["amount_text"], Ccy=tx["currency"])
            if pmt.get("reqd_exctn_dt"):
                if v12:
                    b.path(ref, "ReqdExctnDt/Dt", pmt["reqd_exctn_dt"])
                else:
                    b.sub(ref, "ReqdExctnDt", pmt["reqd_exctn_dt"])
            if tx.get("cdtr_nm"):
                b.path(ref, "Cdtr/Pty/Nm" if v12 else "Cdtr/Nm", tx["cdtr_nm"])
            if tx.get("cdtr_iban"):
                b.path(ref, "CdtrAcct/Id/IBAN", tx["cdtr_iban"])
            elif tx.get("cdtr_othr"):
                b.path(ref, "CdtrAcct/Id/Othr/Id", tx["cdtr_othr"])
    return b.tobytes()


# --------------------------------------------------------------------------
# camt.053 / camt.054 (v08)


def bank_tx_subfamily(ccy: str) -> str:
    # PMNT / ICDT (issued credit transfers) / ESCT (SEPA credit transfer) for
    # EUR, XBCT (cross-border credit transfer) for the others.
    return "ESCT" if ccy == "EUR" else "XBCT"


def build_camt(kind: str, msg_id: str, now: dt.datetime, date: str,
               account_iban: str, bank_bic: str, groups: list) -> bytes:
    """groups: [{"ccy", "report_id", "seq_nb", "opening_minor", "entries"}];
    one Stmt (camt.053) or Ntfctn (camt.054) per currency."""
    is053 = kind == CAMT053
    b = Builder(kind)
    top = b.sub(b.root, "BkToCstmrStmt" if is053 else "BkToCstmrDbtCdtNtfctn")
    gh = b.sub(top, "GrpHdr")
    b.sub(gh, "MsgId", msg_id)
    b.sub(gh, "CreDtTm", now.isoformat())
    pg = b.sub(gh, "MsgPgntn")
    b.sub(pg, "PgNb", "1")
    b.sub(pg, "LastPgInd", "true")
    tz = tz_suffix(now)
    for g in groups:
        ccy, entries = g["ccy"], g["entries"]
        rep = b.sub(top, "Stmt" if is053 else "Ntfctn")
        b.sub(rep, "Id", g["report_id"])
        b.sub(rep, "ElctrncSeqNb", g["seq_nb"])
        b.sub(rep, "CreDtTm", now.isoformat())
        fr = b.sub(rep, "FrToDt")
        b.sub(fr, "FrDtTm", f"{date}T00:00:00{tz}")
        b.sub(fr, "ToDtTm", f"{date}T23:59:59{tz}")
        acct = b.sub(rep, "Acct")
        b.path(acct, "Id/IBAN", account_iban)
        b.sub(acct, "Ccy", ccy)
        b.path(acct, "Svcr/FinInstnId/BICFI", bank_bic)
        total = sum(e["booked_minor"] for e in entries)
        if is053:
            closing = g["opening_minor"] - total
            for code, bal in (("OPBD", g["opening_minor"]), ("CLBD", closing)):
                be = b.sub(rep, "Bal")
                b.path(be, "Tp/CdOrPrtry/Cd", code)
                b.sub(be, "Amt", fmt_amount(abs(bal), ccy), Ccy=ccy)
                b.sub(be, "CdtDbtInd", "CRDT" if bal >= 0 else "DBIT")
                b.path(be, "Dt/Dt", date)
        summ = b.sub(rep, "TxsSummry")
        tn = b.sub(summ, "TtlNtries")
        b.sub(tn, "NbOfNtries", len(entries))
        b.sub(tn, "Sum", fmt_amount(total, ccy))
        net = b.sub(tn, "TtlNetNtry")
        b.sub(net, "Amt", fmt_amount(total, ccy))
        b.sub(net, "CdtDbtInd", "DBIT")
        td = b.sub(summ, "TtlDbtNtries")
        b.sub(td, "NbOfNtries", len(entries))
        b.sub(td, "Sum", fmt_amount(total, ccy))
        for i, e in enumerate(entries, 1):
            n = b.sub(rep, "Ntry")
            b.sub(n, "NtryRef", i)
            b.sub(n, "Amt", fmt_amount(e["booked_minor"], ccy), Ccy=ccy)
            b.sub(n, "CdtDbtInd", "DBIT")
            b.path(n, "Sts/Cd", "BOOK")
            b.path(n, "BookgDt/Dt", date)
            b.path(n, "ValDt/Dt", date)
            b.sub(n, "AcctSvcrRef", e["acct_svcr_ref"])
            btc = b.path(n, "BkTxCd/Domn")
            b.sub(btc, "Cd", "PMNT")
            fm = b.sub(btc, "Fmly")
            b.sub(fm, "Cd", "ICDT")
            b.sub(fm, "SubFmlyCd", bank_tx_subfamily(ccy))
            txd = b.path(n, "NtryDtls/TxDtls")
            refs = b.sub(txd, "Refs")
            if e.get("msg_id"):
                b.sub(refs, "MsgId", e["msg_id"])
            b.sub(refs, "AcctSvcrRef", e["acct_svcr_ref"])
            if e.get("pmt_inf_id"):
                b.sub(refs, "PmtInfId", e["pmt_inf_id"])
            if e.get("instr_id"):
                b.sub(refs, "InstrId", e["instr_id"])
            b.sub(refs, "EndToEndId", e["end_to_end_id"])
            b.sub(txd, "Amt", fmt_amount(e["booked_minor"], ccy), Ccy=ccy)
            b.sub(txd, "CdtDbtInd", "DBIT")
            b.path(txd, "AmtDtls/InstdAmt/Amt", fmt_amount(e["instd_minor"], ccy), Ccy=ccy)
            if e.get("cdtr_nm") or e.get("cdtr_iban") or e.get("cdtr_othr"):
                rp = b.sub(txd, "RltdPties")
                if e.get("cdtr_nm"):
                    b.path(rp, "Cdtr/Pty/Nm", e["cdtr_nm"])
                if e.get("cdtr_iban"):
                    b.path(rp, "CdtrAcct/Id/IBAN", e["cdtr_iban"])
                elif e.get("cdtr_othr"):
                    b.path(rp, "CdtrAcct/Id/Othr/Id", e["cdtr_othr"])
            if e.get("cdtr_bic"):
                b.path(txd, "RltdAgts/CdtrAgt/FinInstnId/BICFI", e["cdtr_bic"])
            if e.get("ustrd"):
                ri = b.sub(txd, "RmtInf")
                for u in e["ustrd"]:
                    b.sub(ri, "Ustrd", u)
    return b.tobytes()


# --------------------------------------------------------------------------
# State


def new_state() -> dict:
    return {"version": 1, "seq": 0, "counters": {}, "files": {},
            "batches": {}, "balances": {}, "last_booking": None}


def load_state(path: Path) -> dict:
    if not path.exists() or path.stat().st_size == 0:
        return new_state()
    try:
        st = json.loads(path.read_text("utf-8"))
    except (ValueError, OSError) as e:
        raise InputError(f"state file {path} is not readable JSON: {e}") from None
    if not isinstance(st, dict) or st.get("version") != 1:
        raise InputError(f"state file {path} is not a bank_sim state file")
    base = new_state()
    base.update(st)
    return base


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def safe_name(s: str) -> str:
    return _SAFE.sub("_", s)[:60] or "x"


# --------------------------------------------------------------------------
# respond


def _pairs(values, what: str, parse):
    out = {}
    for v in values or []:
        key, sep, val = v.rpartition("=")
        if not sep or not key:
            raise InputError(f"{what} {v!r}: expected E2E=VALUE")
        out[key] = parse(val, v)
    return out


def _reason_code(val, raw):
    if not REASON_RE.fullmatch(val):
        raise InputError(f"--reject {raw!r}: the reason must be a 4-character "
                         f"ISO external status reason code such as AC04")
    return val


def _delta(val, raw):
    if not re.fullmatch(r"[+-]?[0-9]+", val):
        raise InputError(f"--amount-delta {raw!r}: expected E2E=+N or E2E=-N (minor units)")
    return int(val)


def respond(args) -> int:
    xsd_dir = Path(args.xsd_dir)
    outbox, inbox, state_path = Path(args.outbox), Path(args.inbox), Path(args.state)
    rejects = _pairs(args.reject, "--reject", _reason_code)
    deltas = _pairs(args.amount_delta, "--amount-delta", _delta)
    if args.book_only and args.no_booking:
        raise InputError("--book-only and --no-booking exclude each other")
    if args.pending and (args.book_only or args.release_pending):
        raise InputError("--pending excludes --book-only and --release-pending")
    if args.no_booking and args.unknown_e2e is not None:
        raise InputError("--unknown-e2e needs booking (drop --no-booking)")
    if not IBAN_RE.fullmatch(args.account_iban):
        raise InputError(f"--account-iban {args.account_iban!r} does not match IBAN2007Identifier")
    if not BICFI_RE.fullmatch(args.bank_bic) or (args.pain002 == "03" and not BIC_V03_RE.fullmatch(args.bank_bic)):
        raise InputError(f"--bank-bic {args.bank_bic!r} is not a valid BIC")
    if args.date:
        try:
            date = dt.date.fromisoformat(args.date).isoformat()
        except ValueError:
            raise InputError(f"--date {args.date!r}: expected YYYY-MM-DD") from None
    else:
        date = dt.date.today().isoformat()
    if not outbox.is_dir():
        raise InputError(f"outbox {outbox} is not a directory")
    booking_kind = CAMT053 if args.statement == "camt053" else CAMT054
    book = not args.no_booking

    state_path.parent.mkdir(parents=True, exist_ok=True)
    lock = open(str(state_path) + ".lock", "a+")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        state = load_state(state_path)
        return _respond_locked(args, state, state_path, xsd_dir, outbox, inbox,
                               rejects, deltas, date, booking_kind, book)
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()


def _respond_locked(args, state, state_path, xsd_dir, outbox, inbox, rejects,
                    deltas, date, booking_kind, book) -> int:
    now = now_local()
    counters = state["counters"]

    def next_n(kind: str) -> int:
        counters[kind] = counters.get(kind, 0) + 1
        return counters[kind]

    def next_id(kind: str) -> str:
        prefix = {"sts": "BKSIM-STS-", "book": "BKSIM-BOOK-", "psr": "BKSIM-PSR-",
                  "stmt": "BKSIM-STMT-", "ntfctn": "BKSIM-NTFCTN-",
                  "unknown": "BKSIM-UNKNOWN-"}[kind]
        return f"{prefix}{next_n(kind):08d}"

    # ---- 1. read and check the outbox (nothing is written on failure)
    known_sha = {b["sha256"]: mid for mid, b in state["batches"].items()}
    new_batches, duplicates = [], []
    for path in sorted(outbox.glob("*.xml")):
        if path.name.startswith(".") or not path.is_file():
            continue
        data = path.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        if state["files"].get(path.name) == sha:
            continue  # processed (or reported as duplicate) before
        if sha in known_sha:
            mid = known_sha[sha]
            duplicates.append({"file": path.name, "msg_id": mid,
                               "reason": "duplicate_batch",
                               "original_file": state["batches"][mid]["file"]})
            continue
        _, reason = check_document(data, xsd_dir, expected=PAIN001)
        if reason:
            raise InputError(f"{path.name}: {reason}")
        try:
            batch = parse_pain001(data, path.name, sha)
        except InputError as e:
            raise InputError(f"{path.name}: {e}") from None
        mid = batch["msg_id"]
        if mid in state["batches"]:
            prev = state["batches"][mid]["file"]
            raise InputError(f"{path.name}: MsgId {mid!r} was already processed "
                             f"from {prev} with different content (re-sent batch "
                             f"with other content)")
        state["batches"][mid] = batch  # provisional; state is saved only at the end
        known_sha[sha] = mid
        new_batches.append(batch)

    # ---- 2. decide
    matched_rejects, matched_deltas = set(), set()
    processed, report_jobs, to_book, warnings = [], [], [], []
    prior_e2e = {}
    new_ids = {b["msg_id"] for b in new_batches}
    for mid, b in state["batches"].items():
        if mid in new_ids:
            continue
        for _, tx in all_txs(b):
            prior_e2e[tx["end_to_end_id"]] = (mid, tx.get("status"))

    def decide(tx):
        e2e = tx["end_to_end_id"]
        if e2e in rejects:
            matched_rejects.add(e2e)
            return "RJCT", rejects[e2e]
        if tx["amount_minor"] == 0:
            return "RJCT", "AM01"
        if args.check_iban and tx.get("cdtr_iban") and not iban_checksum_ok(tx["cdtr_iban"]):
            return "RJCT", "AC01"
        return ("PDNG" if args.pending else "ACCP"), None

    def summary_tx(tx):
        return {"end_to_end_id": tx["end_to_end_id"], "amount_minor": tx["amount_minor"],
                "currency": tx["currency"], "status": tx["status"],
                "reason": tx.get("reason"), "booked_amount_minor": tx.get("booked_amount_minor")}

    def queue_booking(batch, pmt, tx):
        e2e = tx["end_to_end_id"]
        booked = tx["amount_minor"]
        if e2e in deltas:
            matched_deltas.add(e2e)
            booked += deltas[e2e]
            if booked < 0:
                raise InputError(f"--amount-delta {e2e}={deltas[e2e]:+d} makes the "
                                 f"booked amount negative")
        tx["booked_amount_minor"] = booked
        to_book.append({
            "end_to_end_id": e2e, "msg_id": batch["msg_id"],
            "pmt_inf_id": pmt["pmt_inf_id"], "instr_id": tx.get("instr_id"),
            "booked_minor": booked, "instd_minor": tx["amount_minor"],
            "ccy": tx["currency"], "cdtr_nm": tx.get("cdtr_nm"),
            "cdtr_iban": tx.get("cdtr_iban"), "cdtr_othr": tx.get("cdtr_othr"),
            "cdtr_bic": tx.get("cdtr_bic"), "ustrd": tx.get("ustrd") or []})

    # 2a. transactions left pending by an earlier --pending run
    if args.release_pending:
        for mid, b in state["batches"].items():
            released = []
            for pmt, tx in all_txs(b):
                if tx.get("status") != "PDNG":
                    continue
                tx["status"], tx["reason"] = decide(tx)
                released.append(tx)
                if tx["status"] == "ACCP" and book:
                    queue_booking(b, pmt, tx)
            if released:
                report_jobs.append((b, {t["end_to_end_id"] for t in released}))
                processed.append({"file": b["file"], "msg_id": mid, "released_pending": True,
                                  "transactions": [summary_tx(t) for t in released]})

    # 2b. new batches
    for b in new_batches:
        for pmt, tx in all_txs(b):
            tx["status"], tx["reason"] = decide(tx)
            if tx["status"] == "ACCP" and book:
                queue_booking(b, pmt, tx)
            if tx["end_to_end_id"] in prior_e2e:
                pm, ps = prior_e2e[tx["end_to_end_id"]]
                warnings.append(f"EndToEndId {tx['end_to_end_id']!r} of {b['msg_id']!r} "
                                f"was already sent in batch {pm!r} (status {ps})")
            prior_e2e[tx["end_to_end_id"]] = (b["msg_id"], tx["status"])
        report_jobs.append((b, {tx["end_to_end_id"] for _, tx in all_txs(b)}))
        processed.append({"file": b["file"], "msg_id": b["msg_id"],
                          "transactions": [summary_tx(tx) for _, tx in all_txs(b)]})

    unknown_entries = []
    if args.unknown_e2e is not None:
        ccy = to_book[0]["ccy"] if to_book else "EUR"
        e2e = args.unknown_e2e or next_id("unknown")
        minor = 4242 if exponent(ccy) else 42
        to_book.append({"end_to_end_id": e2e, "booked_minor": minor, "instd_minor": minor,
                        "ccy": ccy, "cdtr_nm": "Unknown Payee Ltd",
                        "cdtr_iban": make_iban("DE", "50010517" + "0099999999"),
                        "ustrd": ["Not initiated by the customer"]})
        unknown_entries.append({"end_to_end_id": e2e, "amount_minor": minor, "currency": ccy})

    for e2e in sorted(set(rejects) - matched_rejects):
        warnings.append(f"--reject {e2e}: no such EndToEndId in the processed transactions")
    for e2e in sorted(set(deltas) - matched_deltas):
        warnings.append(f"--amount-delta {e2e}: no such booked EndToEndId")

    # ---- 3. build every output and validate it before anything is written
    # (suffix for the file name, bytes, message name or None, last_booking
    # record to point at the written file or None)
    outputs = []
    if not args.book_only:
        for b, listed in report_jobs:
            msg = PAIN002_V12 if args.pain002 == "12" else PAIN002_V03
            psr_id = next_id("psr")
            data = build_pain002(args.pain002, psr_id, now, args.bank_bic, b, listed, next_id)
            outputs.append((f"{msg}-{safe_name(b['msg_id'])}", data, msg, None))
    new_last = state["last_booking"]
    if to_book:
        for e in to_book:
            e["acct_svcr_ref"] = next_id("book")
        is053 = booking_kind == CAMT053
        msg_id = next_id("stmt" if is053 else "ntfctn")
        groups = []
        for ccy in sorted({e["ccy"] for e in to_book}):
            entries = [e for e in to_book if e["ccy"] == ccy]
            opening = state["balances"].get(ccy, args.opening_balance)
            seq = next_n(f"seq-{ccy}")
            groups.append({"ccy": ccy, "entries": entries, "opening_minor": opening,
                           "seq_nb": seq,
                           "report_id": f"{date.replace('-', '')}-{ccy}-{seq:06d}"})
            state["balances"][ccy] = opening - sum(e["booked_minor"] for e in entries)
        data = build_camt(booking_kind, msg_id, now, date, args.account_iban,
                          args.bank_bic, groups)
        new_last = {"kind": booking_kind, "msg_id": msg_id,
                    "content": data.decode("utf-8")}
        outputs.append((f"{booking_kind}-{msg_id}", data, booking_kind, new_last))
    if args.duplicate_last:
        if not new_last:
            raise InputError("--duplicate-last: no statement or notification was written yet")
        outputs.append((f"{new_last['kind']}-{new_last['msg_id']}",
                        new_last["content"].encode("utf-8"), new_last["kind"], None))
    if args.garbage:
        outputs.append(("garbage", GARBAGE, None, None))

    for suffix, data, msg, _ in outputs:
        if msg is None:
            continue
        _, reason = check_document(data, xsd_dir, expected=msg)
        if reason:
            raise InternalError(f"bank_sim produced an invalid {msg} ({suffix}): {reason}")

    # ---- 4. write (atomically, unique sortable names), then the state
    inbox.mkdir(parents=True, exist_ok=True)
    existing = {p.name.split("-", 1)[0] for p in inbox.iterdir()}
    written = []
    for suffix, data, msg, booking_rec in outputs:
        while True:
            state["seq"] += 1
            prefix = f"{state['seq']:04d}"
            if prefix not in existing:
                break
        name = f"{prefix}-{suffix}.xml"
        write_atomic(inbox / name, data)
        written.append(name)
        if booking_rec is not None:
            booking_rec["file"] = name
    state["last_booking"] = new_last
    for b in new_batches:
        state["files"][b["file"]] = b["sha256"]
    for d in duplicates:
        state["files"][d["file"]] = state["batches"][d["msg_id"]]["sha256"]
    state["updated"] = now.isoformat()
    write_atomic(Path(state_path), (json.dumps(state, indent=1, sort_keys=True) + "\n").encode())

    for w in warnings:
        sys.stderr.write(f"bank_sim: warning: {w}\n")
    summary = {"processed": processed, "written": written, "duplicates": duplicates,
               "unknown_entries": unknown_entries, "warnings": warnings}
    sys.stdout.write(json.dumps(summary) + "\n")
    return 0


# --------------------------------------------------------------------------
# validate


def cmd_validate(args) -> int:
    bad = 0
    for f in args.files:
        try:
            data = Path(f).read_bytes()
        except OSError as e:
            print(f"invalid {f}: cannot read: {e.strerror}")
            bad += 1
            continue
        _, reason = check_document(data, Path(args.xsd_dir))
        if reason:
            print(f"invalid {f}: {reason}")
            bad += 1
        else:
            print(f"ok {f}")
    return 1 if bad else 0


# --------------------------------------------------------------------------
# sample-pain001

SAMPLE_TXS = ["E2E-SAMPLE-0001:125000:EUR", "E2E-SAMPLE-0002:9950:EUR",
              "E2E-SAMPLE-0003:250000:USD", "E2E-SAMPLE-0004:150000:JPY"]

_SAMPLE_CDTR = {  # ccy -> (name, city, country, BIC, how the account is given)
    "EUR": ("Lieferant {i} GmbH", "Berlin", "DE", "CRDTDEBBXXX", "iban-de"),
    "GBP": ("Supplier {i} Ltd", "London", "GB", "CRDTGB2LXXX", "iban-gb"),
    "USD": ("Vendor {i} Inc.", "New York", "US", "CRDTUS33XXX", "othr"),
    "JPY": ("Supplier {i} KK", "Tokyo", "JP", "CRDTJPJTXXX", "othr"),
}


def build_sample_pain001(msg_id: str, txs: list, exec_date: str, now: dt.datetime,
                         debtor_iban: str, debtor_bic: str) -> bytes:
    """txs: [(e2e, amount_minor, ccy)].  One PmtInf per currency, in the
    element order pain.001.001.09 requires."""
    b = Builder(PAIN001)
    init = b.sub(b.root, "CstmrCdtTrfInitn")
    text = {}
    for e2e, m, c in txs:
        text[e2e] = (fmt_amount(m, c) if m >= 0 else "-" + fmt_amount(-m, c))
    total = sum((Decimal(text[e]) for e, _, _ in txs), Decimal(0))
    gh = b.sub(init, "GrpHdr")
    b.sub(gh, "MsgId", msg_id)                    # Max35Text
    b.sub(gh, "CreDtTm", now.isoformat())         # ISODateTime
    b.sub(gh, "NbOfTxs", len(txs))                # Max15NumericText
    b.sub(gh, "CtrlSum", fmt_decimal(total))      # DecimalNumber
    b.path(gh, "InitgPty/Nm", "Countersign Sample Corp")
    currencies = []
    for _, _, c in txs:
        if c not in currencies:
            currencies.append(c)
    i = 0
    for ccy in currencies:
        these = [t for t in txs if t[2] == ccy]
        pi = b.sub(init, "PmtInf")
        b.sub(pi, "PmtInfId", f"{msg_id[:31]}-{ccy}")
        b.sub(pi, "PmtMtd", "TRF")
        b.sub(pi, "BtchBookg", "true")
        b.sub(pi, "NbOfTxs", len(these))
        b.sub(pi, "CtrlSum", fmt_decimal(sum((Decimal(text[e]) for e, _, _ in these), Decimal(0))))
        if ccy == "EUR":
            b.path(pi, "PmtTpInf/SvcLvl/Cd", "SEPA")
        b.path(pi, "ReqdExctnDt/Dt", exec_date)
        dbtr = b.sub(pi, "Dbtr")
        b.sub(dbtr, "Nm", "Countersign Sample Corp")
        adr = b.sub(dbtr, "PstlAdr")
        b.sub(adr, "TwnNm", "Frankfurt am Main")
        b.sub(adr, "Ctry", "DE")
        b.path(pi, "DbtrAcct/Id/IBAN", debtor_iban)
        b.path(pi, "DbtrAgt/FinInstnId/BICFI", debtor_bic)
        b.sub(pi, "ChrgBr", "SLEV" if ccy == "EUR" else "SHAR")
        for e2e, _, c in these:
            i += 1
            name, city, ctry, bic, acct = _SAMPLE_CDTR.get(
                c, ("Beneficiary {i}", None, None, None, "othr"))
            tx = b.sub(pi, "CdtTrfTxInf")
            pid = b.sub(tx, "PmtId")
            b.sub(pid, "InstrId", f"INSTR-{i:06d}")
            b.sub(pid, "EndToEndId", e2e)
            b.path(tx, "Amt/InstdAmt", text[e2e], Ccy=c)
            if bic:
                b.path(tx, "CdtrAgt/FinInstnId/BICFI", bic)
            cdtr = b.sub(tx, "Cdtr")
            b.sub(cdtr, "Nm", name.format(i=i))
            if city:
                adr = b.sub(cdtr, "PstlAdr")
                b.sub(adr, "TwnNm", city)
                b.sub(adr, "Ctry", ctry)
            if acct == "iban-de":
                b.path(tx, "CdtrAcct/Id/IBAN", make_iban("DE", f"50010517{1000000000 + i * 7919:010d}"))
            elif acct == "iban-gb":
                b.path(tx, "CdtrAcct/Id/IBAN", make_iban("GB", f"NWBK601613{31926819 + i:08d}"))
            else:
                b.path(tx, "CdtrAcct/Id/Othr/Id", f"{123456789 + i:012d}")
            b.path(tx, "RmtInf/Ustrd", f"Invoice INV-{i:05d}")
    return b.tobytes()


def cmd_sample(args) -> int:
    txs = []
    for spec in args.tx or SAMPLE_TXS:
        parts = spec.rsplit(":", 2)
        if len(parts) != 3 or not re.fullmatch(r"-?[0-9]+", parts[1]):
            raise InputError(f"--tx {spec!r}: expected E2E:AMOUNT_MINOR:CCY")
        txs.append((parts[0], int(parts[1]), parts[2]))
    now = now_local()
    msg_id = args.msg_id or f"BATCH-{now.strftime('%Y%m%d%H%M%S')}"
    exec_date = args.date or dt.date.today().isoformat()
    data = build_sample_pain001(msg_id, txs, exec_date, now, args.debtor_iban, args.debtor_bic)
    if not args.no_validate:
        _, reason = check_document(data, Path(args.xsd_dir), expected=PAIN001)
        if reason:
            raise InputError(f"the sample would not be valid: {reason} "
                             f"(use --no-validate to write it anyway)")
    write_atomic(Path(args.out), data)
    return 0


# --------------------------------------------------------------------------
# CLI


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bank_sim.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--xsd-dir", default=os.environ.get("BANKSIM_XSD_DIR", str(DEFAULT_XSD_DIR)),
                   help="directory of the ISO 20022 XSDs (default: ../iso20022)")
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("respond", help="answer the new pain.001 files of an outbox")
    r.add_argument("--outbox", required=True)
    r.add_argument("--inbox", required=True)
    r.add_argument("--state", required=True, help="JSON state file owned by this tool")
    r.add_argument("--reject", action="append", metavar="E2E=CODE",
                   help="reject that transaction with an ISO status reason code (AC04, AC01, AM04, AG01, MS03…)")
    r.add_argument("--pain002", choices=["12", "03"], default="12",
                   help="status report version: pain.002.001.12 (default) or pain.002.001.03")
    r.add_argument("--no-booking", action="store_true", help="write status reports only")
    r.add_argument("--statement", choices=["camt054", "camt053"], default="camt054",
                   help="booking file: camt.054.001.08 notification (default) or camt.053.001.08 statement")
    r.add_argument("--account-iban", default=DEFAULT_ACCOUNT_IBAN)
    r.add_argument("--bank-bic", default=DEFAULT_BANK_BIC)
    r.add_argument("--date", help="booking and value date YYYY-MM-DD (default today)")
    r.add_argument("--opening-balance", type=int, default=DEFAULT_OPENING_BALANCE_MINOR,
                   metavar="MINOR", help="first opening balance of a currency, minor units")
    r.add_argument("--amount-delta", action="append", metavar="E2E=+N",
                   help="book that transaction N minor units off the instructed amount")
    r.add_argument("--unknown-e2e", nargs="?", const="", metavar="E2E",
                   help="add a booked entry with an EndToEndId Countersign never sent")
    r.add_argument("--duplicate-last", action="store_true",
                   help="write the last statement/notification again, byte for byte")
    r.add_argument("--garbage", action="store_true", help="write one NNNN-garbage.xml that is not ISO 20022")
    r.add_argument("--pending", action="store_true", help="status PDNG instead of ACCP, no booking")
    r.add_argument("--release-pending", action="store_true",
                   help="settle the transactions an earlier --pending run left PDNG")
    r.add_argument("--book-only", action="store_true", help="no pain.002, only the booking file")
    r.add_argument("--check-iban", action="store_true",
                   help="reject creditor IBANs with a wrong check digit (AC01)")
    r.set_defaults(func=respond)

    v = sub.add_parser("validate", help="validate files against the XSD their namespace names")
    v.add_argument("files", nargs="+", metavar="FILE")
    v.set_defaults(func=cmd_validate)

    s = sub.add_parser("sample-pain001", help="write a realistic, schema-valid pain.001.001.09")
    s.add_argument("--out", required=True)
    s.add_argument("--tx", action="append", metavar="E2E:AMOUNT_MINOR:CCY")
    s.add_argument("--msg-id")
    s.add_argument("--date", help="requested execution date (default today)")
    s.add_argument("--debtor-iban", default=DEFAULT_ACCOUNT_IBAN)
    s.add_argument("--debtor-bic", default=DEFAULT_BANK_BIC)
    s.add_argument("--no-validate", action="store_true",
                   help="write the file even if it fails the XSD (to make invalid test input)")
    s.set_defaults(func=cmd_sample)
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except InputError as e:
        sys.stderr.write(f"bank_sim: {e}\n")
        return 2
    except InternalError as e:
        sys.stderr.write(f"bank_sim: internal error: {e}\n")
        return 3


if __name__ == "__main__":
    sys.exit(main())
