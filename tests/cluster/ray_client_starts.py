"""How often Ray Client fails to connect to one real Ray head, with gRPC's fork handlers on or
off (why :mod:`.ray_head` turns them off: ray-project/ray#63202).

Each connection makes the head's proxier fork a "specific server"; about one in 25 of those
died at start here with the handlers on. Usage::

    .venv/bin/python -m tests.cluster.ray_client_starts 100 --fork-support on

prints each failure's end, ``n=… failed=…``, and how many of the head's sockets were seen
during the run and how many of them were not on loopback (:mod:`.ray_sockets`; 0 unless
``DW_RAY_LOOPBACK=off``, see :mod:`.ray_head`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time

from .controlplane import free_port
from .ray_head import client_server_logs, head_pid, ray_head, ray_venv
from .ray_sockets import sampling

CONNECT = """
import sys
import ray
ray.init(sys.argv[1], log_to_driver=False)
assert ray.get(ray.remote(lambda: 6 * 7).remote()) == 42
ray.shutdown()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("connections", type=int)
    parser.add_argument("--fork-support", choices=("on", "off"), default="off")
    args = parser.parse_args()
    python = str(ray_venv() / "bin" / "python")
    client_port = free_port()
    failed = 0
    started = time.monotonic()
    os.environ["DW_RAY_GRPC_FORK_SUPPORT"] = args.fork_support  # the head's, read by ray_head
    with ray_head(None, client_port=client_port) as port, sampling(head_pid(port)) as sockets:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        environ["RAY_AUTH_MODE"] = "disabled"
        for i in range(args.connections):
            done = subprocess.run(
                [python, "-c", CONNECT, f"ray://127.0.0.1:{client_port}"],
                env=environ,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            if done.returncode:
                failed += 1
                print(f"connection {i} failed:", (done.stdout + done.stderr)[-1500:])
        logs = client_server_logs(port)
    print(
        f"fork support {args.fork_support}: n={args.connections} failed={failed} "
        f"('skipping fork() handlers' logged {logs.count('skipping fork')} times; "
        f"{time.monotonic() - started:.0f} s)"
    )
    elsewhere = sorted(str(s) for s in sockets.seen if not s.loopback_only)
    print(
        f"sockets of the head: {len(sockets.seen)} seen in {sockets.samples} samples, "
        f"{len(elsewhere)} not on loopback",
        *elsewhere,
        sep="\n  ",
    )


if __name__ == "__main__":
    main()
