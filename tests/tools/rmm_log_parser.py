"""rmm_log_parser.py: reads a memory CSV by the rules of RMM's REPLAY_BENCH
(cpp/benchmarks/utilities/log_parser.hpp parse_csv, the rapidcsv 8.92 it
vendors, and replay.cpp's parse_per_thread_events), so that a test can tell
whether RMM's own tool takes a file mate wrote.

The rules, as RMM's code applies them:
- rapidcsv: ',' separates cells, '"' quotes them, '\\r' is dropped and
  '\\n' ends a row (quoted line breaks are off by default); a UTF-8 BOM
  is skipped; cells are not trimmed; a last empty line is skipped, an
  empty line elsewhere is a row of one empty cell. Row 0 names the
  columns (LabelParams(0, -1)); a column is found by name ("column not
  found: NAME" otherwise) and a row too short for it throws.
- Thread, Size and Stream are size_t / uintptr_t, which rapidcsv converts
  with std::stoul: base 10, leading blanks and a sign allowed, the rest of
  the cell after the digits ignored (so "0x7f00" reads as 0 and "7f00" as
  7), no digit at all throws std::invalid_argument.
- Pointer: "(nil)" is 0, else std::stoull(cell, nullptr, 16) (an optional
  0x, then hex digits, the rest ignored).
- Time is never read.
- Action must be exactly "allocate", "free" or "allocate failure", else
  RMM_EXPECTS fails with "Invalid action string.".
- Every stream must be the default (0 or cudaStreamLegacy, 1) or the
  per-thread default (2): "Non-default streams not currently supported.".
"""

ULONG_MAX = (1 << 64) - 1


class RmmError(Exception):
    """What RMM's parser throws; str() is its what()."""


def _strtoul(s, base):
    """std::stoul / std::stoull: C strtoul on the cell, errors thrown."""
    i, n = 0, len(s)
    while i < n and s[i] in " \t\n\v\f\r":
        i += 1
    neg = False
    if i < n and s[i] in "+-":
        neg = s[i] == "-"
        i += 1
    if base == 16 and s[i:i + 2].lower() == "0x" and i + 2 < n and s[i + 2] in "0123456789abcdefABCDEF":
        i += 2
    digits = "0123456789abcdef"[:base]
    v, start = 0, i
    while i < n and s[i].lower() in digits:
        v = v * base + digits.index(s[i].lower())
        i += 1
    if i == start:
        raise RmmError("stoul" if base == 10 else "stoull")
    if v > ULONG_MAX:
        raise RmmError("stoul" if base == 10 else "stoull")
    return (-v) & ULONG_MAX if neg else v


def _unquote(cell):
    if len(cell) >= 2 and cell[0] == '"' and cell[-1] == '"':
        return cell[1:-1].replace('""', '"')
    return cell


def rapidcsv_rows(data):
    """The rows rapidcsv's ParseCsv makes of the bytes of a file."""
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    text = data.decode("utf-8", "surrogateescape")
    rows, row, cell, quoted = [], [], "", False
    for ch in text:
        if ch == '"':
            if cell == "" or cell[0] == '"':
                quoted = not quoted
            cell += ch
        elif ch == "," and not quoted:
            row.append(_unquote(cell))
            cell = ""
        elif ch == ",":
            cell += ch
        elif ch == "\r":
            pass
        elif ch == "\n":
            row.append(_unquote(cell))
            rows.append(row)
            row, cell, quoted = [], "", False
        else:
            cell += ch
    if row or cell:
        row.append(_unquote(cell))
        rows.append(row)
    return rows


def _column(rows, names, name, conv):
    if name not in names:
        raise RmmError("column not found: " + name)
    idx = names[name]
    out = []
    for r in rows[1:]:
        if idx >= len(r):
            raise RmmError("requested column index %d >= %d" % (idx, len(r)))
        out.append(conv(r[idx]))
    return out


def parse_csv(data):
    """rmm::detail::parse_csv then parse_per_thread_events' stream check:
    a list of (thread, action, size, pointer, stream, index), or RmmError."""
    rows = rapidcsv_rows(data)
    names = {}
    if rows:
        for i, n in enumerate(rows[0]):
            names[n] = i
    tids = _column(rows, names, "Thread", lambda s: _strtoul(s, 10))
    actions = _column(rows, names, "Action", lambda s: s)
    pointers = _column(rows, names, "Pointer", lambda s: 0 if s == "(nil)" else _strtoul(s, 16))
    sizes = _column(rows, names, "Size", lambda s: _strtoul(s, 10))
    streams = _column(rows, names, "Stream", lambda s: _strtoul(s, 10))
    if not all(len(c) == len(sizes) for c in (tids, actions, pointers, streams)):
        raise RmmError("Size mismatch in columns of parsed log.")
    events = []
    for i, a in enumerate(actions):
        if a not in ("allocate", "allocate failure", "free"):
            raise RmmError("Invalid action string.")
        events.append((tids[i], a, sizes[i], pointers[i], streams[i], i))
    if not all(e[4] in (0, 1, 2) for e in events):
        raise RmmError("Non-default streams not currently supported.")
    return events
