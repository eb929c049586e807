"""The adversarial search: simulated annealing over the instances of one family that
maximises how much worse a target solver does than a reference solver.

``search(config, out)`` starts from a generated instance of the configured size, proposes
neighbours with :func:`edgebench.adversary.moves.propose`, scores each by running both solvers
and re-scoring both solutions with the referee, and accepts by the Metropolis rule on the log
of the badness (``T/R`` for min, ``R/T`` for max) under a geometric cooling schedule. It is

* seeded: one ``numpy`` generator drives every move and acceptance; with an evaluation budget
  (``evals``) and deterministic solvers the same seed gives the same search;
* anytime: every improvement of the best is written at once, with its certificate
  (``improvements/NNNN/``, and ``best``, a link to the newest), so a search stopped at any
  moment has its result;
* resumable: ``state.json`` (configuration, RNG state, current instance and score, best,
  counters, elapsed time) is rewritten atomically after every evaluation; ``resume=True``
  continues from it.

Method, moves and how to read the certificate: ``docs/adversary.md``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from edgebench import registry
from edgebench.adversary import certificate
from edgebench.adversary.moves import propose
from edgebench.errors import InputError
from edgebench.instances import io
from edgebench.instances.generators import generate
from edgebench.instances.manifest import confined
from edgebench.instances.model import FAMILIES, Instance
from edgebench.referee import SENSE, evaluate
from edgebench.text import printable

STATE_VERSION = 1
#: the preset each family's search starts from by default, and the parameter that sizes it
DEFAULT_PRESET = {"placement": "synthetic-3", "offloading": "heft-random", "mapping": "thesis"}
SIZE_PARAM = {"placement": "num_tasks", "offloading": "tasks", "mapping": "nodes"}
#: the configuration fields a resumed search may change
BUDGET = ("evals", "seconds")
#: start seeds tried (start_seed, start_seed + 1, ...) until both solvers solve the start
START_TRIES = 20


@dataclass(frozen=True)
class Contender:
    """One side of the comparison: a registered / plugin / ``MODULE:FUNCTION`` solver or an
    external ``command`` (run through :mod:`edgebench.external`)."""

    label: str
    solver: str
    params: dict[str, Any] = field(default_factory=dict)
    time_limit: float | None = None

    def run(self, instance: Instance, seed: int):
        """(solution, referee value or None when infeasible / failed)."""
        try:
            res = registry.solve(instance, self.solver, time_limit=self.time_limit, seed=seed, **self.params)
        except InputError:
            raise
        except Exception as exc:  # a solver that crashes on an instance: that instance is skipped
            return None, f"{type(exc).__name__}: {exc}"
        ev = evaluate(instance, res.solution)
        if not ev.feasible:
            return res.solution, None
        return res.solution, float(ev.objectives[ev.primary])

    def proves(self) -> bool:
        return self.solver != _external() and registry.get(self.solver).proves


def _external() -> str:
    from edgebench.external import SOLVER

    return SOLVER


def contender(family: str, *, solver: str | None = None, command: str | None = None,
              params: dict[str, Any] | None = None, time_limit: float | None = None,
              field_name: str = "--target") -> Contender:
    """A checked contender: exactly one of ``solver`` and ``command``; the solver exists, runs
    the family and accepts the parameters (InputError naming ``field_name`` otherwise)."""
    params = dict(params or {})
    if (solver is None) == (command is None):
        raise InputError("give exactly one solver name or one command", field=field_name)
    if command is not None:
        if not command.strip():
            raise InputError("the command is empty", field=f"{field_name}-command")
        return Contender(label=command, solver=_external(), params={**params, "command": command},
                         time_limit=time_limit)
    try:
        info = registry.get(solver)
    except KeyError as exc:
        raise InputError(str(exc.args[0]), field=field_name) from None
    if family not in info.families:
        raise InputError(f"solver {solver!r} does not support family {family!r} (supports "
                         f"{', '.join(info.families)})", field=field_name)
    registry.check_params(info, params)
    tl = registry.check_time_limit(time_limit, info)
    return Contender(label=solver, solver=solver, params=params, time_limit=tl)


@dataclass(frozen=True)
class Config:
    family: str
    target: Contender
    reference: Contender
    size: int
    preset: str = ""
    start_seed: int = 0
    seed: int = 0
    evals: int | None = None
    seconds: float | None = None
    t0: float = 0.05
    t_end: float = 0.001
    moves: int = 1
    instance_id: str = ""

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise InputError(f"unknown family {self.family!r} (known: {', '.join(FAMILIES)})", field="family")
        if not self.preset:
            object.__setattr__(self, "preset", DEFAULT_PRESET[self.family])
        if not self.instance_id:
            object.__setattr__(self, "instance_id", f"{self.family}-adversarial-{_slug(self.target.label)}"
                                                    f"-n{self.size}-s{self.seed}")
        if self.evals is None and self.seconds is None:
            raise InputError("give a budget: evaluations, seconds or both", field="--evals")
        if self.evals is not None and self.evals < 1:
            raise InputError("must be at least 1", field="--evals")
        if self.seconds is not None and not (self.seconds > 0 and math.isfinite(self.seconds)):
            raise InputError("must be a positive number of seconds", field="--seconds")
        if not (0 < self.t_end <= self.t0):
            raise InputError("temperatures need 0 < t_end <= t0", field="--t0")
        if self.size < 1:
            raise InputError("must be at least 1", field="--size")
        if self.moves < 1:
            raise InputError("must be at least 1", field="--moves")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _slug(label: str) -> str:
    s = "".join(c if c.isalnum() else "-" for c in label.lower()).strip("-")
    return "-".join(p for p in s.split("-") if p)[:40] or "target"


@dataclass
class Scored:
    instance: Instance
    target_solution: Any
    reference_solution: Any
    t: float
    r: float
    ratio: float
    badness: float


def score(config: Config, instance: Instance) -> Scored | str:
    """Both solvers on ``instance``, re-scored by the referee; the reason when no ratio exists
    (a solver failed or returned an infeasible solution, or the reference's value is not
    positive)."""
    ts, t = config.target.run(instance, config.seed)
    if t is None or isinstance(t, str):
        return f"target: {t or 'infeasible'}"
    rs, r = config.reference.run(instance, config.seed)
    if r is None or isinstance(r, str):
        return f"reference: {r or 'infeasible'}"
    ratio = certificate.ratio_of(t, r)
    if ratio is None:
        return f"reference value {r:g} is not positive"
    return Scored(instance, ts, rs, t, r, ratio, certificate.badness(ratio, SENSE[config.family]))


def start_instance(config: Config, seed: int) -> Instance:
    try:
        inst = generate(config.family, config.preset, seed=seed, **{SIZE_PARAM[config.family]: config.size})
    except InputError as err:
        raise InputError(err.reason, field="--size" if err.field == SIZE_PARAM[config.family] else "--preset") from None
    data = inst.model_dump(mode="json")
    data["id"] = config.instance_id
    data["name"] = f"adversarial {config.family} instance against {config.target.label} (search seed {config.seed})"
    data["meta"] = {**data["meta"], "adversary": {"target": config.target.label, "reference": config.reference.label,
                                                  "search_seed": config.seed, "start_seed": seed}}
    return io.instance_from_dict(data)


Count = Annotated[int, Field(ge=0)]
Number = Annotated[float, Field(allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CurrentState(_Strict):
    instance: dict[str, Any]
    ratio: Number
    badness: Number
    t: Number
    r: Number


class BestState(_Strict):
    ratio: Number
    badness: Number
    evals: Count
    folder: str
    claim: str


class SearchState(_Strict):
    """The shape of ``state.json``, checked before any field is used (a damaged file is one
    InputError naming the field, issue 44). ``trace_bytes``: the length of ``trace.jsonl``
    when the state was saved (absent in states written before it existed)."""

    state_version: Literal[1]
    config: dict[str, Any]
    evals: Count
    accepted: Count
    failed: Count
    improvements: Count
    elapsed: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    rng: dict[str, Any]
    current: CurrentState | None
    best: BestState | None
    trace_bytes: Count | None = None


class Search:
    """One annealing run writing into ``out`` (see module doc).

    Crash safety (issue 44): ``improvements/NNNN/`` is written as a temporary folder and
    renamed into place, so it is complete or absent; ``best`` is a symbolic link to the newest
    one, replaced by a rename, so it always names one complete certificate folder; the trace
    line of an evaluation is written before the state that counts it, and the state records
    the trace's length, so a resumed search cuts the trace back to what its state has seen
    and removes improvement folders its state does not know (:meth:`load`). A kill at any
    moment therefore resumes without a duplicated or lost evaluation."""

    def __init__(self, config: Config, out: Path):
        self.config = config
        self.out = Path(out)
        self.rng = np.random.default_rng(config.seed)
        self.evals = 0
        self.accepted = 0
        self.failed = 0
        self.improvements = 0
        self.elapsed = 0.0
        self.current: Scored | None = None
        self.best: dict[str, Any] | None = None

    # ---- state -----------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        cur = self.current
        return {"state_version": STATE_VERSION, "config": self.config.as_dict(), "evals": self.evals,
                "accepted": self.accepted, "failed": self.failed, "improvements": self.improvements,
                "elapsed": self.elapsed, "rng": self.rng.bit_generator.state,
                "current": None if cur is None else {"instance": cur.instance.model_dump(mode="json"),
                                                     "ratio": cur.ratio, "badness": cur.badness,
                                                     "t": cur.t, "r": cur.r},
                "best": self.best, "trace_bytes": self._trace_bytes()}

    def _trace_bytes(self) -> int:
        trace = self.out / "trace.jsonl"
        return trace.stat().st_size if trace.exists() else 0

    def save(self) -> None:
        io.write_text_atomic(self.out / "state.json", json.dumps(self._state(), indent=1) + "\n")

    def load(self) -> None:
        path = self.out / "state.json"
        f = str(path)
        if not path.is_file():
            raise InputError("no state.json to resume from", file=f)
        raw = io.read_json(path)
        if not isinstance(raw, dict) or raw.get("state_version") != STATE_VERSION:
            raise InputError(f"not a version-{STATE_VERSION} search state", file=f, field="state_version")
        st = io.validate_model(SearchState, raw, file=f)
        # the budget may grow on resume (its cooling then stretches); everything else must match
        mine = {k: v for k, v in json.loads(json.dumps(self.config.as_dict())).items() if k not in BUDGET}
        theirs = {k: v for k, v in st.config.items() if k not in BUDGET}
        if mine != theirs:
            diff = [k for k in mine if mine[k] != theirs.get(k)]
            raise InputError(f"the search was started with other settings ({', '.join(diff)}); resume with the "
                             f"same ones", file=f, field="config")
        try:
            self.rng.bit_generator.state = st.rng
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"not the state of a {type(self.rng.bit_generator).__name__} generator ({exc})",
                             file=f, field="rng") from None
        for k in ("evals", "accepted", "failed", "improvements", "elapsed"):
            setattr(self, k, getattr(st, k))
        self.best = None if st.best is None else st.best.model_dump()
        if st.current is not None:
            cur = st.current
            try:
                inst = io.instance_from_dict(cur.instance, file=f)
            except InputError as err:
                raise InputError(err.reason, file=f, field=f"current.instance.{err.field or '<root>'}") from None
            self.current = Scored(inst, None, None, cur.t, cur.r, cur.ratio, cur.badness)
        self._recover(st, f)

    def _recover(self, st: SearchState, f: str) -> None:
        """Undo what a killed run wrote after its last saved state: improvement folders (and
        temporary ones) the state does not count, ``best`` pointing at one of them, trace lines
        of evaluations the state does not count."""
        imp = self.out / "improvements"
        stale = [e for e in (imp.iterdir() if imp.is_dir() else ())
                 if e.name.startswith(".") or not e.name.isdigit() or int(e.name) > st.improvements]
        for entry in stale + list(self.out.glob(".best-*")):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        if self.best is not None:
            folder = confined(self.out, self.best["folder"], file=f, field="best.folder")
            if not (folder / certificate.FILES["certificate"]).is_file():
                raise InputError(f"the best certificate folder {self.best['folder']!r} is missing", file=f,
                                 field="best.folder")
            _point_best(self.out, folder)
        trace = self.out / "trace.jsonl"
        if st.trace_bytes is not None and trace.exists() and trace.stat().st_size > st.trace_bytes:
            with open(trace, "r+b") as fh:
                fh.truncate(st.trace_bytes)

    # ---- results ---------------------------------------------------------------------------
    def _record(self, s: Scored) -> None:
        self.improvements += 1
        ref = self.config.reference
        bound, kind = certificate.best_bound(s.instance, s.reference_solution, ref.proves())
        side = {"value": s.t, "solver": self.config.target.label, "params": dict(self.config.target.params),
                "status": s.target_solution.status}
        rside = {"value": s.r, "solver": ref.label, "params": dict(ref.params), "status": s.reference_solution.status}
        cert = certificate.make(s.instance, side, rside, bound, kind,
                                {"search": {"seed": self.config.seed, "evals": self.evals,
                                            "improvement": self.improvements, "elapsed_s": round(self.elapsed, 3)}})
        folder = self.out / "improvements" / f"{self.improvements:04d}"
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
        certificate.write(tmp, s.instance, s.target_solution, s.reference_solution, cert)
        if folder.exists():  # left by a killed run after its last saved state
            shutil.rmtree(folder)
        os.rename(tmp, folder)  # the folder appears complete, or not at all
        _point_best(self.out, folder)
        self.best = {"ratio": s.ratio, "badness": s.badness, "evals": self.evals, "folder": str(folder.relative_to(self.out)),
                     "claim": cert["claim"]}

    def _log(self, row: dict[str, Any]) -> None:
        with open(self.out / "trace.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())  # on disk before the state that counts it

    # ---- the loop --------------------------------------------------------------------------
    def _fraction(self, elapsed: float) -> float:
        c = self.config
        parts = []
        if c.evals is not None:
            parts.append(self.evals / c.evals)
        if c.seconds is not None:
            parts.append(elapsed / c.seconds)
        return min(1.0, max(parts))

    def _temperature(self, frac: float) -> float:
        c = self.config
        return c.t0 * (c.t_end / c.t0) ** frac

    def _start(self) -> None:
        c = self.config
        reasons = []
        for k in range(START_TRIES):
            s = score(c, start_instance(c, c.start_seed + k))
            self.evals += 1
            if isinstance(s, Scored):
                self.current = s
                self._record(s)
                return
            reasons.append(s)
        raise InputError(f"no start instance of {START_TRIES} gave a ratio (first: {reasons[0]})", field="--start-seed")

    def run(self, *, progress: bool = True) -> dict[str, Any]:
        from tqdm import tqdm

        c = self.config
        self.out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter() - self.elapsed
        total = c.evals if c.evals is not None else None
        bar = tqdm(total=total, initial=self.evals, disable=not progress, unit="eval", dynamic_ncols=True,
                   desc=printable(f"{c.target.label} vs {c.reference.label}"))
        try:
            if self.current is None:
                self._start()
                self.elapsed = time.perf_counter() - t0
                self.save()
                bar.update(self.evals)
            while self._fraction(time.perf_counter() - t0) < 1.0:
                self._step()
                self.elapsed = time.perf_counter() - t0
                self.save()
                bar.update(1)
                bar.set_postfix(best=f"{self.best['ratio']:.4f}", current=f"{self.current.ratio:.4f}", refresh=False)
        finally:
            bar.close()
        return self.summary()

    def _step(self) -> None:
        c = self.config
        assert self.current is not None
        cand, what = propose(self.current.instance, self.rng, moves=c.moves)
        frac = self._fraction(self.elapsed)
        temp = self._temperature(frac)
        self.evals += 1
        s = score(c, cand) if what else "no valid move"
        u = float(self.rng.random())
        if isinstance(s, str):
            self.failed += 1
            self._log({"eval": self.evals, "moves": what, "failed": s})
            return
        delta = math.log(s.badness) - math.log(self.current.badness) if math.isfinite(s.badness) else math.inf
        accept = delta >= 0 or u < math.exp(delta / temp)
        if accept:
            self.accepted += 1
            self.current = s
            if self.best is None or s.badness > self.best["badness"]:
                self._record(s)
        self._log({"eval": self.evals, "elapsed_s": round(self.elapsed, 3), "moves": what, "ratio": s.ratio,
                   "accepted": accept,
                   "best": self.best["ratio"] if self.best else None, "temperature": temp})

    def summary(self) -> dict[str, Any]:
        return {"evals": self.evals, "accepted": self.accepted, "failed": self.failed,
                "improvements": self.improvements, "elapsed_s": self.elapsed, "best": self.best,
                "folder": str(self.out)}


def _point_best(out: Path, folder: Path) -> None:
    """Make ``out/best`` a symbolic link to ``folder`` in one rename (a reader sees the old
    certificate folder or the new one, never a mix); ``best`` as a real folder (searches
    before issue 44) is replaced."""
    link = out / "best"
    tmp = out / f".best-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    os.symlink(os.path.relpath(folder, out), tmp)
    if link.is_dir() and not link.is_symlink():
        shutil.rmtree(link)
    os.replace(tmp, link)


def _clear_uncounted(out: Path) -> None:
    """Remove the trace, improvement folders and ``best`` link of a folder without a state
    (a search killed during its start): a fresh search there starts clean."""
    (out / "trace.jsonl").unlink(missing_ok=True)
    imp = out / "improvements"
    if imp.is_dir() and not imp.is_symlink():
        shutil.rmtree(imp)
    for link in [out / "best", *out.glob(".best-*")]:
        if link.is_symlink():
            link.unlink()


def search(config: Config, out: str | Path, *, resume: bool = False, progress: bool = True) -> dict[str, Any]:
    """Run (or with ``resume`` continue) a search into ``out``; the summary (evaluations,
    acceptances, failures, improvements, elapsed seconds, the best certificate's ratio)."""
    s = Search(config, Path(out))
    if resume:
        s.load()
    elif (Path(out) / "state.json").exists():
        raise InputError("a search state exists here; use --resume to continue it or another folder",
                         file=str(Path(out) / "state.json"))
    else:  # what a search killed before its first saved state left counts nothing
        _clear_uncounted(Path(out))
    return s.run(progress=progress)
