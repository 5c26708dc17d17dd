#!/usr/bin/env python3
"""An independent check of Countersign's SCIM 2.0 server.

scim2-tester (with scim2-client and scim2-models, libraries Countersign
does not use) reads the server's discovery endpoints, then creates, reads,
queries, replaces, patches and deletes Users and Groups as the RFCs say a
client may, and judges every answer. This script runs it against a live
server with a tenant's SCIM token and prints one JSON object per check
(title, status, reason, resource type), for server/tests/api/scim.rs to
assert on.

Usage: scim_check.py BASE_URL TOKEN   (BASE_URL ends in /scim/v2)
"""

import json
import sys

from httpx2 import Client
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import check_server


def main() -> int:
    base_url, token = sys.argv[1], sys.argv[2]
    http = Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    client = SyncSCIMClient(http)
    results = check_server(client, raise_exceptions=False)
    for r in results:
        print(
            json.dumps(
                {
                    "title": r.title,
                    "status": r.status.name,
                    "reason": r.reason,
                    "resource_type": r.resource_type,
                    "tags": sorted(r.tags),
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
