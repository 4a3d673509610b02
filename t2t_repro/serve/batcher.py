"""A batching queue: concurrent requests are collected for a few milliseconds and run as one batch.

    queue = BatchingQueue(run_batch, max_batch_size=32, max_wait_seconds=0.005)
    future = queue.submit(["a sentence", "another"])   # from any thread
    results = future.result()                          # this request's share of the batch's results

`run_batch(items) -> list` gets the items of every request in the batch, concatenated in arrival order, and
returns one result per item. A worker thread waits for the first request, then keeps collecting until the
batch holds `max_batch_size` items or `max_wait_seconds` have passed since that first request; a request
that would overflow the batch waits for the next one (requests are never split). If `run_batch` raises,
every request of that batch gets the exception and the queue goes on with the next batch.
"""

import collections
import concurrent.futures
import threading
import time


class QueueClosed(RuntimeError):
    """Raised by `submit` once the queue is closed (the server is shutting down)."""


class BatchingQueue:
    """Collects requests from many threads into batches run by one worker thread.

    Args:
        run_batch: callable(list of items) -> list of results, one per item, in order.
        max_batch_size: most items in one batch; a single request may not hold more.
        max_wait_seconds: how long the first request of a batch waits for others to join it.
        name: the worker thread's name.
    """

    def __init__(self, run_batch, max_batch_size, max_wait_seconds, name="batcher"):
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size={max_batch_size}: must be at least 1")
        if max_wait_seconds < 0:
            raise ValueError(f"max_wait_seconds={max_wait_seconds}: must not be negative")
        self._run_batch = run_batch
        self.max_batch_size = max_batch_size
        self.max_wait_seconds = max_wait_seconds
        self._pending = collections.deque()  # (items, future)
        self._pending_items = 0
        self._condition = threading.Condition()
        self._closed = False
        self._stats = {"batches": 0, "requests": 0, "items": 0, "largest_batch_requests": 0, "failed_batches": 0}
        self._worker = threading.Thread(target=self._work, name=name, daemon=True)
        self._worker.start()

    def submit(self, items):
        """Queues one request's items (1 to max_batch_size of them); returns a Future of their results."""
        items = list(items)
        if not 1 <= len(items) <= self.max_batch_size:
            raise ValueError(f"a request must hold 1 to {self.max_batch_size} items, not {len(items)}")
        future = concurrent.futures.Future()
        with self._condition:
            if self._closed:
                raise QueueClosed("the batching queue is closed")
            self._pending.append((items, future))
            self._pending_items += len(items)
            self._condition.notify_all()
        return future

    def stats(self):
        """Counts so far: batches run, requests and items served, the most requests in one batch, failures."""
        with self._condition:
            return dict(self._stats)

    def close(self, timeout=None):
        """Stops accepting requests, runs those already queued, and joins the worker thread."""
        with self._condition:
            self._closed = True
            self._condition.notify_all()
        self._worker.join(timeout)

    def _next_batch(self):
        """Blocks until a batch is ready; returns its [(items, future)], or None once closed and drained."""
        with self._condition:
            while not self._pending and not self._closed:
                self._condition.wait()
            if not self._pending:
                return None
            deadline = time.monotonic() + self.max_wait_seconds
            while self._pending_items < self.max_batch_size and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._condition.wait(remaining)
            batch, size = [], 0
            while self._pending and size + len(self._pending[0][0]) <= self.max_batch_size:
                items, future = self._pending.popleft()
                batch.append((items, future))
                size += len(items)
            self._pending_items -= size
            return batch

    def _work(self):
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            requests = [(items, future) for items, future in batch if future.set_running_or_notify_cancel()]
            if requests:
                self._run(requests)

    def _run(self, requests):
        items = [item for request_items, _ in requests for item in request_items]
        failed = False
        try:
            results = list(self._run_batch(items))
            if len(results) != len(items):
                raise RuntimeError(f"the batch returned {len(results)} results for {len(items)} items")
        except Exception as error:  # noqa: BLE001 - a failing batch fails its requests, not the server
            failed = True
            for _, future in requests:
                future.set_exception(error)
        else:
            start = 0
            for request_items, future in requests:
                future.set_result(results[start : start + len(request_items)])
                start += len(request_items)
        with self._condition:
            self._stats["batches"] += 1
            self._stats["requests"] += len(requests)
            self._stats["items"] += len(items)
            self._stats["largest_batch_requests"] = max(self._stats["largest_batch_requests"], len(requests))
            self._stats["failed_batches"] += failed
