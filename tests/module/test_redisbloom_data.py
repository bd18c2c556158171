"""redbloom.so as a drop-in for RedisBloom 2.4: started on RedisBloom's RDB file, its AOF, or fed
its SCANDUMP chunks, it answers every recorded command as RedisBloom did (present items,
absent items with their false positives, BF.INFO, BF.CARD), grows as it did, saves in its
encoding, and refuses damaged data without a crash. The fixtures and how they were made:
fixtures/redisbloom/README.md."""

import base64
import json
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from module_util import (data_from_fixtures, free_port, module_path, start_server, wait_until,
                         with_crc)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "redisbloom"
REPLIES = json.loads((FIXTURES / "replies.json").read_text())
DUMPS = json.loads((FIXTURES / "scandump.json").read_text())
KEYS = REPLIES["keys"]
DEBUG = ("--enable-debug-command", "yes")
BATCH = 200  # the fixtures' BF.MADD batch: a full non-scaling filter ends a batch's array


def key_items(key, count, prefix=""):
    return [("%s%s:%d" % (prefix, key, i)).encode() for i in range(count)]


def plain(value):
    return value.decode() if isinstance(value, bytes) else value


def answers(r, key, items):
    return "".join(str(int(x)) for x in r.execute_command("BF.MEXISTS", key, *items))


def observe(r, key, present, absent_count, name=None):
    """What the fixtures recorded of a filter, asked of `name` (the key by default)."""
    name = name or key
    return {
        "present": answers(r, name, present),
        "absent": answers(r, name, key_items(key, absent_count, "absent:")),
        "exists_first": int(r.execute_command("BF.EXISTS", name, present[0])),
        "info": [plain(x) for x in r.execute_command("BF.INFO", name)],
        "card": r.execute_command("BF.CARD", name),
        "info_fields": {f: r.execute_command("BF.INFO", name, f)[0]
                        for f in ("CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION")},
    }


def compare(r, phase, added_more=False, names=None):
    """Every recorded reply of `phase` against the server's; returns (same, differences)."""
    same, differences = 0, []
    for key in KEYS:
        present = key_items(key, REPLIES["plan"][key])
        if added_more:
            present += key_items(key, REPLIES["more_count"], "more:")
        got = observe(r, key, present, REPLIES["absent_count"], names and names[key])
        want = REPLIES[phase][key]
        for field, expected in want.items():
            if got[field] == expected:
                same += 1
            else:
                differences.append((key, field))
    return same, differences


def madd_replies(r, key, items):
    out = []
    for i in range(0, len(items), BATCH):
        for x in r.execute_command("BF.MADD", key, *items[i:i + BATCH]):
            out.append("E:" + str(x) if isinstance(x, Exception) else int(x))
    return out


def recorded_pieces(key):
    return [(it, base64.b64decode(data)) for it, data in DUMPS[key]]


def server_on(tmp_path, *options, files=("dump.rdb",), module_args=()):
    directory = data_from_fixtures(FIXTURES, tmp_path, files)
    return start_server(directory, *module_args, options=DEBUG + options)


def test_rdb_of_redisbloom_answers_as_redisbloom(tmp_path):
    server = server_on(tmp_path)
    r = server.client()
    for key in KEYS:
        assert r.type(key) == b"MBbloom--"
    same, differences = compare(r, "initial")
    assert differences == []
    assert same == 6 * len(KEYS)
    server.kill()


def test_adds_grow_as_redisbloom_and_survive_save_and_aof_rewrite(tmp_path):
    server = server_on(tmp_path, "--aof-use-rdb-preamble", "no")
    r = server.client()
    for key in KEYS:
        more = key_items(key, REPLIES["more_count"], "more:")
        assert madd_replies(r, key, more) == REPLIES["more_replies"][key], key
    assert compare(r, "after_more", True)[1] == []
    # Saved in RedisBloom's encoding by this module, loaded again by it.
    r.save()
    server.restart()
    r = server.client()
    assert compare(r, "after_more", True)[1] == []
    # The AOF rewrite is BF.LOADCHUNK commands, as RedisBloom's.
    r.config_set("appendonly", "yes")
    wait_until(lambda: r.info("persistence")["aof_rewrite_in_progress"] == 0
               and r.info("persistence")["aof_rewrite_scheduled"] == 0
               and r.info("persistence")["aof_enabled"] == 1, "the AOF rewrite")
    base = [f for f in (server.directory / "appendonlydir").iterdir() if ".base." in f.name]
    assert len(base) == 1 and b"BF.LOADCHUNK" in base[0].read_bytes()
    r.execute_command("DEBUG", "LOADAOF")
    assert compare(r, "after_more", True)[1] == []
    server.kill()


