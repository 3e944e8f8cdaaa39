"""realtime/keyed_lock.py: one holder per key at a time, in arrival order; other keys go on;
nothing is kept for a key nobody holds, whatever ends the holder (an error, a cancellation)."""

from __future__ import annotations

import asyncio

import pytest

from realtime.keyed_lock import KeyedLock


def test_holders_of_one_key_go_one_after_the_other_in_arrival_order_and_other_keys_go_on():
    locks = KeyedLock()
    log: list[str] = []

    async def work(key: str, name: str, gate: asyncio.Event):
        async with locks.held(key):
            log.append(f"{name} in")
            await gate.wait()
            log.append(f"{name} out")

    async def main():
        gates = {name: asyncio.Event() for name in ("a1", "a2", "a3", "b1")}
        tasks = [
            asyncio.create_task(work(key, name, gates[name]))
            for key, name in (("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"))
        ]
        await asyncio.sleep(0)  # every task has asked
        assert log == ["a1 in", "b1 in"] and len(locks) == 2
        gates["b1"].set()
        gates["a3"].set()  # ready first, but it waits its turn
        await asyncio.sleep(0)
        assert "a3 in" not in log
        gates["a1"].set()
        gates["a2"].set()
        await asyncio.gather(*tasks)

    asyncio.run(main())
    a = [line for line in log if line.startswith("a")]
    assert a == ["a1 in", "a1 out", "a2 in", "a2 out", "a3 in", "a3 out"]
    assert len(locks) == 0


def test_a_holder_that_fails_or_a_waiter_cancelled_leaves_the_key_free_and_nothing_kept():
    locks = KeyedLock()

    async def failing():
        async with locks.held("m"):
            await asyncio.sleep(0)
            raise ValueError("garbage")

    async def waiting(entered: list):
        async with locks.held("m"):
            entered.append(True)

    async def main():
        entered: list = []
        failed = asyncio.create_task(failing())
        cancelled = asyncio.create_task(waiting(entered))
        later = asyncio.create_task(waiting(entered))
        await asyncio.sleep(0)
        cancelled.cancel()
        with pytest.raises(ValueError):
            await failed
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        await later
        return entered

    assert asyncio.run(main()) == [True]  # only the one not cancelled got in
    assert len(locks) == 0


def test_ten_thousand_keys_held_once_each_leave_nothing_behind():
    locks = KeyedLock()

    async def main():
        async def once(key):
            async with locks.held(key):
                await asyncio.sleep(0)

        await asyncio.gather(*(once(key) for key in range(10_000)))

    asyncio.run(main())
    assert len(locks) == 0
