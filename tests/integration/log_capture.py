"""Everything the server process logs, at every level, for tests that read the log as an
attacker with access to it would.

jupyter_server's loggers do not propagate to the root logger (traitlets gives each
application its own handler), so pytest's ``caplog`` would miss them: a handler is added to
every logger that exists, and to the root, with the level lowered to DEBUG.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@contextmanager
def server_log(*extra: logging.Logger) -> Iterator[list[str]]:
    """Collect log lines (formatted, with tracebacks) of every logger while inside."""
    handler = _Collect()
    loggers = [logging.getLogger(), *extra]
    loggers += [
        logger
        for logger in logging.root.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    levels = {id(logger): logger.level for logger in loggers}
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    try:
        yield handler.lines
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
            logger.setLevel(levels[id(logger)])
