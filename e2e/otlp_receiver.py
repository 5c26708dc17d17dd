#!/usr/bin/env python3
"""An OTLP/HTTP trace receiver for the tests.

Independent of Countersign's code: it decodes each POST /v1/traces body with
the `opentelemetry-proto` package (the OpenTelemetry project's own generated
protobuf classes) and appends one JSON line per span to OUT: the resource's
attributes, the span's name, ids, parent, status and attributes. It prints
"listening on PORT" once ready. A body that is not an
ExportTraceServiceRequest, or not `application/x-protobuf`, is answered 400
and logged to OUT as {"error": ...} so the test sees it.

    otlp_receiver.py OUT
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = sys.argv[1]


def value(v):
    """An AnyValue as plain JSON."""
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind) if kind else None


def attributes(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


def write(record):
    with open(OUT, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            write({"error": f"{self.path} {self.headers.get('Content-Type')}"})
            self.send_response(400)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except DecodeError as e:
            write({"error": f"not an ExportTraceServiceRequest: {e}"})
            self.send_response(400)
            self.end_headers()
            return
        for rs in request.resource_spans:
            resource = attributes(rs.resource.attributes)
            for ss in rs.scope_spans:
                for span in ss.spans:
                    write(
                        {
                            "resource": resource,
                            "scope": ss.scope.name,
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "status": span.status.code,
                            "attributes": attributes(span.attributes),
                        }
                    )
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"listening on {server.server_address[1]}", flush=True)
server.serve_forever()
