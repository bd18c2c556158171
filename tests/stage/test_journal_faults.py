"""dedup --journal where it meets trouble, as a user would: a write error on the journal after
a batch was committed (the file-size limit stands in for a full disk: both fail the write), a
journal used with another filter or with a filter made again at its place, zero bytes after the
last record, and journals that are not regular files."""

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from built_programs import redbloom_cli  # noqa: E402

KEYS = ["key-%04d" % i for i in range(100)]
INPUT = "".join(k + "\n" for k in KEYS)
BATCH_RECORD = 9 + 8 + sum(4 + len(k) for k in KEYS)  # the journal's record of the batch's keys


def run(args, text="", size_limit=None):
    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size_limit, size_limit))

    return subprocess.run([redbloom_cli()] + [str(a) for a in args], input=text.encode(),
                          capture_output=True, timeout=60,
                          preexec_fn=limited if size_limit else None)


def create(path):
    made = run(["create", "-f", path, "-n", "10000", "-p", "0.001"])
    assert made.returncode == 0, made.stderr


@pytest.fixture
def interrupted(tmp_path):
    """Filter f1.rbf and its journal, left by a run whose journal write failed after the
    commit of its only batch: the batch is in the filter, and nothing was printed."""
    f1, journal = tmp_path / "f1.rbf", tmp_path / "j"
    create(f1)
    first = run(["dedup", "-f", f1, "--journal", journal])  # no input: the journal names f1
    assert first.returncode == 0, first.stderr
    # Room for the batch's keys (synced before the commit) and not one byte more.
    limit = journal.stat().st_size + BATCH_RECORD
    failed = run(["dedup", "-f", f1, "--journal", journal, "--batch", len(KEYS)], INPUT, limit)
    return tmp_path, f1, journal, failed


def test_a_write_error_after_the_commit_says_the_batch_is_pending(interrupted):
    _, f1, journal, failed = interrupted
    message = failed.stderr.decode()
    assert failed.returncode == 3, message
    assert failed.stdout == b""
    assert "may be committed to the filter and was not printed" in message, message
    assert "the next run with it prints them" in message, message
    # As said: the next run with the journal prints the batch, though the filter holds it.
    rerun = run(["dedup", "-f", f1, "--journal", journal], INPUT)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.decode().split() == KEYS
    again = run(["dedup", "-f", f1, "--journal", journal], INPUT)
    assert again.stdout == b""


def test_a_journal_holding_keys_refuses_another_filter(interrupted):
    tmp_path, f1, journal, _ = interrupted
    f2 = tmp_path / "f2.rbf"
    create(f2)
    other = run(["dedup", "-f", f2, "--journal", journal], INPUT)
    message = other.stderr.decode()
    assert other.returncode == 2, message
    assert other.stdout == b""
    assert "belongs to the filter file " + str(f1) in message, message
    assert "name a new --journal file" in message, message
    # f2 was left as it was: a new filter would print every key.
    fresh = run(["dedup", "-f", f2], INPUT)
    assert fresh.stdout.decode().split() == KEYS

    # f1 deleted and made again at its place: newer than the journal's filter, refused.
    f1.unlink()
    create(f1)
    remade = run(["dedup", "-f", f1, "--journal", journal], INPUT)
    message = remade.stderr.decode()
    assert remade.returncode == 2, message
    assert "deleted and made again" in message, message


def test_a_journal_that_ended_cleanly_goes_with_a_new_filter(tmp_path):
    f1, f2, journal = tmp_path / "f1.rbf", tmp_path / "f2.rbf", tmp_path / "j"
    create(f1)
    assert run(["dedup", "-f", f1, "--journal", journal], INPUT).returncode == 0
    create(f2)
    second = run(["dedup", "-f", f2, "--journal", journal], INPUT)
    assert second.returncode == 0, second.stderr
    assert second.stdout.decode().split() == KEYS


def test_zero_bytes_after_the_last_record_are_a_torn_tail(interrupted):
    _, f1, journal, _ = interrupted
    with open(journal, "ab") as out:
        out.write(b"\0" * 4096)
    rerun = run(["dedup", "-f", f1, "--journal", journal], INPUT)
    assert rerun.returncode == 0, rerun.stderr
    assert "zero bytes" in rerun.stderr.decode()
    assert rerun.stdout.decode().split() == KEYS


@pytest.mark.parametrize("name", ["/dev/zero", "/dev/full", "/dev/null", "fifo", "dir"])
def test_anything_but_a_regular_file_is_refused(tmp_path, name):
    path = name
    if not name.startswith("/"):
        path = tmp_path / name
        os.mkfifo(path) if name == "fifo" else os.mkdir(path)
    refused = run(["dedup", "-f", tmp_path / "f.rbf", "--journal", path], INPUT)
    assert refused.returncode == 2, refused.stderr
    assert "is not a regular file" in refused.stderr.decode()
    assert not (tmp_path / "f.rbf").exists()
