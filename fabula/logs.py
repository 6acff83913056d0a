"""Structured logging, configured once at an entry point.

Output is JSON when stderr is not a terminal (services, CI) and pretty on a terminal.
Bind ``story``, ``branch``, ``turn`` and ``role`` with
:func:`structlog.contextvars.bind_contextvars` or ``log.bind(...)``.
"""

from __future__ import annotations

import logging
import sys

import structlog

_configured = False


def configure_logging(*, json: bool | None = None, level: int = logging.WARNING) -> None:
    """Configure structlog for the process. Call once, at an entry point."""
    global _configured
    if json is None:
        json = not sys.stderr.isatty()
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
    _configured = True


class _CurrentStderr:
    """``sys.stderr`` as it is when a line is written: whoever swapped it since the
    configuration (a test runner capturing a command's output) is written to, and a
    stream closed since is never."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    """A logger bound with the module's name."""
    # a lazy proxy: binding here would freeze the configuration in force at import time
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(module=name)
    return logger
