"""Kubernetes' own quantity parser as a long-lived process, for property tests.

``tests/cluster/go/quantity-oracle`` wraps ``resource.ParseQuantity`` from the apimachinery
release the test bed's Kubernetes is built with; ``build.sh quantity-oracle`` builds it once
into ``~/.cache/jupyter-dw/bin`` (no control plane). One process answers every batch: one JSON
string a line in, one answer a line out, in order.
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import IO

from .versions import HERE


def oracle_binary() -> Path:
    """Build (or find cached) the oracle and return its path."""
    built = subprocess.run(
        ["bash", str(HERE / "build.sh"), "quantity-oracle"],
        check=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    return Path(built.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class Verdict:
    """What Kubernetes makes of one string: its exact value, or the error it answers."""

    value: Decimal | None
    error: str | None = None

    @property
    def accepted(self) -> bool:
        return self.value is not None


class QuantityOracle:
    """``resource.ParseQuantity`` behind a pipe; close it (or use ``with``) when done."""

    timeout = 60.0
    """Seconds one batch may take."""

    def __init__(self, binary: Path | None = None) -> None:
        self._process = subprocess.Popen(
            [str(binary or oracle_binary())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def parse(self, texts: Iterable[str]) -> list[Verdict]:
        """Kubernetes' verdict on each of ``texts``, in order (one write, one read a line)."""
        texts = list(texts)
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None

        def write() -> None:  # while the answers are read: neither pipe fills up and blocks
            stdin.write("".join(json.dumps(text) + "\n" for text in texts))
            stdin.flush()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        # A batch Kubernetes takes too long over fails the test rather than hanging it.
        watchdog = threading.Timer(self.timeout, self._process.kill)
        watchdog.start()
        try:
            return self._read(texts, stdout)
        finally:
            watchdog.cancel()
            writer.join()

    def _read(self, texts: list[str], stdout: IO[str]) -> list[Verdict]:
        verdicts = []
        for _ in texts:
            line = stdout.readline()
            if not line:
                raise RuntimeError(
                    f"the quantity oracle exited ({self._process.wait()}) or took more than "
                    f"{self.timeout} s over one of {texts!r:.2000}"
                )
            answer = json.loads(line)
            if answer["ok"]:
                # Built from its digits: exact at any size (no context rounds a constructor).
                verdicts.append(Verdict(Decimal(f"{answer['unscaled']}E{-answer['scale']}")))
            else:
                verdicts.append(Verdict(None, answer["error"]))
        return verdicts

    def close(self) -> None:
        if self._process.stdin:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def __enter__(self) -> QuantityOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
