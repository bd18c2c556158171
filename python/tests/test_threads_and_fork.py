"""One object shared by threads (the GIL released around batches, test-and-set still atomic),
and file and Redis filters used by forked children (Celery's prefork workers): of all writers
adding one item, exactly one is told it is new."""

import os
import random
import sys
import threading
import time

import numpy as np
import pytest

import redbloom

ITEMS = ["item-%d" % i for i in range(20000)]


def test_batches_let_other_threads_run(workdir):
    f = redbloom.open(str(workdir / "big.rbf"), capacity=4_000_000, error_rate=0.001)
    items = np.char.add(b"k", np.arange(4_000_000).astype("S12"))  # read in place: no gather
    old = sys.getswitchinterval()
    # Holding the GIL through the batch, the worker would keep the main thread from its next
    # tick for the whole interval, far past the batch.
    sys.setswitchinterval(30)
    try:
        worker = threading.Thread(target=f.update, args=(items,))
        ticks = 0
        worker.start()
        while worker.is_alive():
            time.sleep(0.001)
            ticks += 1
        worker.join()
    finally:
        sys.setswitchinterval(old)
    assert ticks >= 5
    assert all(f.contains_many(items[:1000]))


@pytest.mark.parametrize("where", ["memory", "file", "redis"])
def test_threads_sharing_one_filter_see_each_item_new_once(workdir, redis_server, where):
    location = {"memory": "memory:", "file": str(workdir / "t.rbf"),
                "redis": redis_server.url + "#threads"}[where]
    f = redbloom.Filter.create(location, capacity=100000, error_rate=1e-6, overwrite=True)
    news = [0] * len(ITEMS)
    lock = threading.Lock()

    def writer(seed):
        order = list(range(len(ITEMS)))
        random.Random(seed).shuffle(order)
        for start in range(0, len(order), 500):
            chunk = order[start:start + 500]
            if start % 1000 == 0:
                answers = f.add_many([ITEMS[i] for i in chunk])
            else:
                answers = [f.add(ITEMS[i]) for i in chunk]
            with lock:
                for i, new in zip(chunk, answers):
                    news[i] += new

    threads = [threading.Thread(target=writer, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert news == [1] * len(ITEMS)


def forked_writers(location, processes=4):
    """Each child adds every item, in one order (to race on the same items at once) or its
    own, one at a time or in batches, and writes its answers to a pipe."""
    f = redbloom.open(location)
    f.add("opened-in-the-parent")  # the parent's connection and lock exist before the fork
    children = []
    for seed in range(processes):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            code = 1
            try:
                order = list(range(len(ITEMS)))
                random.Random(seed // 2).shuffle(order)
                if seed % 2:
                    answers = f.add_many([ITEMS[i] for i in order])
                else:
                    answers = [f.add(ITEMS[i]) for i in order]
                flags = bytearray(len(ITEMS))
                for i, new in zip(order, answers):
                    flags[i] = new
                os.write(write_end, bytes(flags))
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        children.append((pid, read_end))
    totals = [0] * len(ITEMS)
    for pid, read_end in children:
        data = b""
        while len(data) < len(ITEMS):
            chunk = os.read(read_end, len(ITEMS))
            if not chunk:
                break
            data += chunk
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert len(data) == len(ITEMS)
        totals = [a + b for a, b in zip(totals, data)]
    assert "opened-in-the-parent" in f  # the parent's filter still works
    return totals


@pytest.mark.parametrize("where", ["file", "redis"])
def test_forked_writers_never_both_see_an_item_as_new(workdir, redis_server, where):
    location = {"file": str(workdir / "fork.rbf"), "redis": redis_server.url + "#fork"}[where]
    redbloom.Filter.create(location, capacity=100000, error_rate=1e-6, overwrite=True).close()
    for _ in range(3):
        totals = forked_writers(location)
        assert totals == [1] * len(ITEMS)
        redbloom.Filter.create(location, capacity=100000, error_rate=1e-6,
                               overwrite=True).close()
