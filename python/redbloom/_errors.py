"""redbloom's errors: one class per C++ error, each also the built-in exception it means."""


class Error(Exception):
    """Base of every redbloom error."""


class InvalidArgument(Error, ValueError):
    """Bad parameters or input from the caller."""


class FilterExists(InvalidArgument):
    """A filter is where a new one was to be created, or it has other parameters."""


class NotFound(InvalidArgument, LookupError):
    """The named filter does not exist."""


class StorageError(Error, OSError):
    """The storage failed, or holds something that is not a usable filter."""


class FormatError(StorageError):
    """A stored filter that is truncated, corrupt, foreign or of an unknown version."""


class IncompleteFilter(FormatError):
    """A stored filter whose creation has not finished (or never will: its creator died)."""


class IncompleteWrite(StorageError):
    """A batch that stopped part-way: items [0, committed) of the call are in the filter;
    later ones may or may not be (the message says which). Adding them again is safe.
    `answers`: add_many's answers for those items (a list of bools), else None. When the batch
    was stopped by an error of the items or their iterator, that error is the __cause__."""

    def __init__(self, message, committed=0, answers=None):
        super().__init__(message)
        self.committed = committed
        self.answers = answers

    def __reduce__(self):
        return (type(self), (str(self), self.committed, self.answers))


class Interrupted(IncompleteWrite, KeyboardInterrupt):
    """Ctrl-C (a KeyboardInterrupt, its __cause__) stopped a batch after items [0, committed)
    were added; the rest were not. Also a KeyboardInterrupt, so that `except KeyboardInterrupt`
    still catches Ctrl-C."""


class CapacityExceeded(IncompleteWrite):
    """A windowed or growing filter needed a link past its max_bytes (or its other limits):
    items [0, committed) of the call were added, the rest not."""


class RedbloomWarning(UserWarning):
    """Something a user should know, e.g. a Redis server that may evict the filter's keys."""
