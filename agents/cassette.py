"""Record and replay a run's model exchanges (``FABULA_MODEL_CASSETTE=PATH``), with vcrpy.

The first run with a cassette path that does not exist records every HTTP exchange with the
model servers into it (YAML; API keys and organisation headers are left out); a run with
an existing cassette replays them and sends nothing, so a run against a real server can be
reproduced offline and turned into a test. A request the cassette does not hold (a
different prompt: requests match on method, URL and body) is refused rather than sent.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from fabula.errors import ConfigError

_PRIVATE_HEADERS = ["authorization", "api-key", "openai-organization", "openai-project"]


def check_cassette(path: Path | None) -> None:
    """Refuse, in one line, a cassette that can be neither replayed nor recorded: a path
    that does not exist in a folder that cannot be made or written (the folder is made)."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() and not os.access(path.parent, os.W_OK):
            raise PermissionError(13, "not writable")
    except OSError as exc:
        raise ConfigError(
            f"FABULA_MODEL_CASSETTE: cannot record into {path} ({exc.strerror or exc}); "
            "name a file in a folder you can write"
        ) from None


@contextlib.contextmanager
def cassette(path: Path | None) -> Iterator[None]:
    """Record into, or replay from, the cassette at ``path`` while the block runs (nothing
    when ``path`` is None)."""
    if path is None:
        yield
        return
    import vcr  # only a run that records or replays needs it

    recorder = vcr.VCR(
        record_mode="once",
        match_on=["method", "scheme", "host", "port", "path", "query", "body"],
        filter_headers=_PRIVATE_HEADERS,
        decode_compressed_response=True,
    )
    check_cassette(path)
    with recorder.use_cassette(str(path)):
        yield
