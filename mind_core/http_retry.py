"""Retrying an HTTP request whose reply was a 429 or a 5xx: the one policy the embedding
providers and the web importer share.

The wait before retry n is random in [0, min(max_wait_s, initial_wait_s * 2**(n-1))] (full
jitter, so many clients do not retry in step), and at least the server's ``Retry-After``
(capped at ``max_wait_s``). tenacity is imported by the call that retries, so a command that
sends nothing over HTTP never loads it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a 429 or 5xx reply. ``sleep`` is how the wait is spent
    (a clock can be injected)."""

    attempts: int = 5
    initial_wait_s: float = 0.5
    max_wait_s: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {self.attempts}")


DEFAULT_RETRY = RetryPolicy()


def is_retryable(status: int) -> bool:
    return status == 429 or 500 <= status <= 599


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds to wait: delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if moment.tzinfo is None:
        return None
    return max(0.0, moment.timestamp() - (time.time() if now is None else now))


class RetryableReply(Exception):
    """A 429/5xx reply, raised inside the retry loop so it is retried; ``response`` is the reply
    itself when the caller wants it back after the last attempt."""

    def __init__(self, status: int, retry_after: float | None, response: Any = None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after
        self.response = response


def with_retries(policy: RetryPolicy, attempt: Callable[[], T]) -> T:
    """``attempt()``, run again while it raises ``RetryableReply``, at most ``policy.attempts``
    times; the last ``RetryableReply`` is raised."""
    import tenacity

    def wait(state: tenacity.RetryCallState) -> float:
        backoff = random.uniform(0, min(policy.max_wait_s, policy.initial_wait_s * 2 ** (state.attempt_number - 1)))
        error = state.outcome.exception() if state.outcome is not None else None
        asked = error.retry_after if isinstance(error, RetryableReply) and error.retry_after else 0.0
        return min(policy.max_wait_s, max(backoff, asked))

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(RetryableReply),
        stop=tenacity.stop_after_attempt(policy.attempts),
        wait=wait,
        sleep=policy.sleep,
        reraise=True,
    )
    return retrying(attempt)
