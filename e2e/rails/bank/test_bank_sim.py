#!/usr/bin/env python3
"""Self-test of bank_sim.py (unittest).

Run with a Python that has xmlschema==4.3.2, e.g.
    /tmp/banksim-venv/bin/python test_bank_sim.py
Most cases call bank_sim.main() in-process (the XSDs are loaded once); a few
run the real command line through subprocess.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # leave no __pycache__ in the work tree
sys.path.insert(0, str(HERE))
import bank_sim  # noqa: E402

import xmlschema  # noqa: E402

XSD_DIR = HERE.parent / "iso20022"
P1 = "urn:iso:std:iso:20022:tech:xsd:pain.001.001.09"
P2_12 = "urn:iso:std:iso:20022:tech:xsd:pain.002.001.12"
P2_03 = "urn:iso:std:iso:20022:tech:xsd:pain.002.001.03"
C53 = "urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"
C54 = "urn:iso:std:iso:20022:tech:xsd:camt.054.001.08"

_SCHEMAS = {}


def xsd_valid(path: Path) -> bool:
    """Independent check: validate with xmlschema directly."""
    root = ET.parse(path).getroot()
    msg = root.tag[1:].split("}")[0].rsplit(":", 1)[1]
    if msg not in _SCHEMAS:
        _SCHEMAS[msg] = xmlschema.XMLSchema(str(XSD_DIR / f"{msg}.xsd"))
    return _SCHEMAS[msg].is_valid(str(path))


def q(ns, path):
    return "/".join(f"{{{ns}}}{p}" for p in path.split("/"))


def text(el, ns, path):
    x = el.find(q(ns, path))
    return None if x is None else x.text


class BankSimCase(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="banksim-test-"))
        self.outbox = self.tmp / "outbox"
        self.inbox = self.tmp / "inbox"
        self.state = self.tmp / "state.json"
        self.outbox.mkdir()

    def tearDown(self):
        import shutil
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers
    def run_main(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = bank_sim.main([str(a) for a in argv])
            except SystemExit as e:  # argparse errors
                rc = e.code
        return rc, out.getvalue(), err.getvalue()

    def sample(self, name, *txs, msg_id=None, date="2025-03-14", validate=True):
        argv = ["sample-pain001", "--out", self.outbox / name, "--date", date]
        if msg_id:
            argv += ["--msg-id", msg_id]
        for t in txs:
            argv += ["--tx", t]
        if not validate:
            argv.append("--no-validate")
        rc, _, err = self.run_main(*argv)
        self.assertEqual(rc, 0, err)
        return self.outbox / name

    def respond(self, *opts, expect_rc=0):
        rc, out, err = self.run_main("respond", "--outbox", self.outbox, "--inbox", self.inbox,
                                     "--state", self.state, "--date", "2025-03-14", *opts)
        self.assertEqual(rc, expect_rc, f"stdout={out}\nstderr={err}")
        return (json.loads(out) if rc == 0 else None), err

    def inbox_files(self):
        return sorted(p.name for p in self.inbox.iterdir()) if self.inbox.exists() else []

    def parse(self, name):
        return ET.parse(self.inbox / name).getroot()

    def assert_all_written_valid(self, summary):
        """Every written file (but the deliberate garbage) passes the XSD,
        checked twice: by xmlschema directly and by `bank_sim validate`."""
        names = [n for n in summary["written"] if not n.endswith("-garbage.xml")]
        for name in names:
            self.assertTrue(xsd_valid(self.inbox / name), name)
        if names:
            rc, out, _ = self.run_main("validate", *[self.inbox / n for n in names])
            self.assertEqual(rc, 0, out)
            self.assertEqual(out.count("\nok ") + out.startswith("ok "), len(names), out)

    def tx_status_map(self, root, ns):
        res = {}
        for ti in root.iter(f"{{{ns}}}TxInfAndSts"):
            res[text(ti, ns, "OrgnlEndToEndId")] = (text(ti, ns, "TxSts"),
                                                     text(ti, ns, "StsRsnInf/Rsn/Cd"))
        return res

    def entries(self, root, ns):
        res = []
        for n in root.iter(f"{{{ns}}}Ntry"):
            amt = n.find(q(ns, "Amt"))
            res.append({
                "e2e": text(n, ns, "NtryDtls/TxDtls/Refs/EndToEndId"),
                "amt": amt.text, "ccy": amt.get("Ccy"),
                "ind": text(n, ns, "CdtDbtInd"), "sts": text(n, ns, "Sts/Cd"),
                "bookg": text(n, ns, "BookgDt/Dt"), "val": text(n, ns, "ValDt/Dt"),
                "domn": text(n, ns, "BkTxCd/Domn/Cd"),
                "fmly": text(n, ns, "BkTxCd/Domn/Fmly/Cd"),
                "sub": text(n, ns, "BkTxCd/Domn/Fmly/SubFmlyCd"),
                "msgid": text(n, ns, "NtryDtls/TxDtls/Refs/MsgId"),
                "pmtinf": text(n, ns, "NtryDtls/TxDtls/Refs/PmtInfId"),
                "instd": text(n, ns, "NtryDtls/TxDtls/AmtDtls/InstdAmt/Amt"),
                "cdtr": text(n, ns, "NtryDtls/TxDtls/RltdPties/Cdtr/Pty/Nm"),
            })
        return res


class SampleAndValidate(BankSimCase):
    def test_sample_is_valid_and_ordered(self):
        f = self.sample("s.xml", msg_id="BATCH-A")
        self.assertTrue(xsd_valid(f))
        root = ET.parse(f).getroot()
        gh = root.find(q(P1, "CstmrCdtTrfInitn/GrpHdr"))
        self.assertEqual([c.tag.split("}")[1] for c in gh],
                         ["MsgId", "CreDtTm", "NbOfTxs", "CtrlSum", "InitgPty"])
        pmts = root.findall(q(P1, "CstmrCdtTrfInitn/PmtInf"))
        self.assertEqual([text(p, P1, "PmtInfId") for p in pmts],
                         ["BATCH-A-EUR", "BATCH-A-USD", "BATCH-A-JPY"])
        self.assertEqual(text(pmts[0], P1, "PmtTpInf/SvcLvl/Cd"), "SEPA")
        self.assertEqual(text(pmts[0], P1, "ChrgBr"), "SLEV")
        self.assertEqual([c.tag.split("}")[1] for c in pmts[0]][:12],
                         ["PmtInfId", "PmtMtd", "BtchBookg", "NbOfTxs", "CtrlSum", "PmtTpInf",
                          "ReqdExctnDt", "Dbtr", "DbtrAcct", "DbtrAgt", "ChrgBr", "CdtTrfTxInf"])
        amts = [a.text for a in root.iter(f"{{{P1}}}InstdAmt")]
        self.assertEqual(amts, ["1250.00", "99.50", "2500.00", "150000"])
        self.assertEqual(text(gh, P1, "CtrlSum"), "153849.50")
        for iban in root.iter(f"{{{P1}}}IBAN"):
            self.assertTrue(bank_sim.iban_checksum_ok(iban.text), iban.text)

    def test_validate_tells_valid_from_invalid(self):
        good = self.sample("good.xml", "E1:100:EUR")
        bad = self.sample("bad.xml", "X" * 36 + ":100:EUR", validate=False)
        garbage = self.tmp / "g.xml"
        garbage.write_bytes(bank_sim.GARBAGE)
        other = self.tmp / "o.xml"
        other.write_text('<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.001.001.03"/>')
        rc, out, _ = self.run_main("validate", good)
        self.assertEqual((rc, out.strip()), (0, f"ok {good}"))
        rc, out, _ = self.run_main("validate", good, bad, garbage, other, self.tmp / "missing.xml")
        self.assertEqual(rc, 1)
        lines = out.strip().splitlines()
        self.assertEqual(lines[0], f"ok {good}")
        self.assertTrue(lines[1].startswith(f"invalid {bad}: value length cannot be greater than 35"), lines[1])
        self.assertIn("EndToEndId", lines[1])
        self.assertTrue(lines[2].startswith(f"invalid {garbage}: root element <html>"), lines[2])
        self.assertIn("unknown namespace", lines[3])
        self.assertTrue(lines[4].startswith("invalid ") and "cannot read" in lines[4])

    def test_minor_units(self):
        self.assertEqual(bank_sim.to_minor("1250.00", "EUR"), 125000)
        self.assertEqual(bank_sim.to_minor("12.5", "EUR"), 1250)
        self.assertEqual(bank_sim.to_minor("150000", "JPY"), 150000)
        self.assertEqual(bank_sim.to_minor("1.234", "BHD"), 1234)
        self.assertEqual(bank_sim.to_minor("7", "KWD"), 7000)
        with self.assertRaises(bank_sim.InputError):
            bank_sim.to_minor("100.5", "JPY")
        with self.assertRaises(bank_sim.InputError):
            bank_sim.to_minor("1.001", "EUR")
        self.assertEqual(bank_sim.fmt_amount(5, "EUR"), "0.05")
        self.assertEqual(bank_sim.fmt_amount(1234, "BHD"), "1.234")
        self.assertEqual(bank_sim.fmt_amount(42, "VND"), "42")


class Respond(BankSimCase):
    def test_default_accepts_and_notifies(self):
        self.sample("b1.xml", "OP-1:125000:EUR", "OP-2:150000:JPY", "OP-3:1234:BHD", msg_id="BATCH-1")
        s, _ = self.respond()
        self.assertEqual(s["written"], ["0001-pain.002.001.12-BATCH-1.xml",
                                        "0002-camt.054.001.08-BKSIM-NTFCTN-00000001.xml"])
        self.assertEqual(s["duplicates"], [])
        self.assertEqual(s["processed"], [{"file": "b1.xml", "msg_id": "BATCH-1", "transactions": [
            {"end_to_end_id": "OP-1", "amount_minor": 125000, "currency": "EUR", "status": "ACCP",
             "reason": None, "booked_amount_minor": 125000},
            {"end_to_end_id": "OP-2", "amount_minor": 150000, "currency": "JPY", "status": "ACCP",
             "reason": None, "booked_amount_minor": 150000},
            {"end_to_end_id": "OP-3", "amount_minor": 1234, "currency": "BHD", "status": "ACCP",
             "reason": None, "booked_amount_minor": 1234}]}])
        self.assert_all_written_valid(s)
        p2 = self.parse(s["written"][0])
        self.assertEqual(p2.tag, f"{{{P2_12}}}Document")
        og = p2.find(q(P2_12, "CstmrPmtStsRpt/OrgnlGrpInfAndSts"))
        self.assertEqual(text(og, P2_12, "OrgnlMsgId"), "BATCH-1")
        self.assertEqual(text(og, P2_12, "OrgnlMsgNmId"), "pain.001.001.09")
        self.assertEqual(text(og, P2_12, "GrpSts"), "ACCP")
        self.assertEqual(len(p2.findall(q(P2_12, "CstmrPmtStsRpt/OrgnlPmtInfAndSts"))), 3)
        self.assertEqual(self.tx_status_map(p2, P2_12),
                         {"OP-1": ("ACCP", None), "OP-2": ("ACCP", None), "OP-3": ("ACCP", None)})
        c = self.parse(s["written"][1])
        self.assertEqual(c.tag, f"{{{C54}}}Document")
        ntfs = c.findall(q(C54, "BkToCstmrDbtCdtNtfctn/Ntfctn"))
        self.assertEqual([text(n, C54, "Acct/Ccy") for n in ntfs], ["BHD", "EUR", "JPY"])
        self.assertEqual({text(n, C54, "Acct/Id/IBAN") for n in ntfs}, {"DE89370400440532013000"})
        es = {e["e2e"]: e for e in self.entries(c, C54)}
        self.assertEqual(es["OP-1"]["amt"], "1250.00")
        self.assertEqual(es["OP-2"]["amt"], "150000")
        self.assertEqual(es["OP-3"]["amt"], "1.234")
        for e in es.values():
            self.assertEqual((e["ind"], e["sts"], e["bookg"], e["val"], e["domn"], e["fmly"]),
                             ("DBIT", "BOOK", "2025-03-14", "2025-03-14", "PMNT", "ICDT"))
            self.assertEqual(e["msgid"], "BATCH-1")
            self.assertEqual(e["instd"], e["amt"])
            self.assertTrue(e["cdtr"])
        self.assertEqual(es["OP-1"]["sub"], "ESCT")
        self.assertEqual(es["OP-1"]["pmtinf"], "BATCH-1-EUR")
        # nothing left behind: no temp files, second run is a no-op
        self.assertEqual(len(self.inbox_files()), 2)
        s2, _ = self.respond()
        self.assertEqual((s2["processed"], s2["written"], s2["duplicates"]), ([], [], []))

    def test_reject_codes_and_group_status(self):
        self.sample("b1.xml", "OP-1:1000:EUR", "OP-2:2000:EUR", "OP-3:3000:USD", "OP-4:0:EUR",
                    msg_id="BATCH-R")
        s, _ = self.respond("--reject", "OP-2=AC04", "--reject", "OP-3=AM04")
        st = {t["end_to_end_id"]: (t["status"], t["reason"]) for t in s["processed"][0]["transactions"]}
        self.assertEqual(st, {"OP-1": ("ACCP", None), "OP-2": ("RJCT", "AC04"),
                              "OP-3": ("RJCT", "AM04"), "OP-4": ("RJCT", "AM01")})
        self.assert_all_written_valid(s)
        p2 = self.parse(s["written"][0])
        self.assertEqual(text(p2, P2_12, "CstmrPmtStsRpt/OrgnlGrpInfAndSts/GrpSts"), "PART")
        self.assertEqual(self.tx_status_map(p2, P2_12), {k: v for k, v in st.items()})
        pis = {text(p, P2_12, "OrgnlPmtInfId"): text(p, P2_12, "PmtInfSts")
               for p in p2.findall(q(P2_12, "CstmrPmtStsRpt/OrgnlPmtInfAndSts"))}
        self.assertEqual(pis, {"BATCH-R-EUR": "PART", "BATCH-R-USD": "RJCT"})
        es = self.entries(self.parse(s["written"][1]), C54)
        self.assertEqual([e["e2e"] for e in es], ["OP-1"])

    def test_all_rejected_v03_no_booking_file(self):
        self.sample("b1.xml", "OP-1:1000:EUR", "OP-2:2000:EUR", msg_id="BATCH-X")
        s, _ = self.respond("--pain002", "03", "--reject", "OP-1=AG01", "--reject", "OP-2=MS03")
        self.assertEqual(s["written"], ["0001-pain.002.001.03-BATCH-X.xml"])
        self.assert_all_written_valid(s)
        p2 = self.parse(s["written"][0])
        self.assertEqual(p2.tag, f"{{{P2_03}}}Document")
        self.assertEqual(text(p2, P2_03, "CstmrPmtStsRpt/OrgnlGrpInfAndSts/GrpSts"), "RJCT")
        self.assertEqual(self.tx_status_map(p2, P2_03), {"OP-1": ("RJCT", "AG01"), "OP-2": ("RJCT", "MS03")})
        self.assertEqual(text(p2, P2_03, "CstmrPmtStsRpt/GrpHdr/DbtrAgt/FinInstnId/BIC"), "BSIMDEFFXXX")

    def test_camt053_balances_carry_over(self):
        self.sample("b1.xml", "OP-1:100000:EUR", "OP-2:5000:EUR", msg_id="BATCH-1")
        s, _ = self.respond("--statement", "camt053", "--opening-balance", "1000000",
                            "--account-iban", "GB29NWBK60161331926819")
        self.assertEqual(s["written"][1], "0002-camt.053.001.08-BKSIM-STMT-00000001.xml")
        self.assert_all_written_valid(s)
        st = self.parse(s["written"][1]).find(q(C53, "BkToCstmrStmt/Stmt"))
        self.assertEqual(text(st, C53, "Acct/Id/IBAN"), "GB29NWBK60161331926819")
        bals = {text(b, C53, "Tp/CdOrPrtry/Cd"): (text(b, C53, "Amt"), text(b, C53, "CdtDbtInd"),
                                                   text(b, C53, "Dt/Dt"))
                for b in st.findall(q(C53, "Bal"))}
        self.assertEqual(bals, {"OPBD": ("10000.00", "CRDT", "2025-03-14"),
                                "CLBD": ("8950.00", "CRDT", "2025-03-14")})
        self.assertEqual(len(self.entries(st, C53)), 2)
        # next statement opens with the previous closing balance; may go negative
        self.sample("b2.xml", "OP-3:900000:EUR", msg_id="BATCH-2")
        s2, _ = self.respond("--statement", "camt053")
        self.assert_all_written_valid(s2)
        st2 = self.parse(s2["written"][1]).find(q(C53, "BkToCstmrStmt/Stmt"))
        bals = {text(b, C53, "Tp/CdOrPrtry/Cd"): (text(b, C53, "Amt"), text(b, C53, "CdtDbtInd"))
                for b in st2.findall(q(C53, "Bal"))}
        self.assertEqual(bals, {"OPBD": ("8950.00", "CRDT"), "CLBD": ("50.00", "DBIT")})
        self.assertNotEqual(text(st, C53, "Id"), text(st2, C53, "Id"))
        self.assertEqual(text(st2, C53, "ElctrncSeqNb"), "2")

    def test_amount_delta(self):
        self.sample("b1.xml", "OP-1:1000:EUR", "OP-2:2000:EUR", msg_id="BATCH-D")
        s, _ = self.respond("--amount-delta", "OP-1=+7", "--amount-delta", "OP-2=-1")
        txs = {t["end_to_end_id"]: t for t in s["processed"][0]["transactions"]}
        self.assertEqual((txs["OP-1"]["amount_minor"], txs["OP-1"]["booked_amount_minor"]), (1000, 1007))
        self.assertEqual((txs["OP-2"]["amount_minor"], txs["OP-2"]["booked_amount_minor"]), (2000, 1999))
        self.assert_all_written_valid(s)
        es = {e["e2e"]: e for e in self.entries(self.parse(s["written"][1]), C54)}
        self.assertEqual((es["OP-1"]["amt"], es["OP-1"]["instd"]), ("10.07", "10.00"))
        self.assertEqual((es["OP-2"]["amt"], es["OP-2"]["instd"]), ("19.99", "20.00"))

    def test_unknown_e2e(self):
        self.sample("b1.xml", "OP-1:1000:EUR", msg_id="BATCH-U")
        s, _ = self.respond("--unknown-e2e")
        self.assertEqual(len(s["unknown_entries"]), 1)
        unk = s["unknown_entries"][0]["end_to_end_id"]
        self.assertNotEqual(unk, "OP-1")
        self.assert_all_written_valid(s)
        es = [e["e2e"] for e in self.entries(self.parse(s["written"][1]), C54)]
        self.assertEqual(es, ["OP-1", unk])
        # explicit id, and without any new batch
        s2, _ = self.respond("--unknown-e2e", "NEVER-SENT-1", "--statement", "camt053")
        self.assertEqual(len(s2["written"]), 1)
        self.assert_all_written_valid(s2)
        es = [e["e2e"] for e in self.entries(self.parse(s2["written"][0]), C53)]
        self.assertEqual(es, ["NEVER-SENT-1"])

    def test_duplicate_last(self):
        self.sample("b1.xml", "OP-1:1000:EUR", msg_id="BATCH-1")
        s, _ = self.respond()
        first = s["written"][1]
        s2, _ = self.respond("--duplicate-last")
        self.assertEqual(len(s2["written"]), 1)
        dup = s2["written"][0]
        self.assertNotEqual(dup, first)
        self.assertEqual((self.inbox / dup).read_bytes(), (self.inbox / first).read_bytes())
        self.assertTrue(xsd_valid(self.inbox / dup))
        # in the same run as a new batch: the new notification and its copy
        self.sample("b2.xml", "OP-2:2000:EUR", msg_id="BATCH-2")
        s3, _ = self.respond("--duplicate-last")
        self.assertEqual(len(s3["written"]), 3)
        a, b = s3["written"][1:]
        self.assertEqual((self.inbox / a).read_bytes(), (self.inbox / b).read_bytes())
        self.assertIn("OP-2", (self.inbox / b).read_text())
        self.assertEqual(self.inbox_files(), sorted(self.inbox_files()))
        self.assertEqual(len(set(self.inbox_files())), 6)

    def test_duplicate_last_without_history_is_an_error(self):
        _, err = self.respond("--duplicate-last", expect_rc=2)
        self.assertIn("no statement", err)

    def test_garbage(self):
        self.sample("b1.xml", "OP-1:1000:EUR", msg_id="BATCH-G")
        s, _ = self.respond("--garbage")
        self.assertEqual(len(s["written"]), 3)
        g = s["written"][-1]
        self.assertRegex(g, r"^\d{4}-garbage\.xml$")
        self.assertTrue((self.inbox / g).read_bytes().startswith(b"<html>"))
        rc, out, _ = self.run_main("validate", self.inbox / g)
        self.assertEqual(rc, 1)
        self.assert_all_written_valid(s)

    def test_pending_then_release(self):
        self.sample("b1.xml", "OP-1:1000:EUR", "OP-2:2000:EUR", "OP-3:3000:EUR", msg_id="BATCH-P")
        s, _ = self.respond("--pending", "--reject", "OP-3=AC01")
        self.assertEqual(len(s["written"]), 1)  # no booking
        st = {t["end_to_end_id"]: t["status"] for t in s["processed"][0]["transactions"]}
        self.assertEqual(st, {"OP-1": "PDNG", "OP-2": "PDNG", "OP-3": "RJCT"})
        self.assert_all_written_valid(s)
        p2 = self.parse(s["written"][0])
        self.assertEqual(text(p2, P2_12, "CstmrPmtStsRpt/OrgnlGrpInfAndSts/GrpSts"), "PART")
        self.assertEqual(self.tx_status_map(p2, P2_12)["OP-1"], ("PDNG", None))
        # an ordinary run does not touch pending transactions
        s1, _ = self.respond()
        self.assertEqual(s1["written"], [])
        s2, _ = self.respond("--release-pending", "--reject", "OP-2=AM04")
        self.assertEqual(len(s2["written"]), 2)
        self.assertTrue(s2["processed"][0]["released_pending"])
        st = {t["end_to_end_id"]: (t["status"], t["reason"]) for t in s2["processed"][0]["transactions"]}
        self.assertEqual(st, {"OP-1": ("ACCP", None), "OP-2": ("RJCT", "AM04")})
        self.assert_all_written_valid(s2)
        p2 = self.parse(s2["written"][0])
        self.assertEqual(set(self.tx_status_map(p2, P2_12)), {"OP-1", "OP-2"})
        self.assertEqual(text(p2, P2_12, "CstmrPmtStsRpt/OrgnlGrpInfAndSts/GrpSts"), "PART")
        es = [e["e2e"] for e in self.entries(self.parse(s2["written"][1]), C54)]
        self.assertEqual(es, ["OP-1"])

    def test_pending_v03(self):
        self.sample("b1.xml", "OP-1:1000:EUR", msg_id="BATCH-P3")
        s, _ = self.respond("--pending", "--pain002", "03")
        self.assert_all_written_valid(s)
        p2 = self.parse(s["written"][0])
        self.assertEqual(text(p2, P2_03, "CstmrPmtStsRpt/OrgnlGrpInfAndSts/GrpSts"), "PDNG")

    def test_book_only_and_no_booking(self):
        self.sample("b1.xml", "OP-1:1000:EUR", msg_id="BATCH-1")
        s, _ = self.respond("--book-only")
        self.assertEqual(len(s["written"]), 1)
        self.assertIn("camt.054.001.08", s["written"][0])
        self.assert_all_written_valid(s)
        self.sample("b2.xml", "OP-2:1000:EUR", msg_id="BATCH-2")
        s, _ = self.respond("--no-booking")
        self.assertEqual(s["written"], ["0002-pain.002.001.12-BATCH-2.xml"])
        self.assertIsNone(s["processed"][0]["transactions"][0]["booked_amount_minor"])
        _, err = self.respond("--book-only", "--no-booking", expect_rc=2)

    def test_duplicate_batch(self):
        f = self.sample("b1.xml", "OP-1:1000:EUR", msg_id="BATCH-1")
        self.respond()
        (self.outbox / "b1-again.xml").write_bytes(f.read_bytes())
        s, _ = self.respond()
        self.assertEqual(s["processed"], [])
        self.assertEqual(s["written"], [])
        self.assertEqual(s["duplicates"], [{"file": "b1-again.xml", "msg_id": "BATCH-1",
                                            "reason": "duplicate_batch", "original_file": "b1.xml"}])
        s, _ = self.respond()  # reported once
        self.assertEqual(s["duplicates"], [])
        # same MsgId, other content, other name: refused, nothing written
        self.sample("b1-changed.xml", "OP-1:1001:EUR", msg_id="BATCH-1")
        before = self.inbox_files()
        state_before = self.state.read_bytes()
        _, err = self.respond(expect_rc=2)
        self.assertIn("b1-changed.xml", err)
        self.assertIn("BATCH-1", err)
        self.assertEqual(self.inbox_files(), before)
        self.assertEqual(self.state.read_bytes(), state_before)

    def test_duplicate_batch_in_one_run(self):
        f = self.sample("a.xml", "OP-1:1000:EUR", msg_id="BATCH-1")
        (self.outbox / "b.xml").write_bytes(f.read_bytes())
        s, _ = self.respond()
        self.assertEqual([p["file"] for p in s["processed"]], ["a.xml"])
        self.assertEqual([d["file"] for d in s["duplicates"]], ["b.xml"])

    def test_reused_end_to_end_id_is_warned(self):
        self.sample("a.xml", "OP-1:1000:EUR", msg_id="BATCH-1")
        self.respond()
        self.sample("b.xml", "OP-1:1000:EUR", msg_id="BATCH-2")
        s, err = self.respond()
        self.assertTrue(any("OP-1" in w and "BATCH-1" in w for w in s["warnings"]), s["warnings"])
        self.assertIn("warning", err)

    def test_unmatched_options_are_warned(self):
        self.sample("a.xml", "OP-1:1000:EUR", msg_id="BATCH-1")
        s, _ = self.respond("--reject", "OP-9=AC04", "--amount-delta", "OP-8=+1")
        self.assertEqual(len(s["warnings"]), 2)

    def test_bad_options(self):
        self.respond("--reject", "OP-1=closed", expect_rc=2)
        self.respond("--reject", "OP-1", expect_rc=2)
        self.respond("--amount-delta", "OP-1=x", expect_rc=2)
        self.respond("--date", "14.03.2025", expect_rc=2)
        self.respond("--account-iban", "nope", expect_rc=2)
        self.respond("--pending", "--book-only", expect_rc=2)
        self.sample("a.xml", "OP-1:5:EUR", msg_id="BATCH-1")
        self.respond("--amount-delta", "OP-1=-6", expect_rc=2)
        self.assertEqual(self.inbox_files(), [])

    def test_check_iban(self):
        f = self.sample("a.xml", "OP-1:1000:EUR", "OP-2:1000:EUR", msg_id="BATCH-1")
        data = f.read_text()
        ibans = re.findall(r"<IBAN>(DE\d{2}50010517\d+)</IBAN>", data)
        broken = ibans[1][:-1] + str((int(ibans[1][-1]) + 1) % 10)
        f.write_text(data.replace(ibans[1], broken))
        s, _ = self.respond("--check-iban")
        st = {t["end_to_end_id"]: (t["status"], t["reason"]) for t in s["processed"][0]["transactions"]}
        self.assertEqual(st, {"OP-1": ("ACCP", None), "OP-2": ("RJCT", "AC01")})

    def test_minimal_pain001_from_another_writer(self):
        """Only the contract's elements: no CtrlSum, no CdtrAgt, no RmtInf,
        no InstrId, Othr account, ReqdExctnDt/DtTm, other prefix style."""
        xml = f"""<?xml version="1.0" encoding="UTF-8"?>
