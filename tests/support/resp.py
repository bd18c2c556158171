"""A minimal RESP2 client that keeps replies exactly as sent: an error's text with its prefix
(redis-py strips "ERR "), a status apart from a bulk string. Errors are returned, not raised."""

import socket


class Status(str):
    """A simple-string reply (+OK)."""

    def __eq__(self, other):
        return type(other) is Status and str.__eq__(self, other)

    __hash__ = str.__hash__

    def __repr__(self):
        return "Status(%s)" % str.__repr__(self)


class Error(str):
    """An error reply, its text exactly as after the '-'."""

    def __eq__(self, other):
        return type(other) is Error and str.__eq__(self, other)

    __hash__ = str.__hash__

    def __repr__(self):
        return "Error(%s)" % str.__repr__(self)


def _bytes(argument):
    if isinstance(argument, bytes):
        return argument
    if isinstance(argument, (int, float)):
        return repr(argument).encode()
    return str(argument).encode()


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for arg in map(_bytes, args):
        out += [b"$%d\r\n" % len(arg), arg, b"\r\n"]
    return b"".join(out)


class Resp:
    def __init__(self, port, host="127.0.0.1", timeout=60):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.file = self.sock.makefile("rb")

    def close(self):
        self.file.close()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __call__(self, *args):
        self.sock.sendall(encode(args))
        return self.read()

    def pipeline(self, commands):
        """Sends every command, then reads every reply, in order."""
        self.sock.sendall(b"".join(encode(c) for c in commands))
        return [self.read() for _ in commands]

    def _line(self):
        line = self.file.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("connection closed mid-reply")
        return line[:-2]

    def read(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return Status(rest.decode(errors="surrogateescape"))
        if kind == b"-":
            return Error(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            length = int(rest)
            if length < 0:
                return None
            data = self.file.read(length + 2)
            if len(data) != length + 2:
                raise ConnectionError("connection closed mid-reply")
            return data[:-2]
        if kind == b"*":
            length = int(rest)
            return None if length < 0 else [self.read() for _ in range(length)]
        raise ConnectionError("not a RESP2 reply: %r" % line[:80])
