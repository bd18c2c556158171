"""dedup_records: the first record of each key, as `redbloom dedup --key-field/--json-key` prints
them, from Python."""

import itertools
import os

from ._errors import InvalidArgument
from ._redbloom import _DedupJournal

_ON_BAD = ("error", "skip", "pass")


def dedup_records(filter, records, key, *, on_bad_record="error", batch=4096, journal=None,
                  journal_max=64 << 20):
    """Yields, in order, each record whose key the filter did not hold, adding the keys.

    filter: a redbloom.Filter (or anything with add_many); records: an iterable of str or bytes
    (lines; a trailing line end is kept in what is yielded and ignored for the key); key: a
    redbloom.RecordKey. Records are taken `batch` at a time: a batch's keys are added, then its
    new records yielded, so a caller that stops iterating early leaves up to one batch added
    and not yielded.

    journal: a path (created if missing) that makes this loss-free, as `redbloom dedup
    --journal` (docs/cli.md): a batch counts as delivered once the caller asks for the record
    after its last one; a batch added and not delivered (the process killed, or the caller
    stopped early) is pending in the journal, and the next dedup_records with the same journal
    and filter yields its records again, the first time their keys come, though the filter
    holds them. The journal belongs to its filter (another filter is refused while it holds
    keys) and to one process at a time; journal_max: the bytes past which the filter is flushed
    and the journal started again. filter must then be a redbloom.Filter.

    A record without a key (too few fields, no such member, not valid JSON) is never an item:
    on_bad_record="error" raises InvalidArgument naming it (1-based) after yielding the new
    records before it, which alone are added; "skip" drops it; "pass" yields it unfiltered."""
    if on_bad_record not in _ON_BAD:
        raise InvalidArgument("on_bad_record is one of %s, not %r" % (", ".join(_ON_BAD),
                                                                     on_bad_record))
    if batch < 1:
        raise InvalidArgument("batch is at least 1, not %r" % (batch,))
    if journal is not None:
        journal = _DedupJournal(os.fspath(journal), journal_max)
        journal.recover(filter, batch)
    source = iter(records)
    done = 0  # records before this chunk
    while True:
        chunk = list(itertools.islice(source, batch))
        if not chunk:
            if journal is not None:
                journal.finish(filter)
            return
        keys = key.keys(chunk)
        stop = len(chunk)
        if on_bad_record == "error":
            stop = next((i for i, k in enumerate(keys) if k is None), len(chunk))
        items = [k for k in keys[:stop] if k is not None]
        if journal is not None:
            new = iter(journal.add_many(filter, items))
        else:
            new = iter(filter.add_many(items)) if items else iter(())
        for record, k in zip(chunk[:stop], keys[:stop]):
            if k is None:
                if on_bad_record == "pass":
                    yield record
            elif next(new):
                yield record
        if journal is not None:
            journal.done(filter)
        if stop < len(chunk):
            if journal is not None:
                journal.finish(filter)
            raise InvalidArgument(
                "record %d has no key: %s; the %d records before it were added (their new ones "
                "yielded); nothing after them was added. A record without the key is not an "
                "item: fix it, or pass on_bad_record='skip' (drop such records) or 'pass' "
                "(yield them unfiltered)" % (done + stop + 1, key.problem(chunk[stop]),
                                             done + stop))
        done += len(chunk)