<p:Document xmlns:p="{P1}"><p:CstmrCdtTrfInitn>
<p:GrpHdr><p:MsgId>M-1</p:MsgId><p:CreDtTm>2025-03-14T10:00:00</p:CreDtTm><p:NbOfTxs>1</p:NbOfTxs><p:InitgPty/></p:GrpHdr>
<p:PmtInf><p:PmtInfId>PI-1</p:PmtInfId><p:PmtMtd>TRF</p:PmtMtd>
<p:ReqdExctnDt><p:DtTm>2025-03-14T09:00:00Z</p:DtTm></p:ReqdExctnDt><p:Dbtr/>
<p:DbtrAcct><p:Id><p:Othr><p:Id>123</p:Id></p:Othr></p:Id></p:DbtrAcct>
<p:DbtrAgt><p:FinInstnId/></p:DbtrAgt>
<p:CdtTrfTxInf><p:PmtId><p:EndToEndId>E-1</p:EndToEndId></p:PmtId>
<p:Amt><p:InstdAmt Ccy="GBP">0.01</p:InstdAmt></p:Amt>
<p:Cdtr><p:Nm>Bob</p:Nm></p:Cdtr><p:CdtrAcct><p:Id><p:Othr><p:Id>GB-1</p:Id></p:Othr></p:Id></p:CdtrAcct>
</p:CdtTrfTxInf></p:PmtInf></p:CstmrCdtTrfInitn></p:Document>"""
        (self.outbox / "m.xml").write_text(xml)
        for v in ("12", "03"):
            for kind in ("camt054", "camt053"):
                with self.subTest(pain002=v, statement=kind):
                    if self.state.exists():
                        self.state.unlink()
                    s, _ = self.respond("--pain002", v, "--statement", kind)
                    self.assertEqual(s["processed"][0]["transactions"][0]["amount_minor"], 1)
                    self.assertEqual(len(s["written"]), 2)
                    self.assert_all_written_valid(s)

    def test_nbofTxs_and_ctrlsum_mismatch(self):
        f = self.sample("a.xml", "OP-1:1000:EUR", msg_id="BATCH-1")
        f.write_text(f.read_text().replace("<CtrlSum>10.00</CtrlSum>", "<CtrlSum>10.01</CtrlSum>", 1))
        _, err = self.respond(expect_rc=2)
        self.assertIn("a.xml: GrpHdr/CtrlSum is 10.01", err)
        f = self.sample("a.xml", "OP-1:1000:EUR", msg_id="BATCH-1")
        f.write_text(f.read_text().replace("<NbOfTxs>1</NbOfTxs>", "<NbOfTxs>2</NbOfTxs>", 1))
        _, err = self.respond(expect_rc=2)
        self.assertIn("GrpHdr/NbOfTxs is 2", err)

    def test_duplicate_end_to_end_id_in_one_file(self):
        self.sample("a.xml", "OP-1:1000:EUR", "OP-1:2000:EUR", msg_id="BATCH-1")
        _, err = self.respond(expect_rc=2)
        self.assertIn("occurs twice", err)

    def test_jpy_with_decimals(self):
        f = self.sample("a.xml", "OP-1:1000:JPY", msg_id="BATCH-1")
        f.write_text(f.read_text().replace(">1000</InstdAmt>", ">1000.00</InstdAmt>")
                     .replace(">1000</CtrlSum>", ">1000.00</CtrlSum>"))
        _, err = self.respond(expect_rc=2)
        self.assertIn("JPY has 0", err)


class InvalidInput(BankSimCase):
    """Invalid pain.001: exit 2, the file named, nothing written."""

    def check_refused(self, name, expect):
        # a valid file sorted before the bad one: it must not be answered either
        self.sample("a-ok.xml", "OK-1:1000:EUR", msg_id="BATCH-OK")
        _, err = self.respond(expect_rc=2)
        self.assertIn(f"{name}: ", err)
        self.assertIn(expect, err)
        self.assertEqual(self.inbox_files(), [])
        self.assertFalse(self.state.exists())

    def test_element_out_of_order(self):
        f = self.sample("bad.xml", "OP-1:1000:EUR", msg_id="BATCH-1")
        data = f.read_text()
        m = re.search(r"(\s*<MsgId>BATCH-1</MsgId>)(\s*<CreDtTm>[^<]+</CreDtTm>)", data)
        f.write_text(data.replace(m.group(0), m.group(2) + m.group(1)))
        self.check_refused("bad.xml", "Unexpected child with tag 'CreDtTm'")

    def test_end_to_end_id_36_chars(self):
        self.sample("bad.xml", "E" * 36 + ":1000:EUR", msg_id="BATCH-1", validate=False)
        self.check_refused("bad.xml", "value length cannot be greater than 35")

    def test_negative_amount(self):
        self.sample("bad.xml", "OP-1:-1000:EUR", msg_id="BATCH-1", validate=False)
        self.check_refused("bad.xml", "InstdAmt")

    def test_not_pain001(self):
        (self.outbox / "bad.xml").write_text(
            '<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.001.001.03"><CstmrCdtTrfInitn/></Document>')
        self.check_refused("bad.xml", "expected a pain.001.001.09 document")

    def test_not_xml(self):
        (self.outbox / "bad.xml").write_text("MsgId,Amount\n1,2\n")
        self.check_refused("bad.xml", "not well-formed XML")


class InternalErrors(BankSimCase):
    def test_invalid_output_exits_3(self):
        self.sample("a.xml", "OP-1:1000:EUR", msg_id="BATCH-1")
        orig = bank_sim.build_pain002
        bank_sim.build_pain002 = lambda *a, **k: orig(*a, **k).replace(b"<GrpSts>", b"<Grpsts>").replace(
            b"</GrpSts>", b"</Grpsts>")
        try:
            _, err = self.respond(expect_rc=3)
        finally:
            bank_sim.build_pain002 = orig
        self.assertIn("internal error", err)
        self.assertEqual(self.inbox_files(), [])
        self.assertFalse(self.state.exists())


class CommandLine(BankSimCase):
    """The real command line, through subprocess."""

    def cli(self, *argv):
        return subprocess.run([sys.executable, str(HERE / "bank_sim.py"), *map(str, argv)],
                              capture_output=True, text=True, timeout=120)

    def test_cli_round_trip(self):
        r = self.cli("sample-pain001", "--out", self.outbox / "b1.xml", "--msg-id", "CLI-1")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.cli("respond", "--outbox", self.outbox, "--inbox", self.inbox, "--state", self.state,
                     "--reject", "E2E-SAMPLE-0003=AC04", "--statement", "camt053")
        self.assertEqual(r.returncode, 0, r.stderr)
        s = json.loads(r.stdout)
        self.assertEqual(len(s["written"]), 2)
        r = self.cli("validate", *[self.inbox / n for n in s["written"]])
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertEqual(r.stdout.count("ok "), 2)
        self.assertEqual(sorted(os.listdir(self.inbox)), s["written"])

    def test_cli_invalid_input(self):
        r = self.cli("sample-pain001", "--out", self.outbox / "b1.xml", "--no-validate",
                     "--tx", "E" * 36 + ":1:EUR")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.cli("respond", "--outbox", self.outbox, "--inbox", self.inbox, "--state", self.state)
        self.assertEqual(r.returncode, 2)
        self.assertIn("b1.xml", r.stderr)
        self.assertEqual(r.stdout, "")
        r = self.cli("validate", self.outbox / "b1.xml")
        self.assertEqual(r.returncode, 1)
        self.assertTrue(r.stdout.startswith("invalid "))


if __name__ == "__main__":
    unittest.main(verbosity=2)
