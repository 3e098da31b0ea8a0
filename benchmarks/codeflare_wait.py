"""A codeflare-sdk user waiting on a cluster that waits in its queue (bench_fleet.py).

Run by the Python of codeflare-sdk's own virtual environment, never ours: it imports nothing
of jupyter_dw or this repository. ``python codeflare_wait.py NAMESPACE CLUSTER SECONDS``;
``KUBECONFIG`` names the user's kubeconfig. Finds the cluster (``get_cluster``), prints
``{"waiting": t}`` (``time.time()``), calls ``wait_ready(timeout=SECONDS,
dashboard_check=False)`` (which polls the cluster's status every 5 s until it is ready or the
timeout passes), then prints ``{"done": t, "ready": bool}``.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time


def main() -> None:
    namespace, name, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    import codeflare_sdk

    with contextlib.redirect_stdout(io.StringIO()):  # its tables and progress, not ours
        cluster = codeflare_sdk.get_cluster(name, namespace, verify_tls=False)
    print(json.dumps({"waiting": time.time()}), flush=True)
    ready = True
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            cluster.wait_ready(timeout=seconds, dashboard_check=False)
        except TimeoutError:
            ready = False
    print(json.dumps({"done": time.time(), "ready": ready}), flush=True)


if __name__ == "__main__":
    main()
