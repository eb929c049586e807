"""The suite's one input error.

Every problem with user input (a malformed file, a wrong field, a solution for another
instance) is raised as :class:`InputError`; the CLI turns it into one line on stderr
naming the file, the field path and the reason (escaped by :func:`edgebench.text.printable`:
a file name or a quoted value cannot write to the terminal), and exit code 2.
"""

from __future__ import annotations

from edgebench.text import printable


class InputError(ValueError):
    """Bad input: which file, which field (a dotted/indexed path), and why."""

    def __init__(self, reason: str, *, file: str | None = None, field: str | None = None):
        self.reason = reason
        self.file = file
        self.field = field
        super().__init__(self.line())

    def with_file(self, file: str) -> "InputError":
        return InputError(self.reason, file=file, field=self.field)

    def line(self) -> str:
        where = self.file or "<input>"
        field = self.field or "<root>"
        return printable(f"{where}: {field}: {self.reason}")  # names and reasons quote data (issue 44)

    def __str__(self) -> str:
        return self.line()
