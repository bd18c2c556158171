#!/usr/bin/python3
"""Runs RedisBloom's flow tests (tests/flow/test_*.py of a RedisBloom source tree) against a
module, through a small stand-in for the parts of the RLTest `Env` API those tests use.

    scripts/redisbloom-flow-tests.py TESTS_DIR MODULE [--module-arg NAME VALUE]...
        [--file test_cuckoo.py]... [--test NAME]... [--redis-server PATH] [--verbose]

TESTS_DIR is RedisBloom's tests/flow directory; MODULE the .so to load (redbloom.so, or
RedisBloom's own to compare). The script starts its own redis-server on a free loopback port
in a temporary directory, runs each test (a class's test_* methods, or a module-level
test_*(env) function), prints one line per test (PASS, FAIL with the failed checks, SKIP) and a
closing "N passed, N failed, N skipped" line. Exit status: 0 when nothing failed.

A tool for checks by hand: RedisBloom's tests are not part of this repository.
"""

import argparse
import contextlib
import importlib.util
import inspect
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import types

import redis
from redis import ResponseError


class SkipTest(Exception):
    pass


class Server:
    """One redis-server with the module, restartable on its own data directory."""

    def __init__(self, binary, module, module_args):
        self.binary = binary
        self.module = os.path.abspath(module)
        self.module_args = list(module_args)
        self.dir = tempfile.mkdtemp(prefix="redisbloom-flow-")
        self.port = None
        self.proc = None
        self.log = os.path.join(self.dir, "redis.log")

    def start(self):
        if self.port is None:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
                "--save", "", "--appendonly", "no", "--enable-debug-command", "yes",
                "--logfile", self.log, "--loadmodule", self.module, *self.module_args]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                redis.Redis(port=self.port, socket_timeout=2).ping()
                return
            except redis.ConnectionError:
                if self.proc.poll() is not None:
                    break
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start; see " + self.log)

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def restart_keeping_data(self):
        redis.Redis(port=self.port).save()
        self.stop()
        self.start()

    def client(self, decode):
        return redis.Redis(host="127.0.0.1", port=self.port, decode_responses=decode)

    def remove(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class Query:
    """RLTest's `env.expect(...)`: runs the command at once, then checks its result."""

    def __init__(self, env, args):
        self.env = env
        self.error_raised = None
        self.res = None
        try:
            self.res = env.cmd(*args)
        except Exception as e:  # the checks below tell whether an error was expected
            self.error_raised = e

    def _check(self, ok, what):
        self.env._record(ok, what)
        return self

    def error(self):
        return self._check(self.error_raised is not None,
                           "expected an error, got %r" % (self.res,))

    raiseError = error

    def noError(self):
        return self._check(self.error_raised is None, "unexpected error %r" % self.error_raised)

    notRaiseError = noError

    def _value(self):
        return str(self.error_raised) if self.error_raised is not None else self.res

    def contains(self, val):
        v = self._value()
        return self._check(v is not None and val in v, "%r not in %r" % (val, v))

    def notContains(self, val):
        v = self._value()
        return self._check(v is None or val not in v, "%r in %r" % (val, v))

    def equal(self, expected):
        return self._check(self._value() == expected, "%r != %r" % (self._value(), expected))

    def ok(self):
        return self.equal("OK" if self.env.decode else b"OK")

    def true(self):
        return self._check(bool(self._value()), "%r is not true" % (self._value(),))

    def apply(self, fn):
        self.res = fn(self.res)
        return self


class Env:
    """The parts of RLTest's Env that RedisBloom's flow tests use, on one standalone server.
    Failed checks are recorded, not raised, as RLTest does: the test goes on."""

    server = None    # the Server every Env of a run shares
    failures = None  # the current test's failed checks

    def __init__(self, decodeResponses=False, **_ignored):
        self.decode = decodeResponses
        self.conn = Env.server.client(decodeResponses)

    # commands
    def cmd(self, *args, **kwargs):
        return self.conn.execute_command(*args, **kwargs)

    execute_command = cmd

    def getConnection(self, shardId=1):
        return Env.server.client(self.decode)

    getClusterConnectionIfNeeded = getConnection

    def expect(self, *args):
        return Query(self, args)

    def flush(self):
        self.conn.flushall()

    # persistence
    def dumpAndReload(self, restart=False, shardId=None, timeout_sec=40):
        if restart:
            self.restartAndReload()
        else:
            self.conn.execute_command("DEBUG", "RELOAD")

    def restartAndReload(self, shardId=None, timeout_sec=40):
        Env.server.restart_keeping_data()
        self.conn = Env.server.client(self.decode)

    def retry_with_rdb_reload(self):
        """RLTest's generator: the body runs before and after a DEBUG RELOAD."""
        yield 1
        self.dumpAndReload()
        yield 2

    # environment questions
    def isCluster(self):
        return False

    def is_cluster(self):
        return False

    def skip(self):
        raise SkipTest()

    def skipOnCluster(self):
        pass

    def skipOnSlave(self):
        pass

    def skipOnAOF(self):
        pass

    def skipOnVersionSmaller(self, wanted):
        have = self.conn.info("server")["redis_version"]
        if tuple(map(int, str(have).split(".")[:3])) < tuple(map(int, wanted.split("."))):
            raise SkipTest()

    # checks
    def _record(self, ok, what):
        if not ok:
            frame = inspect.stack()[2]
            Env.failures.append("%s:%d: %s" % (os.path.basename(frame.filename), frame.lineno,
                                               what))
        return ok

    def assertOk(self, x, message=None):
        return self._record(x in ("OK", b"OK", True), message or "%r is not OK" % (x,))

    def assertTrue(self, x, message=None):
        return self._record(bool(x), message or "%r is not true" % (x,))

    def assertFalse(self, x, message=None):
        return self._record(not x, message or "%r is not false" % (x,))

    def assertEqual(self, a, b, message=None, depth=0):
        return self._record(a == b, message or "%r != %r" % (a, b))

    def assertNotEqual(self, a, b, message=None, depth=0):
        return self._record(a != b, message or "%r == %r" % (a, b))

    def assertGreater(self, a, b, message=None):
        return self._record(a > b, message or "%r <= %r" % (a, b))

    def assertGreaterEqual(self, a, b, message=None):
        return self._record(a >= b, message or "%r < %r" % (a, b))

    def assertLess(self, a, b, message=None):
        return self._record(a < b, message or "%r >= %r" % (a, b))

    def assertLessEqual(self, a, b, message=None):
        return self._record(a <= b, message or "%r > %r" % (a, b))

    def assertAlmostEqual(self, a, b, delta, message=None):
        return self._record(abs(a - b) <= delta, message or "|%r - %r| > %r" % (a, b, delta))

    def assertContains(self, a, b, message=None):
        return self._record(a in b, message or "%r not in %r" % (a, b))

    def assertNotContains(self, a, b, message=None):
        return self._record(a not in b, message or "%r in %r" % (a, b))

    def assertIsNone(self, x, message=None):
        return self._record(x is None, message or "%r is not None" % (x,))

    def assertIsNotNone(self, x, message=None):
        return self._record(x is not None, message or "value is None")

    def assertRaises(self, exception, func, *args, **kwargs):
        try:
            func(*args, **kwargs)
        except exception:
            return True
        return self._record(False, "%s not raised by %r" % (exception.__name__, args))

    def assertResponseError(self, response=None, contained=None, message=None):
        if response is not None:
            ok = isinstance(response, ResponseError) and (contained is None or
                                                          contained in str(response))
            return self._record(ok, message or "%r is not an error with %r" % (response,
                                                                                contained))
        return self._expect_error(contained)

    @contextlib.contextmanager
    def _expect_error(self, contained):
        try:
            yield
        except ResponseError as e:
            self._record(contained is None or contained in str(e),
                         "%r not in %r" % (contained, str(e)))
            return
        Env.failures.append("no ResponseError raised")


def install_stand_ins():
    """RLTest, and what RedisBloom's common.py imports beside it (its build tree's paella)."""
    rltest = types.ModuleType("RLTest")
    rltest.Env = Env
    rltest.Defaults = types.SimpleNamespace(decode_responses=False)
    sys.modules["RLTest"] = rltest
    paella = types.ModuleType("paella")
    paella.Platform = lambda: types.SimpleNamespace(osnick="debian", os="linux", arch="x64")
    sys.modules["paella"] = paella
    try:
        import packaging.version  # noqa: F401
    except ImportError:
        packaging = types.ModuleType("packaging")
        version = types.ModuleType("packaging.version")

        class Version(tuple):
            def __new__(cls, text):
                parts = [int(p) if p.isdigit() else 0 for p in str(text).split(".")[:3]]
                return super().__new__(cls, parts + [0] * (3 - len(parts)))

        version.Version = Version
        version.parse = Version
        packaging.version = version
        sys.modules["packaging"] = packaging
        sys.modules["packaging.version"] = version


def collect(path):
    """(name, callable) for every test of one file, in the file's order."""
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    tests = []
    members = [m for m in vars(mod).items() if getattr(m[1], "__module__", None) == name]
    for member_name, member in members:
        if inspect.isclass(member):
            instance = []  # made at the class's first test, as RLTest does
            methods = [(n, f) for n, f in vars(member).items()
                       if n.startswith("test") and callable(f)]
            for method_name, _ in methods:
                def run(cls=member, m=method_name, inst=instance):
                    if not inst:
                        inst.append(cls())
                    getattr(inst[0], m)()
                tests.append(("%s::%s::%s" % (name, member_name, method_name), run))
        elif inspect.isfunction(member) and member_name.startswith("test"):
            def run(f=member):
                if inspect.signature(f).parameters:
                    f(Env())
                else:
                    f()
            tests.append(("%s::%s" % (name, member_name), run))
    return tests


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests_dir")
    parser.add_argument("module")
    parser.add_argument("--module-arg", nargs=2, action="append", default=[],
                        metavar=("NAME", "VALUE"))
    parser.add_argument("--file", action="append", help="a test file (default: all test_*.py)")
    parser.add_argument("--test", action="append", help="run only tests whose name ends so")
    parser.add_argument("--redis-server", default=shutil.which("redis-server"))
    parser.add_argument("--verbose", action="store_true", help="tracebacks of errors")
    args = parser.parse_args()

    install_stand_ins()
    sys.path.insert(0, os.path.abspath(args.tests_dir))
    files = args.file or sorted(f for f in os.listdir(args.tests_dir)
                                if f.startswith("test_") and f.endswith(".py"))
    module_args = [word for pair in args.module_arg for word in pair]
    Env.server = Server(args.redis_server, args.module, module_args)
    Env.server.start()
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    try:
        for f in files:
            for name, run in collect(os.path.join(args.tests_dir, f)):
                if args.test and not any(name.endswith(t) for t in args.test):
                    continue
                if Env.server.proc.poll() is not None:  # a test stopped the server
                    Env.server.start()
                Env.failures = []
                status = "PASS"
                try:
                    run()
                except SkipTest:
                    status = "SKIP"
                except Exception as e:  # a test's error is its failure, the run goes on
                    Env.failures.append("%s: %s" % (type(e).__name__, e))
                    if args.verbose:
                        Env.failures.append(traceback.format_exc())
                if Env.failures and status != "SKIP":
                    status = "FAIL"
                counts[status] += 1
                print("%s %s" % (status, name), flush=True)
                for failure in Env.failures[:5] if status == "FAIL" else []:
                    print("    " + failure[:500], flush=True)
    finally:
        Env.server.remove()
    print("%d passed, %d failed, %d skipped" % (counts["PASS"], counts["FAIL"], counts["SKIP"]))
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
