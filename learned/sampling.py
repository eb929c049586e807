"""The sampling decode of a learned policy (both learned families): besides its first episode,
play more sampled episodes of the same policy and keep the one the referee scores best (the
"sampling" of Kool et al., ICLR 2019). Each family supplies how an episode is played (its
seeds: ``tapfinger`` seeds episode k by ``SeedSequence([seed, k])``, ``ces-ppo`` draws all from
one torch generator seeded by the solver seed) and how a referee scores it; the loop, its
deadline and its tie rule live here once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Decoded:
    """The kept episode (``best``), its ``score`` (lower is better), the score of every episode
    played (``scores``, the first episode first) and the index of the kept one in it (0: the first
    episode)."""

    best: Any
    score: float
    scores: list[float]
    chosen: int

    @property
    def played(self) -> int:
        """Sampled episodes played (the first episode not counted)."""
        return len(self.scores) - 1


def best_of(first: Any, score: Callable[[Any], float], play: Callable[[int], Any], samples: int, *,
            deadline: float | None = None) -> Decoded:
    """The first episode, then sampled episodes ``play(k)``, k = 1 .. ``samples``, each scored by
    ``score`` (lower is better; ``inf`` for an episode that is no schedule); the least is kept,
    ties keep the earlier episode. ``play`` returns None for an episode the deadline cut, which
    ends the decode (it is dropped); no episode starts once ``deadline`` (a ``time.perf_counter``
    value) has passed."""
    best, best_score = first, score(first)
    scores, chosen = [best_score], 0
    for k in range(1, samples + 1):
        if deadline is not None and time.perf_counter() > deadline:
            break
        episode = play(k)
        if episode is None:
            break
        s = score(episode)
        scores.append(s)
        if s < best_score:
            best, best_score, chosen = episode, s, k
    return Decoded(best, best_score, scores, chosen)
