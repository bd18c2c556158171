"""Sizing keywords follow the command line's rules (one set of rules in the library): rates as
numbers or text ("0.1%"), sizes as numbers or text ("2GiB"), the same refusals in the
keywords' spelling."""

import os
import subprocess

import pytest

import redbloom


def test_a_rate_as_text_sizes_as_the_number_does():
    with redbloom.open("memory:", capacity=5000, error_rate="0.1%") as text, \
            redbloom.open("memory:", capacity=5000, error_rate=0.001) as number:
        assert text.params == number.params


def test_max_bytes_takes_a_size_with_its_unit():
    with redbloom.open("memory:", capacity=1000, growth=2, max_bytes="1MiB") as f:
        assert f.info()["stream"]["max_bytes"] == 1 << 20


def test_a_rate_no_filter_reaches_is_refused_as_on_the_command_line():
    with pytest.raises(redbloom.InvalidArgument,
                       match=r"error_rate=1e-300 cannot be built: a filter uses at most 64 hashes"):
        redbloom.open("memory:", capacity=1000, error_rate=1e-300)


def test_options_that_need_a_window_say_so():
    with pytest.raises(redbloom.InvalidArgument, match="slices= belongs to a windowed filter"):
        redbloom.open("memory:", capacity=1000, growth=2, slices=4)
    with pytest.raises(redbloom.InvalidArgument, match="bits= sizes a plain filter by hand"):
        redbloom.open("memory:", bits=1 << 20, hashes=5, window="10m")


def test_the_same_request_gives_the_command_line_s_filter(workdir):
    cli = os.environ["REDBLOOM_CLI"]
    path = workdir / "cli.rbf"
    subprocess.run([cli, "create", "-q", "-f", str(path), "-n", "5000", "-p", "0.1%",
                    "--layout", "blocked"], check=True)
    with redbloom.open(str(path)) as made, \
            redbloom.open("memory:", capacity=5000, error_rate="0.1%", layout="blocked") as asked:
        assert made.params == asked.params
