"""psycopg's log records as keel's own messages.

psycopg's pools log through `logging` (the `psycopg` logger tree). With no logging set up,
Python prints each WARNING raw on stderr (`error connecting in 'keel-curated-keel': ...`),
a line per reconnection attempt during an outage. `routed_pg_logs` takes those records
while it is active: each becomes one keel message (what happened, in keel's words, the
server's first line), repeats of the same message are folded, and nothing reaches stderr
raw. INFO and DEBUG records are left to whatever logging the host set up.

    with routed_pg_logs(warn):
        ...  # the pools opened here report through `warn`

`redact_url` is how every message names a server: the URL with its password as `***`
(here, not beside the connections, so the config check uses it without loading psycopg).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["pg_log_message", "redact_url", "routed_pg_logs"]

_LOGGER = "psycopg"

# psycopg_pool's message templates, by what the operator must know.
_KNOWN = {
    "error connecting in %r: %s": "cannot reach the PostgreSQL server (pool {0}): {1}; keel keeps trying",
    "reconnection attempt in pool %r failed after %s sec": (
        "the PostgreSQL server has not answered pool {0} for {1} s; keel keeps trying"
    ),
}


def _first_line(value: object) -> str:
    lines = str(value).strip().splitlines()
    return lines[0] if lines else type(value).__name__


def pg_log_message(record: logging.LogRecord) -> str:
    """The keel message for one of psycopg's log records: one line, no traceback."""
    args = record.args if isinstance(record.args, tuple) else ()
    template = _KNOWN.get(str(record.msg))
    if template is not None and len(args) == 2:
        return template.format(*(_first_line(a) for a in args))
    return f"PostgreSQL connection pool: {_first_line(record.getMessage())}"


class _Route(logging.Handler):
    """Hands each record at WARNING or above to `report`, once per run of repeats."""

    def __init__(self, report: Callable[[str], None]) -> None:
        super().__init__(level=logging.WARNING)
        self._report = report
        self._last: str | None = None
        self._guard = threading.Lock()  # the pools log from their worker threads

    def emit(self, record: logging.LogRecord) -> None:
        message = pg_log_message(record)
        with self._guard:
            if message == self._last:
                return
            self._last = message
        try:
            self._report(message)
        except Exception:  # a reporter that fails must not take a pool's worker down
            self.handleError(record)


@contextmanager
def routed_pg_logs(report: Callable[[str], None]) -> Iterator[None]:
    """Route psycopg's warnings to `report` (called from any thread) for the block.

    Nested blocks each get the records; psycopg's records propagate to the root logger (and
    Python's last-resort stderr line) again only after the last block ends.
    """
    logger = logging.getLogger(_LOGGER)
    route = _Route(report)
    logger.addHandler(route)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(route)
        if not any(isinstance(h, _Route) for h in logger.handlers):
            logger.propagate = True


_KV_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def redact_url(url: str) -> str:
    """`url` with any password (in the netloc, a `password=` parameter or key=value) as `***`."""
    if "://" not in url:
        return _KV_PASSWORD.sub(r"\1***", url)
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, host = netloc.rsplit("@", 1)
            if ":" in userinfo:
                userinfo = userinfo.split(":", 1)[0] + ":***"
            netloc = f"{userinfo}@{host}"
        query = urlencode(
            [
                (k, "***" if k.lower() == "password" else v)
                for k, v in parse_qsl(parts.query, keep_blank_values=True)
            ],
            safe="*",
        )
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return "<an unparsable URL>"
