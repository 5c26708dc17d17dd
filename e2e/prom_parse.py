#!/usr/bin/env python3
"""Parses a Prometheus text exposition (stdin) with the `prometheus_client`
package's own parser and prints its samples as JSON: a list of
{"name", "labels", "value"}. A text the parser refuses exits non-zero."""

import json
import sys

from prometheus_client.parser import text_string_to_metric_families

samples = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        samples.append({"family": family.name, "type": family.type, "name": s.name, "labels": s.labels, "value": s.value})
print(json.dumps(samples))
