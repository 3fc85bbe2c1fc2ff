"""Drive an :class:`~miglab.mlperf.guest.sut.base.Engine` from LoadGen's callbacks.

* **Offline**: LoadGen issues one query with every sample; a dispatcher thread cuts it into
  batches of ``batch_size`` and submits them back to back (the engine blocks when all its
  buffers are in flight), a completion thread waits for each batch and reports it.
* **Server**: queries (usually one sample each) arrive at random times; a dynamic batcher thread
  sends what is waiting when the device is idle, when ``server_batch_size`` samples wait, or when
  the oldest sample has waited ``server_timeout_s`` and fewer than ``max_inflight`` batches are on
  the device. The timeout and the batch size are what keep the p99 latency under the bound.
* **Raw throughput**: the same submit/complete path at ``batch_size`` with LoadGen left out
  (:meth:`Runner.measure_raw`); the harness fidelity is LoadGen's throughput over this one.

The runner itself knows nothing of LoadGen: ``complete(ids, outputs)`` is called for every
finished batch (the reference backend turns it into ``QuerySamplesComplete``).
"""

from __future__ import annotations

import os
import queue
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable

import numpy as np

from miglab.mlperf.guest.sut.base import Engine

__all__ = ["Runner"]

Complete = Callable[[np.ndarray, "np.ndarray | None"], None]


def _hard_exit(exc: BaseException) -> None:
    """LoadGen waits for every sample forever: a SUT that failed mid-run must end the process."""
    import sys

    sys.stderr.write(f"error: SUT failed during the run: {type(exc).__name__}: {exc}\n")
    traceback.print_exception(exc, file=sys.stderr)
    sys.stderr.flush()
    os._exit(3)


