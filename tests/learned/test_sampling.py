"""edgebench.learned.sampling.best_of: the sampling decode's loop shared by both learned families
(the least score kept, ties to the earlier episode, a cut episode ends it, no episode after the
deadline)."""

from __future__ import annotations

import math
import time

from edgebench.learned.sampling import best_of


def test_the_least_score_is_kept_and_ties_keep_the_earlier():
    values = {1: 7.0, 2: 5.0, 3: 5.0, 4: math.inf}
    got = best_of("first", lambda e: 6.0 if e == "first" else values[e], lambda k: k, 4)
    assert (got.best, got.score, got.chosen, got.played) == (2, 5.0, 2, 4)
    assert got.scores == [6.0, 7.0, 5.0, 5.0, math.inf]
    tie = best_of("first", lambda e: 5.0, lambda k: k, 3)
    assert (tie.best, tie.chosen) == ("first", 0)


def test_a_cut_episode_ends_the_decode_and_a_passed_deadline_plays_none():
    played = []

    def play(k):
        played.append(k)
        return None if k == 3 else k

    got = best_of(10, float, play, 5)
    assert played == [1, 2, 3] and got.scores == [10.0, 1.0, 2.0] and got.best == 1
    none = best_of(10, float, lambda k: _never(), 5, deadline=time.perf_counter() - 1)
    assert (none.best, none.played, none.scores) == (10, 0, [10.0])
    assert best_of(10, float, play, 0).scores == [10.0]


def _never():
    raise AssertionError("an episode was played after the deadline")
