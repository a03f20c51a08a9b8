"""The one way every bench times a call."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any


def time_call(fn: Callable[[], Any]) -> float:
    """Seconds `fn()` takes. As timeit does, no garbage collection runs inside the timed
    call, where it would be charged to whichever call happened to cross the threshold."""
    gc.disable()
    try:
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t
    finally:
        gc.enable()