class Runner:
    """Offline dispatcher, Server dynamic batcher and completion thread over one engine."""

    def __init__(
        self,
        engine: Engine,
        *,
        batch_size: int | None = None,
        server_batch_size: int | None = None,
        server_timeout_s: float = 0.002,
        max_inflight: int = 2,
    ):
        self.engine = engine
        self.batch_size = max(1, min(batch_size or engine.max_batch, engine.max_batch))
        self.server_batch_size = max(1, min(server_batch_size or self.batch_size, engine.max_batch))
        self.server_timeout_s = max(0.0, server_timeout_s)
        self.max_inflight = max(1, max_inflight)
        self._cond = threading.Condition()
        self._pending: deque = deque()  # Server: (id, index, arrival time)
        self._work: queue.Queue = queue.Queue()  # Offline: (ids, indices)
        self._done: queue.Queue = queue.Queue()  # (Pending, ids)
        self._inflight = 0
        self._stop = False
        self._threads: list[threading.Thread] = []
        self._complete: Complete | None = None
        self._on_error: Callable[[BaseException], None] = _hard_exit
        self.scenario: str | None = None
        self.error: BaseException | None = None
        self.reset_stats()

    # --- statistics --------------------------------------------------------------------------
    def reset_stats(self) -> None:
        self.samples = 0
        self.batches = 0
        self.padded = 0  # samples of padding the engine ran
        self.first_submit: float | None = None
        self.last_done: float | None = None

    def stats(self) -> dict:
        return {
            "batches": self.batches,
            "samples": self.samples,
            "mean_batch": (self.samples / self.batches) if self.batches else None,
        }

    # --- LoadGen's callbacks (ConstructFastSUT signature) --------------------------------------
    def issue(self, ids, indices) -> None:
        if self.scenario == "Offline":
            self._work.put((np.asarray(ids, dtype=np.uint64), np.asarray(indices, dtype=np.int64)))
            return
        now = time.perf_counter()
        with self._cond:
            self._pending.extend((i, x, now) for i, x in zip(ids, indices, strict=True))
            self._cond.notify_all()

    def flush(self) -> None:
        pass

    # --- threads -------------------------------------------------------------------------------
    def start(self, scenario: str, complete: Complete | None, on_error=None) -> None:
        if scenario not in ("Offline", "Server"):
            raise ValueError(f"unsupported scenario {scenario!r}")
        self.scenario = scenario
        self._complete = complete
        self._on_error = on_error or _hard_exit
        self._stop = False
        self.error = None
        self._work = queue.Queue()
        self._done = queue.Queue()
        self._pending.clear()
        self._inflight = 0
        self.reset_stats()
        target = self._offline_loop if scenario == "Offline" else self._server_loop
        self._threads = [
            threading.Thread(target=self._guard(self._completion_loop), daemon=True),
            threading.Thread(target=self._guard(target), daemon=True),
        ]
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        """Finish what was issued, then end the threads."""
        if not self._threads:
            return
        completion, dispatcher = self._threads
        if self.scenario == "Offline":
            self._work.put(None)
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        dispatcher.join()
        self._done.put(None)
        completion.join()
        self._threads = []

    def _guard(self, fn):
        def run():
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - reported, then the process decides
                self.error = exc
                self._on_error(exc)
                with self._cond:
                    self._stop = True
                    self._cond.notify_all()

        return run

    def _submit(self, ids: np.ndarray, idx: np.ndarray) -> None:
        if self.first_submit is None:
            self.first_submit = time.perf_counter()
        p = self.engine.submit(idx)
        with self._cond:
            self._inflight += 1
        self._done.put((p, ids))

    def _offline_loop(self) -> None:
        b = self.batch_size
        while True:
            item = self._work.get()
            if item is None or self.error is not None:
                return
            ids, idx = item
            for s in range(0, len(ids), b):
                self._submit(ids[s : s + b], idx[s : s + b])

    def _server_loop(self) -> None:
        b, timeout, cap = self.server_batch_size, self.server_timeout_s, self.max_inflight
        pending, cond = self._pending, self._cond
        while True:
            with cond:
                while True:
                    if self.error is not None or (self._stop and not pending):
                        return
                    n = len(pending)
                    if n and self._inflight < cap:
                        if n >= b or self._inflight == 0 or self._stop:
                            break
                        left = pending[0][2] + timeout - time.perf_counter()
                        if left <= 0:
                            break
                        cond.wait(left)
                    else:
                        cond.wait()
                k = min(len(pending), b)
                batch = [pending.popleft() for _ in range(k)]
            ids = np.fromiter((s[0] for s in batch), dtype=np.uint64, count=k)
            idx = np.fromiter((s[1] for s in batch), dtype=np.int64, count=k)
            self._submit(ids, idx)

    def _completion_loop(self) -> None:
        engine, complete, done = self.engine, self._complete, self._done
        while True:
            item = done.get()
            if item is None:
                return
            p, ids = item
            out = engine.wait(p)
            if complete is not None:
                complete(ids, out)
            engine.release(p)
            self.samples += len(ids)
            self.batches += 1
            self.last_done = time.perf_counter()
            with self._cond:
                self._inflight -= 1
                self._cond.notify_all()

    # --- without LoadGen -------------------------------------------------------------------------
    def measure_raw(self, seconds: float, warmup_s: float = 1.0) -> dict:
        """Samples/s of full batches through the same submit/complete path, LoadGen left out."""
        rng = np.random.default_rng(12345)
        n = self.engine.sample_count
        b = self.batch_size
        pool = [rng.integers(0, n, size=b, dtype=np.int64) for _ in range(16)]
        ids = np.arange(b, dtype=np.uint64)
        errors: list[BaseException] = []
        result = {}
        for phase, duration in (("warmup", warmup_s), ("measure", seconds)):
            if duration <= 0:
                continue
            self.start("Offline", None, on_error=errors.append)
            t_end = time.perf_counter() + duration
            k = 0
            while time.perf_counter() < t_end and not errors:
                self._submit(ids, pool[k % len(pool)])
                k += 1
            self.stop()
            if errors:
                raise RuntimeError(f"SUT failed while measuring its raw throughput: {errors[0]}")
            if phase == "measure":
                elapsed = (self.last_done or 0) - (self.first_submit or 0)
                result = {
                    "samples_per_second": self.samples / elapsed if elapsed > 0 else None,
                    "samples": self.samples,
                    "seconds": elapsed,
                    "batch_size": b,
                }
        self.scenario = None
        return result
