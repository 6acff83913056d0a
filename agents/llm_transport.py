"""The model back end's transport: one role's requests to its chat model as the wire
carries them. A request is sent (:meth:`Transport.send`), adapted and sent again when the
server names something it refuses (:mod:`fabula.agents.llm_server`), its transient
failures (429, 408, 409, 5xx, timeouts, lost connections) retried with exponential backoff
and jitter, honouring ``Retry-After`` (tenacity), all within ``timeout_s``; a reply out of
its bounds, a server that cannot be reached or does not know the model, and a body that is
not a chat completion each become :class:`~fabula.errors.ModelUnavailable` or
:class:`~fabula.errors.ModelOutputError`, with one line saying why."""

from __future__ import annotations

import asyncio
import email.utils
import re
import time
from typing import Any

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_before_delay,
    wait_exponential_jitter,
)

from fabula.agents.llm_server import NO_SYSTEM, OPTIONAL, UNPARSED, adapted
from fabula.agents.transport import (
    ReplyBound,
    ReplyTooLarge,
    ReplyTooSlow,
    deadline,
    reply_bound,
)
from fabula.agents.usage import record_retry
from fabula.errors import (
    ModelOutputError,
    ModelUnavailable,
)
from fabula.logs import get_logger
from fabula.settings import ModelSettings

log = get_logger(__name__)

_TRANSIENT_STATUS = frozenset({408, 409, 429})


