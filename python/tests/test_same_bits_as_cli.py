"""The Python package and the redbloom CLI set the same bits for the same items, both ways,
in a file and in Redis."""

import subprocess

import pytest

import redbloom

ITEMS = ["https://example.com/%d" % i for i in range(2000)] + ["café", "naïve ✓"]


def run_cli(cli, *args, stdin=""):
    return subprocess.run([cli, *args], input=stdin.encode(), capture_output=True, check=False)


def cli_location(workdir, redis_server, where, name):
    if where == "file":
        path = str(workdir / (name + ".rbf"))
        return path, ["-f", path]
    return redis_server.url + "#" + name, ["--redis", redis_server.url, "--name", name]


@pytest.mark.parametrize("where", ["file", "redis"])
def test_cli_adds_python_finds(cli, workdir, redis_server, where):
    location, flags = cli_location(workdir, redis_server, where, "cli-made-" + where)
    made = run_cli(cli, "create", "-q", *flags, "-n", "1e4", "-p", "1e-4", "--layout", "blocked")
    assert made.returncode == 0, made.stderr
    added = run_cli(cli, "add", "-q", *flags, stdin="\n".join(ITEMS) + "\n")
    assert added.returncode == 0, added.stderr
    with redbloom.open(location) as f:
        assert f.layout == "blocked" and f.capacity == 10000
        assert all(f.contains_many(ITEMS))
        assert not any(f.contains_many(["absent-%d" % i for i in range(200)]))


@pytest.mark.parametrize("where", ["file", "redis"])
def test_python_adds_cli_finds(cli, workdir, redis_server, where):
    location, flags = cli_location(workdir, redis_server, where, "py-made-" + where)
    with redbloom.Filter.create(location, capacity=10000, error_rate=1e-4) as f:
        f.update(ITEMS)
    found = run_cli(cli, "exists", "-q", *flags, "-c", stdin="\n".join(ITEMS) + "\n")
    assert found.returncode == 0, found.stderr
    assert found.stdout.decode().strip() == str(len(ITEMS))
    absent = run_cli(cli, "exists", "-q", *flags, "-c",
                     stdin="\n".join("absent-%d" % i for i in range(200)) + "\n")
    assert absent.stdout.decode().strip() == "0"
