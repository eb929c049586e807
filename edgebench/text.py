"""Text from data on its way to a terminal.

Labels, file names, solver names and certificate fields come from files other people wrote;
printed raw, a control character in them can clear the screen, move the cursor or forge a whole
``OK`` line (issue 44, case 12). :func:`printable` is the one escape every printer of data uses
(the error line of :class:`edgebench.errors.InputError`, ``adversary check``, ``merge`` and
``leaderboard``)."""

from __future__ import annotations

from typing import Any

#: the escapes Python's own ``repr`` uses for the common control characters
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    if ch in _SHORT:
        return _SHORT[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(value: Any) -> str:
    """``str(value)`` with every character that is not printable escaped the way ``repr``
    escapes it (``\\x1b``, ``\\n``, ``\\u202e``...): control characters (C0, DEL, C1, hence
    every ANSI escape sequence's introducer), line and paragraph separators, format characters
    (bidirectional overrides, zero-width characters) and unassigned code points. The result is
    one line that cannot change the terminal's state; printable text, the space included, is
    kept as it is."""
    text = value if isinstance(value, str) else str(value)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)