class Transport:
    """How one role's requests reach its chat model: each one sent, adapted to what the
    server refuses, its transient failures retried with backoff within ``timeout_s``, its
    reply bounded, and every failure turned into Fabula's error (see :mod:`fabula.agents.llm`)."""

    def __init__(self, chat: BaseChatModel, *, role: str, settings: ModelSettings) -> None:
        self.chat = chat
        self.role = role
        self.max_retries = settings.max_retries
        self.retry_initial_s = settings.retry_initial_s
        self.retry_max_s = settings.retry_max_s
        self.timeout_s = settings.timeout_s
        # a server found unreachable after all its retries is asked once, not retried again,
        # until it answers: a dead URL costs one round of backoff, not one per call
        self.unreachable = False

    @property
    def model_name(self) -> str:
        return str(getattr(self.chat, "model_name", type(self.chat).__name__))

    @property
    def base_url(self) -> str:
        return str(getattr(self.chat, "openai_api_base", None) or "default")

    async def send(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        """One reply through :meth:`_request`, adapting to what the server refuses (see
        the module docstring) and asking again; any other 400 is raised to the caller."""
        for _ in range(len(OPTIONAL) + 3):
            try:
                return await self._request(messages, kwargs)
            except openai.APIStatusError as error:
                if not self._adapt(error):
                    raise
        return await self._request(messages, kwargs)

    def _adapt(self, error: openai.APIStatusError) -> bool:
        """Whether ``error`` named something this client can do without (and it now does)."""
        change = adapted(self.chat, error)
        if change is None:
            return False
        log.warning(
            "model_server_adapted",
            role=self.role,
            model=self.model_name,
            base_url=self.base_url,
            change=change,
            reason=getattr(error, "message", ""),
        )
        return True

    async def _request(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        """One reply, its transient failures retried, all within ``timeout_s`` (the
        deadline is checked by the event loop, and as each piece of the reply is read)."""
        attempts = 1 if self.unreachable else self.max_retries + 1
        retrying = AsyncRetrying(
            stop=stop_after_attempt(attempts) | stop_before_delay(self.timeout_s),
            wait=self._wait,
            retry=retry_if_exception(_transient),
            before_sleep=self._before_sleep,
            reraise=True,
        )
        try:
            with deadline(self.timeout_s) as until:
                async with asyncio.timeout_at(_loop_time(until)):
                    async for attempt in retrying:
                        with attempt:
                            reply = await self.chat.ainvoke(messages, **kwargs)
                            assert isinstance(reply, AIMessage)
                            self.unreachable = False
                            return reply
        except TimeoutError as error:
            raise self._too_slow(None) from error
        except ReplyBound as error:  # a streamed reply: raised as it was read
            raise self._out_of_bounds(error) from error
        except openai.APIConnectionError as error:  # includes timeouts
            bound = reply_bound(error)
            if bound is not None:  # an unstreamed reply: wrapped by the OpenAI client
                raise self._out_of_bounds(bound) from error
            self.unreachable = True
            raise self.unavailable(error, f"cannot reach the model {self.model_name!r}") from error
        except openai.APIStatusError as error:
            if error.status_code == 404 and "model" in str(error.message).lower():
                raise await self._unknown_model(error) from error
            if error.status_code == 400 or (
                error.status_code == 500
                and (
                    NO_SYSTEM.search(str(error.message).lower())
                    or UNPARSED.search(str(error.message))
                )
            ):
                raise  # the caller tells a schema problem, or what to adapt, from anything else
            raise self.unavailable(error) from error
        except Exception as error:
            if type(error).__module__.startswith("vcr."):  # a replay with no such request
                raise ModelUnavailable(
                    f"the model cassette holds no reply to this {self.role} request "
                    "(the run differs from the recorded one)",
                    role=self.role,
                ) from error
            # JSONDecodeError, or not a completion; or JSON nested past Python's parser
            # (a hostile server's body of 5,000 brackets was a RecursionError, exit 1)
            if isinstance(error, ValueError | RecursionError):
                raise ModelUnavailable(
                    f"the model server at {self.base_url} answered with a body that is not "
                    f"a chat completion: {_one_line(str(error))}",
                    role=self.role,
                    base_url=self.base_url,
                ) from error
            raise
        raise AssertionError("unreachable")

    def _out_of_bounds(self, bound: ReplyBound) -> ModelUnavailable | ModelOutputError:
        """The model error for a reply that passed a bound while it was read."""
        if isinstance(bound, ReplyTooSlow):
            return self._too_slow(bound.read)
        if isinstance(bound, ReplyTooLarge):
            log.warning("model_reply_too_large", role=self.role, max_bytes=bound.limit)
            return ModelOutputError(
                f"the {self.role}'s reply passed {bound.limit:,} bytes and was cut off "
                "(FABULA_MODEL_MAX_REPLY_BYTES)",
                role=self.role,
                base_url=self.base_url,
            )
        return ModelUnavailable(
            f"the model server at {self.base_url} answered with a body it could not be "
            f"read from: {bound}",
            role=self.role,
            base_url=self.base_url,
        )

    def _too_slow(self, read: int | None) -> ModelUnavailable:
        log.warning("model_reply_timeout", role=self.role, timeout_s=self.timeout_s, read=read)
        return ModelUnavailable(
            f"the model {self.model_name!r} did not finish its reply within "
            f"{self.timeout_s:g} s (FABULA_MODEL_TIMEOUT)",
            role=self.role,
            base_url=self.base_url,
        )

    async def _unknown_model(self, error: openai.APIStatusError) -> ModelUnavailable:
        """A 404 naming the model: the server does not serve it; say what it serves."""
        served = ""
        client = getattr(self.chat, "root_async_client", None)
        if client is not None:
            try:
                with deadline(self.timeout_s):
                    async with asyncio.timeout(self.timeout_s):
                        page = await client.models.list()
                names = sorted(m.id for m in page.data)
            except (openai.OpenAIError, ReplyBound, TimeoutError, ValueError, RecursionError):
                names = []
            if names:
                served = f" (it serves: {', '.join(names[:8])})"
        return ModelUnavailable(
            f"the server at {self.base_url} does not know the model {self.model_name!r}"
            f"{served}; set FABULA_MODEL to a model it serves",
            role=self.role,
            base_url=self.base_url,
        )

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        after = _retry_after(error)
        if after is not None:
            return min(after, max(self.retry_max_s, 0.0))
        backoff = wait_exponential_jitter(
            multiplier=self.retry_initial_s, max=self.retry_max_s, jitter=self.retry_initial_s
        )
        return float(backoff(state))

    def _before_sleep(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        record_retry(self.role)
        # a retry is progress, not news: the one line a user sees is the error, if any
        log.debug(
            "model_retry",
            role=self.role,
            model=self.model_name,
            attempt=state.attempt_number,
            max_retries=self.max_retries,
            wait_s=round(state.upcoming_sleep, 3),
            error=_describe(error),
        )

    def unavailable(
        self, error: openai.OpenAIError, message: str | None = None
    ) -> ModelUnavailable:
        if message is None:
            status = getattr(error, "status_code", None)
            detail = re.sub(r"^Error code: \d+ - ", "", str(getattr(error, "message", error)))
            message = f"the model {self.model_name!r} answered HTTP {status}: {detail}"
        else:
            message = f"{message}: {getattr(error, 'message', error)}"
        return ModelUnavailable(
            message, role=self.role, base_url=self.base_url, retries=self.max_retries
        )


def _transient(error: BaseException) -> bool:
    if isinstance(error, openai.APIConnectionError):
        return reply_bound(error) is None  # a reply out of bounds would be so again
    if isinstance(error, openai.APIStatusError):
        if NO_SYSTEM.search(str(error.message).lower()) or UNPARSED.search(str(error.message)):
            return False  # a template's refusal, a reply cut short: the same again
        return error.status_code in _TRANSIENT_STATUS or error.status_code >= 500
    return False


def _retry_after(error: BaseException | None) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms`` or ``retry-after``), if any."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    if headers.get("retry-after-ms"):
        try:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP date
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _describe(error: BaseException | None) -> str:
    if isinstance(error, openai.APIStatusError):
        return f"HTTP {error.status_code}"
    if isinstance(error, openai.APITimeoutError):
        return "timeout"
    if isinstance(error, openai.APIConnectionError):
        return "connection error"
    return type(error).__name__ if error is not None else ""


def _loop_time(monotonic: float) -> float:
    """A :func:`time.monotonic` instant on the running event loop's clock."""
    loop = asyncio.get_running_loop()
    return loop.time() + (monotonic - time.monotonic())


def _one_line(text: str, limit: int = 200) -> str:
    return " ".join(text.split())[:limit]
