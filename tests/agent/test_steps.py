"""Logic written once as steps: the sync driver and the async one give the same result,
raise I/O errors at the step's `yield`, and the async one makes a tuple of calls at the
same time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastcompact.agent.steps import Io, Steps, arun, run


def _io(sync_result: Any, async_result: Any = None, error: Exception | None = None) -> Io:
    def call() -> Any:
        if error is not None:
            raise error
        return sync_result

    async def acall() -> Any:
        if error is not None:
            raise error
        return sync_result if async_result is None else async_result

    return Io(call, acall)


def _retrying() -> Steps[list[Any]]:
    seen: list[Any] = []
    try:
        yield _io(None, error=KeyError("gone"))
    except KeyError as e:
        seen.append(f"caught {e}")
    seen.append((yield _io("one")))
    seen.extend((yield (_io("a"), _io("b"))))
    seen.append((yield Io.value(3)))
    seen.append((yield Io.in_thread(sum, [1, 2])))
    seen.append((yield Io.of(_nested)))
    return seen


def _nested() -> Steps[str]:
    got = yield _io("inner")
    return f"{got}!"


def test_both_drivers_give_the_same_result_and_raise_at_the_yield():
    expected = ["caught 'gone'", "one", "a", "b", 3, 3, "inner!"]
    assert run(_retrying()) == expected
    assert asyncio.run(arun(_retrying())) == expected


def test_an_uncaught_error_leaves_the_driver():
    def steps() -> Steps[None]:
        yield _io(None, error=ValueError("no"))

    with pytest.raises(ValueError, match="no"):
        run(steps())
    with pytest.raises(ValueError, match="no"):
        asyncio.run(arun(steps()))


def test_the_async_driver_makes_a_tuple_of_calls_at_the_same_time():
    async def main() -> tuple[Any, ...]:
        first, second = asyncio.Event(), asyncio.Event()

        async def left() -> str:
            first.set()
            await asyncio.wait_for(second.wait(), 5)
            return "left"

        async def right() -> str:
            second.set()
            await asyncio.wait_for(first.wait(), 5)
            return "right"

        def steps() -> Steps[tuple[Any, ...]]:
            # Each call waits for the other to start: made one after the other, the
            # first would time out.
            return (yield (Io(lambda: None, left), Io(lambda: None, right)))

        return await arun(steps())

    assert asyncio.run(main()) == ("left", "right")


def test_the_sync_driver_makes_a_tuple_of_calls_in_order():
    order: list[str] = []

    def note(name: str) -> Io:
        return Io.in_thread(lambda: order.append(name) or name)

    def steps() -> Steps[tuple[Any, ...]]:
        return (yield (note("summary"), note("reads"), note("archive")))

    assert run(steps()) == ("summary", "reads", "archive")
    assert order == ["summary", "reads", "archive"]
