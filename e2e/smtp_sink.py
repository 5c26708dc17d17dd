#!/usr/bin/env python3
"""An SMTP server for the tests: `aiosmtpd`, the
asyncio SMTP server from PyPI, independent of Countersign's code. Every
message it accepts is appended to OUT as one JSON line: the envelope
(`mail_from`, `rcpt_tos`) and the message as received (`data`), which the
test parses with Python's or Rust's own mail parsing. It prints
"listening on PORT" once ready.

    smtp_sink.py OUT
"""

import json
import socket
import sys
import threading

from aiosmtpd.controller import Controller

OUT = sys.argv[1]


class Sink:
    async def handle_DATA(self, server, session, envelope):
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": list(envelope.rcpt_tos),
            "data": envelope.content.decode("utf-8", errors="replace"),
        }
        with open(OUT, "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
        return "250 Message accepted for delivery"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


port = free_port()
controller = Controller(Sink(), hostname="127.0.0.1", port=port)
controller.start()
print(f"listening on {port}", flush=True)
try:
    threading.Event().wait()
finally:
    controller.stop()
