"""The server's core loader: made once on its own thread, waited for, stopped even while it
is being made. The core here is a stand-in with the one thing the loader touches (its
session's ``stop``); the server's own tests use the real one."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, cast

import pytest

from jupyter_dw.server.core_loader import CoreLoader


class Session:
    def __init__(self) -> None:
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


class Core:
    def __init__(self) -> None:
        self.session = Session()


class Maker:
    """Makes a core when released; counts the calls and the threads they ran on."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0
        self.threads: list[str] = []
        self.made: list[Core] = []

    def __call__(self) -> Any:
        self.calls += 1
        self.threads.append(threading.current_thread().name)
        assert self.release.wait(10)
        core = Core()
        self.made.append(core)
        return cast(Any, core)


def test_the_core_is_made_once_on_its_own_thread_and_waited_for():
    maker = Maker()
    loader = CoreLoader(maker)
    assert loader.made is None
    loader.start()
    loader.start()
    assert loader.made is None  # still being made: nobody waits on it

    async def wait() -> Any:
        waiting = asyncio.ensure_future(loader.ready())
        await asyncio.sleep(0)  # let it start waiting before the core exists
        assert not waiting.done()
        maker.release.set()
        return await waiting

    core = asyncio.run(wait())
    assert core is maker.made[0] and loader.get() is core and loader.made is core
    assert maker.calls == 1 and maker.threads == ["jupyter-dw-core"]


def test_stop_waits_for_a_core_being_made_and_stops_its_session():
    maker = Maker()
    loader = CoreLoader(maker)
    loader.start()
    stopping = threading.Thread(target=loader.stop)
    stopping.start()
    maker.release.set()
    stopping.join(10)
    assert not stopping.is_alive()
    assert maker.made[0].session.stopped


def test_a_loader_stopped_before_it_started_makes_nothing():
    maker = Maker()
    loader = CoreLoader(maker)
    loader.stop()
    loader.start()
    with pytest.raises(RuntimeError, match="stopped"):
        loader.get()
    assert maker.calls == 0


def test_a_failed_make_reaches_every_waiter():
    def fail() -> Any:
        raise ValueError("bad settings")

    loader = CoreLoader(fail)
    with pytest.raises(ValueError, match="bad settings"):
        loader.get()
    with pytest.raises(ValueError, match="bad settings"):
        asyncio.run(loader.ready())
    assert loader.made is None
    loader.stop()  # nothing was made: nothing to stop
