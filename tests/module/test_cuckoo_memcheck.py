"""Cuckoo filters with the server under valgrind's memcheck: RedisBloom's RDB of cuckoo keys
loaded and its filters grown, deleted from and compacted; damaged DUMP payloads (with correct
checksums) and damaged CF.LOADCHUNK headers and chunks fed, the accepted ones used; the whole
saved and loaded again. Memcheck must see no invalid access."""

import shutil
from pathlib import Path

import redis

from test_cuckoo import fuzz_payloads, maker
from test_memcheck import Memcheck

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redisbloom_cuckoo"


def test_cuckoo_filters_under_memcheck(tmp_path):
    directory = tmp_path / "memcheck"
    directory.mkdir()
    shutil.copy(FIXTURES / "dump.rdb", directory / "dump.rdb")
    checked = Memcheck(directory)
    try:
        r = checked.server.client()
        for key in maker.KEYS:
            for command in (("CF.INSERT", key, "ITEMS", *range(300)),
                            ("CF.MEXISTS", key, *range(300)), ("CF.DEL", key, 7),
                            ("CF.COMPACT", key), ("CF.SCANDUMP", key, 1)):
                try:
                    r.execute_command(*command)
                except redis.ResponseError:
                    pass
        fuzz_payloads(r, 600, 11)
        r.execute_command("DEBUG", "RELOAD")
        assert checked.new_errors() is None, checked.new_errors()
    finally:
        alive = checked.server.alive()
        errors = checked.stop()
    assert alive, "redis-server died under memcheck:\n" + checked.server.log_tail()
    assert errors == 0, "memcheck counted %s errors:\n%s" % (
        errors, checked.log_path.read_text(errors="replace")[-6000:])