def test_aof_of_redisbloom_replays(tmp_path):
    server = server_on(tmp_path, "--appendonly", "yes", "--aof-use-rdb-preamble", "no",
                       files=("appendonlydir",))
    r = server.client()
    same, differences = compare(r, "after_more", True)
    assert differences == []
    assert same == 6 * len(KEYS)
    server.kill()


def test_scandump_is_redisbloom_s_and_loadchunk_takes_it(tmp_path):
    server = server_on(tmp_path)
    r = server.client()
    names = {}
    for key in KEYS:
        pieces, iterator = [], 0
        for _ in range(100):
            iterator, data = r.execute_command("BF.SCANDUMP", key, iterator)
            if iterator == 0:
                break
            pieces.append((iterator, data))
        assert pieces == recorded_pieces(key), key
        names[key] = "copy:" + key
        for iterator, data in recorded_pieces(key):
            assert r.execute_command("BF.LOADCHUNK", names[key], iterator, data) == b"OK"
        assert r.type(names[key]) == b"MBbloom--"
    same, differences = compare(r, "initial", names=names)
    assert differences == []
    assert same == 6 * len(KEYS)
    server.kill()


def test_reserve_and_refusals_on_redisbloom_filters(tmp_path):
    server = server_on(tmp_path)
    r = server.client()
    with pytest.raises(Exception, match="^item exists$"):
        r.execute_command("BF.RESERVE", "scaling", 0.01, 100)
    reply = r.execute_command("BF.MADD", "nonscaling", "new one", "another")
    assert isinstance(reply[0], Exception) and str(reply[0]) == "non scaling filter is full"
    assert len(reply) == 1
    # New filters stay redbloom's own.
    assert r.execute_command("BF.ADD", "fresh", "x") == 1
    assert r.type("fresh") == b"redbloomF"
    server.kill()


def test_the_memory_limit_holds_for_redisbloom_filters(tmp_path):
    server = server_on(tmp_path, module_args=("MAX_FILTER_BYTES", "4k"))
    r = server.client()
    info = dict(zip(*[iter(r.execute_command("BF.INFO", "scaling"))] * 2))
    assert info[b"Number of filters"] == 4
    reply = r.execute_command("BF.MADD", "scaling", *key_items("scaling", 200, "more:"))
    assert str(reply[-1]).startswith("filter cannot grow: it would pass the module's memory limit")
    assert all(x in (0, 1) for x in reply[:-1])
    info = dict(zip(*[iter(r.execute_command("BF.INFO", "scaling"))] * 2))
    assert info[b"Number of filters"] == 4
    # A header asking for more than the limit is refused before anything is allocated.
    header = recorded_pieces("exp4")[0][1]
    with pytest.raises(Exception, match="memory limit"):
        r.execute_command("BF.LOADCHUNK", "big", 1, header)
    assert r.exists("big") == 0
    server.kill()


def unsigned_field_end(payload, at):
    """The end of a module value's unsigned field at `at`: its opcode (2), then the number in
    Redis's length encoding (6 or 14 bits, or a 32- or 64-bit marker and big-endian bytes)."""
    assert payload[at] == 2
    first = payload[at + 1]
    if first >> 6 in (0, 1):
        return at + 2 + (first >> 6)
    return at + 2 + {0x80: 4, 0x81: 8}[first]


def older_encoding(payload, encver):
    """RedisBloom's DUMP payload at an older encoding: below 4 without the expansion, below 2
    without the options too; the module id's low 10 bits carry the encoding."""
    assert payload[0] == 7 and payload[1] == 0x81
    module_id = struct.unpack(">Q", payload[2:10])[0]
    at = 10
    ends = [at]
    for _ in range(4):  # items, sub-filters, options, expansion
        ends.append(unsigned_field_end(payload, ends[-1]))
    fields = payload[ends[0]:ends[2]]
    if encver >= 2:
        fields += payload[ends[2]:ends[3]]
    body = (payload[:2] + struct.pack(">Q", (module_id & ~1023) | encver) + fields
            + payload[ends[4]:-10])
    return with_crc(body + payload[-10:-8])


@pytest.mark.parametrize("key,encver", [("scaling", 3), ("scaling", 2), ("auto", 3),
                                        ("hash32", 3), ("hash32", 2), ("hash32", 1),
                                        ("old", 2), ("old", 1)])
