"""Cuckoo filters with the server under valgrind's memcheck: RedisBloom's RDB of cuckoo keys
loaded and its filters grown, deleted from and compacted; damaged DUMP payloads (with correct
checksums) and damaged CF.LOADCHUNK headers and chunks fed, the accepted ones used; the whole
saved and loaded again. Memcheck must see no invalid access."""

from pathlib import Path

import redis

from test_cuckoo import fuzz_payloads, maker
from test_memcheck import run_on_fixture_under_memcheck

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redisbloom_cuckoo"


def test_cuckoo_filters_under_memcheck(tmp_path):
    def use(r, port):
        for key in maker.KEYS:
            for command in (("CF.INSERT", key, "ITEMS", *range(300)),
                            ("CF.MEXISTS", key, *range(300)), ("CF.DEL", key, 7),
                            ("CF.COMPACT", key), ("CF.SCANDUMP", key, 1)):
                try:
                    r.execute_command(*command)
                except redis.ResponseError:
                    pass
        fuzz_payloads(r, 600, 11)

    run_on_fixture_under_memcheck(tmp_path, FIXTURES / "dump.rdb", use)
