"""Top-K with the server under valgrind's memcheck: RedisBloom's RDB of Top-K keys loaded and
used by every command; damaged DUMP payloads (with correct checksums) fed and the accepted ones
used; the whole saved and loaded again. Memcheck must see no invalid access."""

import shutil
from pathlib import Path

from test_memcheck import Memcheck
from test_topk import fuzz_payloads, heavy_stream

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redisbloom" / "topk"


def test_topk_under_memcheck(tmp_path):
    directory = tmp_path / "memcheck"
    directory.mkdir()
    shutil.copy(FIXTURES / "dump.rdb", directory / "dump.rdb")
    checked = Memcheck(directory)
    try:
        r = checked.server.client()
        stream = heavy_stream(5, n=2000, distinct=100)
        for key in (k for k in r.keys("*") if r.type(k) == b"TopK-TYPE"):
            r.execute_command("TOPK.ADD", key, *stream)
            r.execute_command("TOPK.INCRBY", key, "item1", 500, "item2", -1)
            r.execute_command("TOPK.LIST", key, "WITHCOUNT")
            r.execute_command("TOPK.COUNT", key, *stream[:50])
        fuzz_payloads(r, checked.server.port, 11, values_per_byte=2)
        r.execute_command("DEBUG", "RELOAD")
        assert checked.new_errors() is None, checked.new_errors()
    finally:
        alive = checked.server.alive()
        errors = checked.stop()
    assert alive, "redis-server died under memcheck:\n" + checked.server.log_tail()
    assert errors == 0, "memcheck counted %s errors:\n%s" % (
        errors, checked.log_path.read_text(errors="replace")[-6000:])