def test_older_rdb_encodings_answer_the_same(tmp_path, key, encver):
    """RedisBloom's older encodings saved no expansion (below 4: it is 2) and no options (below
    2: 32-bit hashes, sub-filters rounded up to powers of two): such a value loads and answers
    as the filter it was. Only filters whose options and expansion those encodings imply are
    compared."""
    server = server_on(tmp_path)
    r = server.client()
    r.restore("older", 0, older_encoding(r.dump(key), encver))
    assert r.type("older") == b"MBbloom--"
    present = key_items(key, REPLIES["plan"][key])
    assert observe(r, key, present, REPLIES["absent_count"], "older") == REPLIES["initial"][key]
    server.kill()


def no_crash(server, r):
    assert server.alive(), server.log_tail()
    assert r.ping()


def test_damaged_headers_are_refused(tmp_path):
    server = server_on(tmp_path)
    r = server.client()
    rng = random.Random(7)
    header = recorded_pieces("exp1")[0][1]
    cut = [header[:n] for n in range(0, len(header), 7)] + [header + b"\0"]
    trials = list(cut)
    for _ in range(300):
        damaged = bytearray(header)
        for _ in range(rng.randint(1, 3)):
            damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
        trials.append(bytes(damaged))
    refused = 0
    for damaged in trials:
        r.delete("d")
        try:
            r.execute_command("BF.LOADCHUNK", "d", 1, damaged)
        except Exception as e:  # noqa: BLE001 - a refusal is an error reply
            assert str(e) in ("received bad data",
                              "filter bits over the module's memory limit per filter")
            refused += damaged in cut
            continue
        # Accepted: a sound shape (a flipped bit in an item count or an error rate's last
        # digits); every command works on it.
        r.execute_command("BF.MEXISTS", "d", "a", "b")
        r.execute_command("BF.MADD", "d", "a", "b")
        r.execute_command("BF.INFO", "d")
    no_crash(server, r)
    assert refused == len(cut)
    server.kill()


