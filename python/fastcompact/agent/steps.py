"""Logic written once for sync and async callers.

A step function is a generator: it yields the I/O it needs (an :class:`Io`, or a
tuple of them to make together) and receives each result, or has the call's
exception raised at the ``yield``. :func:`run` makes the calls in the caller's
thread; :func:`arun` awaits them, a tuple of them concurrently. So only the I/O call
itself has a sync and an async form.

Examples:
    >>> import asyncio
    >>> def doubled(n):
    ...     got = yield Io.value(n)
    ...     return got * 2
    >>> run(doubled(4)), asyncio.run(arun(doubled(4)))
    (8, 8)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Io:
    """One I/O call, as the sync driver makes it (``call``) and as the async one
    awaits it (``acall``)."""

    call: Callable[[], Any]
    acall: Callable[[], Awaitable[Any]]

    @staticmethod
    def value(result: Any) -> Io:
        """No call at all: ``result`` as it is."""

        async def ready() -> Any:
            return result

        return Io(lambda: result, ready)

    @staticmethod
    def of(make: Callable[[], Steps[Any]]) -> Io:
        """Whole steps as one call (so that several can be made together): ``make``
        gives a fresh generator each time."""
        return Io(lambda: run(make()), lambda: arun(make()))

    @staticmethod
    def either(fn: Callable[..., Any], *args: Any) -> Io:
        """A call that is sync or async as its caller's handler is: its result as it
        is (sync), or awaited (async)."""
        return Io(lambda: fn(*args), lambda: fn(*args))

    @staticmethod
    def in_thread(fn: Callable[..., Any], *args: Any) -> Io:
        """A blocking call: made directly by the sync driver, in a worker thread by the
        async one (so that the event loop keeps running)."""
        return Io(lambda: fn(*args), lambda: asyncio.to_thread(fn, *args))


Steps: TypeAlias = Generator["Io | tuple[Io, ...]", Any, T]


def run(steps: Steps[T]) -> T:
    """Run ``steps`` to their result, making each I/O call in this thread (a tuple of
    them one after another)."""
    result: Any = None
    error: BaseException | None = None
    while True:
        try:
            io = steps.send(result) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        result, error = None, None
        try:
            result = tuple(i.call() for i in io) if isinstance(io, tuple) else io.call()
        except Exception as e:
            error = e


async def arun(steps: Steps[T]) -> T:
    """Run ``steps`` to their result, awaiting each I/O call (a tuple of them at the
    same time)."""
    result: Any = None
    error: BaseException | None = None
    while True:
        try:
            io = steps.send(result) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        result, error = None, None
        try:
            if isinstance(io, tuple):
                result = tuple(await asyncio.gather(*(i.acall() for i in io)))
            else:
                result = await io.acall()
        except Exception as e:
            error = e
