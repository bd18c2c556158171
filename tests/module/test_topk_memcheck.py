"""Top-K with the server under valgrind's memcheck: RedisBloom's RDB of Top-K keys loaded and
used by every command; damaged DUMP payloads (with correct checksums) fed and the accepted ones
used; the whole saved and loaded again. Memcheck must see no invalid access."""

from pathlib import Path

from test_memcheck import run_on_fixture_under_memcheck
from test_topk import fuzz_payloads, heavy_stream

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redisbloom" / "topk"


def test_topk_under_memcheck(tmp_path):
    def use(r, port):
        stream = heavy_stream(5, n=2000, distinct=100)
        for key in (k for k in r.keys("*") if r.type(k) == b"TopK-TYPE"):
            r.execute_command("TOPK.ADD", key, *stream)
            r.execute_command("TOPK.INCRBY", key, "item1", 500, "item2", -1)
            r.execute_command("TOPK.LIST", key, "WITHCOUNT")
            r.execute_command("TOPK.COUNT", key, *stream[:50])
        fuzz_payloads(r, port, 11, values_per_byte=2)

    run_on_fixture_under_memcheck(tmp_path, FIXTURES / "dump.rdb", use)
