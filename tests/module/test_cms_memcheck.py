"""Count-Min Sketches with the server under valgrind's memcheck: RedisBloom's RDB of sketch keys
loaded, incremented, queried and merged with extreme arguments; damaged DUMP payloads (with
correct checksums) fed and the accepted ones used; the whole saved and loaded again. Memcheck
must see no invalid access."""

from pathlib import Path

import redis

from test_cms import RECORDED, fuzz_payloads
from test_memcheck import EXTREME, run_on_fixture_under_memcheck

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redisbloom" / "cms"


def test_sketches_under_memcheck(tmp_path):
    def use(r, port):
        commands = []
        for key in RECORDED["dumps"]:
            commands += [("CMS.INCRBY", key, "a", value) for value in EXTREME]
            commands += [("CMS.MERGE", key, 2, key, "dim", "WEIGHTS", value, 1)
                         for value in EXTREME]
            commands += [("CMS.QUERY", key, "a", "", "x" * 300), ("CMS.INFO", key)]
        commands += [("CMS.INITBYDIM", "n%d" % i, value, 3) for i, value in enumerate(EXTREME)]
        commands += [("CMS.INITBYPROB", "p%d" % i, value, 0.5) for i, value in enumerate(
            EXTREME + [1e-300, 5e-324, "nan", "inf"])]
        commands += [("CMS.MERGE", "dim", value, "dim") for value in EXTREME]
        for command in commands:
            try:
                r.execute_command(*command)
            except redis.ResponseError:
                pass
        fuzz_payloads(r, port, 300, 11)

    run_on_fixture_under_memcheck(tmp_path, FIXTURES / "dump.rdb", use)
