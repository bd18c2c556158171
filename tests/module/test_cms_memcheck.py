"""Count-Min Sketches with the server under valgrind's memcheck: RedisBloom's RDB of sketch keys
loaded, incremented, queried and merged with extreme arguments; damaged DUMP payloads (with
correct checksums) fed and the accepted ones used; the whole saved and loaded again. Memcheck
must see no invalid access."""

import shutil
from pathlib import Path

import redis

from test_cms import RECORDED, fuzz_payloads
from test_memcheck import EXTREME, Memcheck

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redisbloom" / "cms"


def test_sketches_under_memcheck(tmp_path):
    directory = tmp_path / "memcheck"
    directory.mkdir()
    shutil.copy(FIXTURES / "dump.rdb", directory / "dump.rdb")
    checked = Memcheck(directory)
    try:
        r = checked.server.client()
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
        fuzz_payloads(r, checked.server.port, 300, 11)
        r.execute_command("DEBUG", "RELOAD")
        assert checked.new_errors() is None, checked.new_errors()
    finally:
        alive = checked.server.alive()
        errors = checked.stop()
    assert alive, "redis-server died under memcheck:\n" + checked.server.log_tail()
    assert errors == 0, "memcheck counted %s errors:\n%s" % (
        errors, checked.log_path.read_text(errors="replace")[-6000:])
