"""redbloom.RecordKey and redbloom.dedup_records: the keys and first records the CLI's
--key-field/--csv/--json-key give, from Python."""

import json
import subprocess

import pytest

import redbloom

EVENTS = [
    '{"ts": 1, "event": {"id": "caf\\u00e9"}, "retry": 0}',
    '{"ts": 2, "event": {"id": "café"}, "retry": 1}',  # the same key, decoded
    '{"ts": 3, "event": {"id": 7}}',
    '{"ts": 4, "event": {"id": "7"}}',  # a string, not the number
    '{"ts": 5, "event": {"id": 7.0}}',  # the number 7 again
    '{"ts": 6, "event": {"id": "evt-\\"q\\""}}',
]


def test_json_keys_are_typed_and_decoded():
    key = redbloom.RecordKey(json_key="event.id")
    assert key.keys(EVENTS) == [
        b"scaf\xc3\xa9", b"scaf\xc3\xa9", b"n7", b"s7", b"n7", b'sevt-"q"']
    assert key.key(EVENTS[0] + "\n") == key.key(EVENTS[0].encode() + b"\r\n")
    assert repr(key) == "RecordKey(json_key='event.id')"


def test_records_without_key_give_none_and_say_why():
    key = redbloom.RecordKey(json_key="event.id")
    assert key.keys(['{"event": {}}', "not json", '{"event": {"id": null}}']) == [None] * 3
    assert key.problem('{"event": {}}') == "no member event.id"
    assert key.problem("not json").startswith("not valid JSON")
    assert key.problem(EVENTS[0]) is None


def test_csv_and_delimited_fields():
    csv = redbloom.RecordKey(3, delimiter=",", csv=True)
    assert csv.keys(['a,b,"x,y",z\r\n', 'a,b,"say ""hi"""', "a,b", b"1,2,3"]) == [
        b"x,y", b'say "hi"', None, b"3"]
    assert csv.problem("a,b") == "no field 3 (the line has 2)"
    tab = redbloom.RecordKey(2)
    assert tab.key("a\tb\tc") == b"b"
    assert repr(tab) == "RecordKey(field=2, delimiter='\\t')"


@pytest.mark.parametrize("kwargs", [
    {},
    {"field": 1, "json_key": "id"},
    {"field": 0},
    {"field": 1, "delimiter": "ab"},
    {"json_key": "id", "csv": True},
    {"json_key": "event..id"},
    {"field": 1, "delimiter": '"', "csv": True},
])
def test_bad_specs_are_refused(kwargs):
    with pytest.raises(redbloom.InvalidArgument):
        redbloom.RecordKey(**kwargs)


def test_keys_take_bytes_str_and_buffers():
    key = redbloom.RecordKey(2, delimiter=",")
    records = ["a,b", b"c,d", bytearray(b"e,f"), memoryview(b"g,h")]
    assert key.keys(records) == [b"b", b"d", b"f", b"h"]
    with pytest.raises(TypeError):
        key.keys([1])


def test_dedup_records_yields_first_records_in_order(tmp_path):
    key = redbloom.RecordKey(json_key="event.id")
    with redbloom.open(str(tmp_path / "e.rbf"), capacity=1000, error_rate=1e-6) as seen:
        first = list(redbloom.dedup_records(seen, EVENTS, key, batch=2))
        assert first == [EVENTS[0], EVENTS[2], EVENTS[3], EVENTS[5]]
        assert list(redbloom.dedup_records(seen, EVENTS, key)) == []


