"""A user whose ACL lets it only read keys (Redis 7's %R~pattern: a cache's front end that only
asks whether an id was seen) runs every read-only command of the module, and no command that
writes. Redis takes the keys of a module command as read and written unless the module says
otherwise, so without the module's key specs such a user could not even run BF.EXISTS."""

import redis

MODULE = ("bf.", "cf.", "cms.", "topk.", "tdigest.", "rb.")


def reader(server, r):
    r.execute_command("ACL", "SETUSER", "reader", "on", ">pw", "%R~*", "+@all")
    return server.client(username="reader", password="pw")


def key_flags(spec):
    fields = dict(zip(spec[::2], spec[1::2]))
    return {f.decode() if isinstance(f, bytes) else f for f in fields[b"flags"]}


def test_every_read_only_command_reads_its_keys_only(r):
    commands = {name: info for name, info in r.execute_command("COMMAND").items()
                if (name.decode() if isinstance(name, bytes) else name).startswith(MODULE)}
    checked = 0
    for name, info in commands.items():
        flags = {f.decode() if isinstance(f, bytes) else f for f in info["flags"]}
        if "readonly" not in flags or info["first_key_pos"] == 0:
            continue
        specs = info["key_specifications"]
        assert specs, name
        for spec in specs:
            assert key_flags(spec) == {"RO", "access"}, (name, spec)
        assert "movablekeys" not in flags, name  # clients still route by the first key
        checked += 1
    assert checked >= 30


def test_a_reader_looks_up_every_kind_and_writes_none(server, r):
    r.execute_command("BF.ADD", "bf", "a")
    r.execute_command("CF.ADD", "cf", "a")
    r.execute_command("CMS.INITBYDIM", "cms", 100, 4)
    r.execute_command("TOPK.RESERVE", "topk", 5)
    r.execute_command("TDIGEST.CREATE", "td")
    r.execute_command("TDIGEST.ADD", "td", 1.0, 2.0)
    user = reader(server, r)
    try:
        assert user.execute_command("BF.EXISTS", "bf", "a") == 1
        assert user.execute_command("BF.MEXISTS", "bf", "a", "b") == [1, 0]
        assert user.execute_command("CF.EXISTS", "cf", "a") == 1
        assert user.execute_command("CMS.QUERY", "cms", "a") == [0]
        assert user.execute_command("TOPK.QUERY", "topk", "a") == [0]
        assert float(user.execute_command("TDIGEST.MAX", "td")) == 2.0
        for write in (("BF.ADD", "bf", "b"), ("CF.ADD", "cf", "b"),
                      ("CMS.INCRBY", "cms", "a", 1), ("TOPK.ADD", "topk", "a"),
                      ("TDIGEST.ADD", "td", 3.0)):
            try:
                user.execute_command(*write)
            except redis.exceptions.NoPermissionError:
                continue
            raise AssertionError("%s ran for a user who may only read" % (write,))
    finally:
        user.close()


def keys_and_flags(raw, command, mode):
    reply = raw("COMMAND", "GETKEYSANDFLAGS", command, 2, "roster", "slice", mode, 0, 0, 0, 0,
                520, 1, 0, 1, 0, "blocked", 7, 4096, 100, "")
    return [(key, {str.__str__(f) for f in flags}) for key, flags in reply]


def test_stream_lookups_name_their_keys_read_only(raw):
    """RB.STREAM_RO names its keys through the module (their count is an argument)."""
    for command in ("RB.STREAM_RO", "RB.STREAMH_RO"):
        assert keys_and_flags(raw, command, "l") == [(b"roster", {"RO", "access"}),
                                                     (b"slice", {"RO", "access"})]
    assert all("RW" in flags for _, flags in keys_and_flags(raw, "RB.STREAM", "a"))
