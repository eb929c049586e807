"""The command-line number types added for TapFinger's training options (session 16):
``nonneg_float`` (e.g. ``--bc-value-coef``) and ``fraction`` (``--bc-window-repair``) accept
their ranges and refuse the rest with one argparse message (the CLI turns it into one line and
exit 2)."""

from __future__ import annotations

import argparse

import pytest

from edgebench.argtypes import fraction, nonneg_float


@pytest.mark.parametrize("parse, text, want", [(nonneg_float, "0", 0.0), (nonneg_float, "2.5", 2.5),
                                               (nonneg_float, "1e3", 1000.0), (fraction, "0", 0.0),
                                               (fraction, "0.05", 0.05), (fraction, "1", 1.0)])
def test_accepted(parse, text, want):
    assert parse(text) == want


@pytest.mark.parametrize("parse, text, says", [(nonneg_float, "-1", "non-negative"), (nonneg_float, "inf", "non-negative"),
                                               (nonneg_float, "nan", "non-negative"), (nonneg_float, "x", "expected a number"),
                                               (fraction, "1.5", "from 0 to 1"), (fraction, "-0.1", "from 0 to 1"),
                                               (fraction, "nan", "from 0 to 1"), (fraction, "", "expected a number")])
def test_refused_with_one_message(parse, text, says):
    with pytest.raises(argparse.ArgumentTypeError, match=says):
        parse(text)


def test_the_cli_refuses_a_bad_value_with_exit_2(capsys):
    from edgebench.cli import main

    assert main(["train", "tapfinger", "--out", "o", "--bc-window-repair", "2"]) == 2
    err = capsys.readouterr().err
    assert "argument --bc-window-repair: must be from 0 to 1, got '2'" in err and "Traceback" not in err