def test_dedup_records_bad_record_handling(tmp_path):
    key = redbloom.RecordKey(json_key="id")
    lines = ['{"id": 1}', '{"id": 1}', '{"id": 2}', "oops", '{"id": 3}']
    with redbloom.open(str(tmp_path / "a.rbf"), capacity=1000, error_rate=1e-6) as seen:
        got = []
        with pytest.raises(redbloom.InvalidArgument, match=r"record 4 has no key: not valid "
                           r"JSON .*the 3 records before it were added"):
            for record in redbloom.dedup_records(seen, lines, key, batch=3):
                got.append(record)
        assert got == ['{"id": 1}', '{"id": 2}']
        assert key.key('{"id": 3}') not in seen  # nothing after the bad record
    with redbloom.open(str(tmp_path / "b.rbf"), capacity=1000, error_rate=1e-6) as seen:
        assert list(redbloom.dedup_records(seen, lines, key, on_bad_record="skip")) == [
            '{"id": 1}', '{"id": 2}', '{"id": 3}']
    with redbloom.open(str(tmp_path / "c.rbf"), capacity=1000, error_rate=1e-6) as seen:
        assert list(redbloom.dedup_records(seen, lines, key, on_bad_record="pass")) == [
            '{"id": 1}', '{"id": 2}', "oops", '{"id": 3}']
        with pytest.raises(redbloom.InvalidArgument):
            list(redbloom.dedup_records(seen, lines, key, on_bad_record="ignore"))


def test_same_keys_and_records_as_the_cli(cli, workdir):
    records = []
    for i in range(3000):
        records.append(json.dumps({"ts": i, "event": {"id": "evt-%d" % (i % 1700)}}))
    records.append(json.dumps({"event": {"id": "caf\u00e9"}}, ensure_ascii=True))
    records.append(json.dumps({"event": {"id": "café"}}, ensure_ascii=False))
    (workdir / "events.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    made = subprocess.run([cli, "dedup", "-q", "-f", "cli.rbf", "-n", "1e4", "-p", "1e-6",
                           "--json-key", "event.id", "events.jsonl"],
                          capture_output=True, check=False)
    assert made.returncode == 0, made.stderr
    key = redbloom.RecordKey(json_key="event.id")
    with redbloom.open("py.rbf", capacity=10_000, error_rate=1e-6) as seen:
        ours = list(redbloom.dedup_records(seen, (workdir / "events.jsonl").open(encoding="utf-8"),
                                           key))
    assert "".join(ours).encode() == made.stdout
    with redbloom.open("cli.rbf") as theirs:
        assert all(k in theirs for k in key.keys(records))
        assert key.key('{"event": {"id": "never-seen"}}') not in theirs


LINES = ["%d,key-%d\n" % (i, i % 150) for i in range(200)]  # keys 0-149, then 50 repeats


def test_a_journal_yields_again_a_batch_added_and_not_delivered(tmp_path):
    key = redbloom.RecordKey(2, delimiter=",")
    journal = tmp_path / "dedup.journal"
    with redbloom.open(str(tmp_path / "seen.rbf"), capacity=10_000, error_rate=1e-6) as seen:
        first = redbloom.dedup_records(seen, LINES, key, batch=64, journal=journal)
        taken = [next(first) for _ in range(70)]  # all of batch 1, part of batch 2
        first.close()  # the caller stopped (or died): batch 2 was added, 6 of it delivered
        # Without the journal the rest of batch 2 would be lost: the filter holds its keys.
        assert seen.contains_many([key.key(l) for l in LINES[64:128]]) == [True] * 64
        rest = list(redbloom.dedup_records(seen, LINES, key, batch=64, journal=journal))
    # The rerun yields batch 2 whole again (its 6 delivered records twice: at most one batch
    # more than once), and every first record after it once.
    assert rest == LINES[64:150]
    assert sorted(set(taken + rest)) == sorted(LINES[:150])


def test_a_journal_holding_keys_refuses_another_filter(tmp_path):
    key = redbloom.RecordKey(2, delimiter=",")
    journal = tmp_path / "dedup.journal"
    with redbloom.open(str(tmp_path / "one.rbf"), capacity=10_000, error_rate=1e-6) as one:
        run = redbloom.dedup_records(one, LINES, key, batch=64, journal=journal)
        next(run)
        run.close()
    with redbloom.open(str(tmp_path / "two.rbf"), capacity=10_000, error_rate=1e-6) as two:
        with pytest.raises(redbloom.InvalidArgument, match="belongs to the filter"):
            list(redbloom.dedup_records(two, LINES, key, journal=journal))
        assert two.contains_many([key.key(l) for l in LINES[:64]]) == [False] * 64