def test_damaged_dump_payloads_are_refused(tmp_path):
    server = server_on(tmp_path)
    r = server.client()
    payload = r.dump("exp1")
    body = payload[:-10]
    version = payload[-10:-8]
    rng = random.Random(11)
    cut = [body[:n] for n in range(1, len(body), max(1, len(body) // 60))]
    trials = list(cut)
    for _ in range(300):
        damaged = bytearray(body)
        at = rng.randrange(10, len(damaged))  # past the type and the module's id
        damaged[at] ^= 1 << rng.randrange(8)
        trials.append(bytes(damaged))
    refused = 0
    for damaged in trials:
        try:
            r.restore("d", 0, with_crc(damaged + version), replace=True)
        except Exception as e:  # noqa: BLE001
            assert "Bad data format" in str(e)
            refused += damaged in cut
            continue
        r.execute_command("BF.MEXISTS", "d", "a", "b")
        r.execute_command("BF.MADD", "d", "a", "b")
        r.execute_command("BF.INFO", "d")
    no_crash(server, r)
    assert refused == len(cut)
    server.kill()


def start_on_file(directory, data):
    """Starts redis-server on `data` as its RDB file, the checksum unchecked so that damage
    reaches the module's loader. The process once it has loaded, or the log when it exited."""
    directory.mkdir()
    (directory / "dump.rdb").write_bytes(data)
    log = directory / "redis.log"
    process = subprocess.Popen(
        ["redis-server", "--port", str(free_port()), "--bind", "127.0.0.1", "--save", "",
         "--dir", str(directory), "--rdbchecksum", "no", "--logfile", str(log),
         "--loadmodule", module_path()])
    wait_until(lambda: process.poll() is not None
               or (log.exists() and "Ready to accept" in log.read_text(errors="replace")),
               "redis-server to load or refuse the file")
    if process.poll() is not None:
        text = log.read_text(errors="replace")
        assert "crashed by signal" not in text and "BUG REPORT" not in text, text[-3000:]
        # Redis then runs its RDB checker, which exits 0 on what it can parse: the exit
        # itself is the refusal.
        assert "Ready to accept" not in text
        return text
    return process


@pytest.mark.parametrize("damage", ["truncated", "flipped"])
def test_damaged_rdb_file_fails_the_start_without_a_crash(tmp_path, damage):
    data = (FIXTURES / "dump.rdb").read_bytes()
    rng = random.Random(5)
    refusals = by_module = 0
    for trial in range(12):
        damaged = bytearray(data[:-8])
        if damage == "truncated":
            damaged = damaged[:rng.randrange(64, len(damaged))]
        else:
            for _ in range(4):
                damaged[rng.randrange(64, len(damaged))] ^= 1 << rng.randrange(8)
        process = start_on_file(tmp_path / ("t%d" % trial), bytes(damaged) + b"\0" * 8)
        if isinstance(process, str):
            refusals += 1
            by_module += "redbloom: RedisBloom" in process
            continue
        process.kill()
        process.wait()
    assert refusals > 0
    if damage == "flipped":
        assert by_module > 0  # some damage reached the module's checks, not only Redis's


def resp_commands(data):
    """The commands of an AOF file (RESP arrays of bulk strings), in order."""
    commands, at = [], 0
    while at < len(data):
        assert data[at:at + 1] == b"*", "not a RESP array at byte %d" % at
        end = data.index(b"\r\n", at)
        count, at = int(data[at + 1:end]), end + 2
        command = []
        for _ in range(count):
            end = data.index(b"\r\n", at)
            length = int(data[at + 1:end])
            command.append(data[end + 2:end + 2 + length])
            at = end + 2 + length + 2
        commands.append(command)
    return commands


def test_saved_values_are_byte_for_byte_redisbloom_s(tmp_path):
    """What this module writes of an unchanged filter is what RedisBloom wrote: its DUMP
    payload (the RDB encoding of the value) is in RedisBloom's dump.rdb, and its AOF rewrite
    is RedisBloom's rewrite, so RedisBloom can be started on either again."""
    rdb = (FIXTURES / "dump.rdb").read_bytes()
    server = server_on(tmp_path, "--aof-use-rdb-preamble", "no")
    r = server.client()
    for key in KEYS:
        payload = r.dump(key)
        assert payload[0] == 7  # a module value, encoded with per-field opcodes
        assert bytes([7]) + bytes([len(key)]) + key.encode() + payload[1:-10] in rdb, key
    r.config_set("appendonly", "yes")
    wait_until(lambda: r.info("persistence")["aof_rewrite_in_progress"] == 0
               and r.info("persistence")["aof_rewrite_scheduled"] == 0
               and r.info("persistence")["aof_enabled"] == 1, "the AOF rewrite")

    def base_of(directory):
        (base,) = [f for f in directory.iterdir() if ".base." in f.name]
        return sorted(c for c in resp_commands(base.read_bytes()) if c[0] != b"SELECT")

    ours = base_of(server.directory / "appendonlydir")
    assert ours == base_of(FIXTURES / "appendonlydir")
    assert len(ours) > 2 * len(KEYS)
    server.kill()


def test_redisbloom_data_under_memcheck(tmp_path):
    """RedisBloom's RDB loaded, its filters grown, damaged headers and DUMP payloads fed, and
    the whole saved and loaded again, with the server under valgrind's memcheck."""
    from test_memcheck import Memcheck

    directory = tmp_path / "memcheck"
    directory.mkdir()
    shutil.copy(FIXTURES / "dump.rdb", directory / "dump.rdb")
    checked = Memcheck(directory)
    r = checked.server.client()
    rng = random.Random(3)
    for key in KEYS:
        r.execute_command("BF.MADD", key, *key_items(key, 100, "more:"))
        r.execute_command("BF.MEXISTS", key, *key_items(key, 100, "absent:"))
    header = recorded_pieces("exp1")[0][1]
    payload = r.dump("exp1")
    for trial in range(60):
        damaged = bytearray(header[:rng.randrange(1, len(header))] if trial % 2 else header)
        damaged[rng.randrange(len(damaged))] ^= 1 << rng.randrange(8)
        r.delete("d")
        try:
            r.execute_command("BF.LOADCHUNK", "d", 1, bytes(damaged))
            r.execute_command("BF.MADD", "d", "a", "b")
        except Exception:  # noqa: BLE001 - a refusal is an error reply
            pass
        body = bytearray(payload[:-10])
        body[rng.randrange(10, len(body))] ^= 1 << rng.randrange(8)
        try:
            r.restore("d", 0, with_crc(bytes(body) + payload[-10:-8]), replace=True)
            r.execute_command("BF.MADD", "d", "a", "b")
        except Exception:  # noqa: BLE001
            pass
        report = checked.new_errors()
        assert report is None, report
    r.execute_command("DEBUG", "RELOAD")
    for key in KEYS:
        r.execute_command("BF.INFO", key)
    alive = checked.server.alive()
    errors = checked.stop()
    assert alive, checked.server.log_tail()
    assert "Memcheck" in checked.log_path.read_text(errors="replace")
    assert errors == 0, checked.log_path.read_text(errors="replace")[-6000:]
