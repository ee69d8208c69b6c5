"""Generated memory shapes: Hypothesis strategies for healthy and failing training runs.

A run is one to eight GPUs, each with a training process (a DDP rank: the same shape,
its own timings) and perhaps others arriving and leaving. A process's memory is a
*level* (its warm-up from the CUDA context to a plateau: linear, a staircase, or an
approach to the plateau, 10 s to 6 min) plus the *sawtooth* of its training steps
(period 1–60 s, its steps up to 3 % longer or shorter than that as the host wanders,
amplitude 1–30 % of the card), with evaluation spikes (a step up that
holds 10 s to 3 min) and checkpoint dips (no steps: memory sits at the level). A healthy
GPU never holds more than 85 % of its card.

A failing run is a healthy one whose first training process, past the longest warm-up
(or, for climbs of 30 min and more, from its start), starts to climb until the card is
full, with no process arriving once it has begun: a linear leak (the
level rises), a slow drift (the peaks rise: the sawtooth grows), a curriculum staircase
(the level steps up every few minutes), or a ramp to out-of-memory, filling the card in
minutes to hours, over at least 6 training steps. The process dies the second its GPU's
processes together want more than the card: their real demand, each at its own phase,
followed on a 20 ms grid (the top of a step, which one-a-second samples may never see).

Runs are sampled every second into ``Snapshot``s, appended to a ``History`` and fed to
the ``Advisor`` sample by sample, as the recorder and the window do.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np
from advisor_support import GIB, MIB, T0
from hypothesis import assume
from hypothesis import strategies as st

from gpuwatch.advisor import Advisor
from gpuwatch.core.hints import HintEventKind
from gpuwatch.core.history import History
from gpuwatch.core.snapshot import (
    BackendInfo,
    BackendKind,
    GpuSample,
    GpuState,
    MemoryInfo,
    ProcessSample,
    Snapshot,
)

HEALTHY_PEAK = 0.85            # a healthy GPU's peak, of its card
WARMUP_MAX_S = 360.0           # the longest warm-up
CARDS_GIB = (16, 24, 40, 48, 80, 94, 141)
WARMUPS = ("linear", "staircase", "plateau")
FAILURES = ("leak", "drift", "staircase", "ramp")
FINE_S = 0.02                  # the grid on which a run's real demand is followed
EVIDENCE_S = 15.0              # a warning's condition holds this long before it opens


@dataclass(frozen=True)
class Shape:
    """One process's memory, as fractions of its card, on a time axis of seconds."""

    start_s: float
    end_s: float | None
    context: float            # the CUDA context, at arrival
    level: float              # the plateau after the warm-up
    warmup: str
    warmup_s: float
    steps: int                # staircase steps
    period_s: float           # training step
    amplitude: float
    phase_s: float
    eval_every_s: float | None = None
    eval_height: float = 0.0
    eval_s: float = 0.0
    ckpt_every_s: float | None = None
    ckpt_s: float = 0.0

    def demand(self, t: np.ndarray, evaluations: bool = True) -> np.ndarray:
        """Memory wanted at each time (fractions of the card; NaN while absent), with its
        evaluations or without them."""
        local = t - self.start_s
        x = np.clip(local / self.warmup_s, 0.0, 1.0)
        if self.warmup == "linear":
            ramp = x
        elif self.warmup == "staircase":
            ramp = np.minimum(np.floor(x * self.steps) + 1, self.steps) / self.steps
        else:                                  # approach to the plateau, there at warmup_s
            ramp = (1 - np.exp(-4 * x)) / (1 - math.exp(-4))
        level = self.context + (self.level - self.context) * ramp
        saw = self.amplitude * self.step_phase(local)
        if self.ckpt_every_s:
            saving = (local > self.warmup_s) & ((local % self.ckpt_every_s) < self.ckpt_s)
            saw = np.where(saving, 0.0, saw)
        used = level + saw
        if self.eval_every_s and evaluations:
            used = used + np.where(self._evaluating(local), self.eval_height, 0.0)
        alive = (local >= 0) & (True if self.end_s is None else t < self.end_s)
        return np.where(alive, used, np.nan)

    def step_phase(self, local: np.ndarray) -> np.ndarray:
        """How far into its training step the process is (0–1), ``local`` seconds after
        its start. Real steps are no metronome: data loading and the host make each
        last a little more or less, so the step clock wanders against the sampler's by
        half a step either way, over 100 steps (5 min at least) — steps ±3 % at most.
        A clock in exact lockstep with the sampler would show it the same phases for
        hours (a 2 s step sampled every second, never its top quarter), which no run
        does."""
        wander_s = max(300.0, 100.0 * self.period_s)
        wandered = local + 0.5 * self.period_s * np.sin(2 * math.pi * local / wander_s
                                                         + self.phase_s)
        return ((wandered + self.phase_s) % self.period_s) / self.period_s

    def evaluation_at(self, t: float) -> int | None:
        """Which of its evaluations the process is in at ``t`` (1: its first), or None.
        Evaluations fall every ``eval_every_s`` from its start; those wholly within its
        warm-up are not held."""
        local = t - self.start_s
        if (not self.eval_every_s or (self.end_s is not None and t >= self.end_s)
                or not self._evaluating(local)):
            return None
        # the first held: the first whose end comes after the warm-up's
        first = (0 if self.eval_s > self.warmup_s
                 else int((self.warmup_s - self.eval_s) // self.eval_every_s) + 1)
        return int(local // self.eval_every_s) - first + 1

    def _evaluating(self, local: np.ndarray | float) -> np.ndarray | bool:
        """Whether an evaluation is held ``local`` seconds after the start (an array of
        times or one): past the warm-up, in the first ``eval_s`` of each period."""
        assert self.eval_every_s
        return (local > self.warmup_s) & ((local % self.eval_every_s) < self.eval_s)

    @property
    def peak(self) -> float:
        return self.level + self.amplitude + self.eval_height


@dataclass(frozen=True)
class Failure:
    """A climb of the first process of GPU 0 from ``start_s`` until the card is full."""

    kind: str
    start_s: float
    fill_s: float             # how long the climb would take to fill the card
    step_every_s: float = 0.0  # staircase

    def extra(self, t: np.ndarray, room: float, shape: Shape) -> np.ndarray:
        """What the climb adds at each time (fractions of the card), ``room`` the card left
        above the GPU's healthy peak. A drift grows the top of each step (the sawtooth);
        the others lift the level."""
        since = np.maximum(t - self.start_s, 0.0)
        if self.kind == "staircase":
            steps = math.ceil(self.fill_s / self.step_every_s)
            return np.floor(since / self.step_every_s) * (room * 1.05 / steps)
        rise = since / self.fill_s * room * 1.05
        if self.kind == "drift":
            return rise * shape.step_phase(t - shape.start_s)
        return rise


@dataclass
class RunSpec:
    """A generated run: its GPUs' processes, and the failure if it fails."""

    total_bytes: int
    reserved_bytes: int
    driver: float                              # memory held with no process (fraction)
    gpus: list[list[Shape]]
    duration_s: int
    failure: Failure | None = None
    label: str = ""
    # False: the same run, and the same climb (as fast as with them), with no evaluation
    evaluations: bool = True

    def demands(self) -> tuple[np.ndarray, list[list[np.ndarray]], int | None]:
        """(time axis, each process's demand in bytes, the second GPU 0 is full or None).
        A failing process dies the second it is full."""
        t = np.arange(self.duration_s + 1, dtype=float)
        # a sampler's instants wander within their second: a step of exactly 1 s is not
        # seen at the same point of every step
        t_seen = t + 0.5 * ((t * 0.6180339887) % 1.0)
        per = [[s.demand(t_seen, self.evaluations) for s in shapes] for shapes in self.gpus]
        full = None
        if self.failure is not None:
            main = self.gpus[0][0]
            # What the GPU's processes really want, instant by instant (each at its own
            # phase), on a grid fine enough to catch a step's top: the card is full the
            # first instant that exceeds it, which one-a-second samples need not see.
            fine = np.arange(0.0, self.duration_s + 1.0, FINE_S)
            wants = [s.demand(fine) for s in self.gpus[0]]
            # the climb alone fills the card from the GPU's healthy peak (all of its
            # processes, evaluations included, from the climb's start on) in fill_s;
            # sooner where the climb adds to a lower moment
            during = fine >= self.failure.start_s
            healthy_top = self.driver + float(np.nanmax(
                np.nansum(np.vstack(wants), axis=0)[during]))
            room = 1.0 - self.reserved_bytes / self.total_bytes - healthy_top
            if not self.evaluations:
                wants = [s.demand(fine, evaluations=False) for s in self.gpus[0]]
            per[0][0] = per[0][0] + self.failure.extra(t_seen, room, main)
            wants[0] = wants[0] + self.failure.extra(fine, room, main)
            capacity = self.total_bytes - self.reserved_bytes
            total = self.driver + np.nansum(np.vstack(wants), axis=0)
            over = np.flatnonzero(total * self.total_bytes >= capacity)
            if over.size:
                full = int(fine[over[0]])              # it dies within that second
                per[0][0][full:] = np.nan
        return t, [[np.round(d * self.total_bytes / MIB) * MIB for d in g] for g in per], full

    def evaluation_filling(self, full_s: float) -> int | None:
        """Which evaluation of a process of GPU 0 was under way when the card filled
        (within the second ``full_s``): 1, its first, is a spike no sample before had
        shown. None: no evaluation was."""
        instants = full_s + np.arange(0.0, 1.0, FINE_S)
        held = [n for shape in self.gpus[0] for t in instants
                if (n := shape.evaluation_at(float(t))) is not None]
        return min(held) if held else None

    def without_evaluations(self) -> RunSpec:
        """The same run with no evaluation, its climb as fast as with them."""
        return replace(self, evaluations=False)

    def to_json(self) -> dict:
        """The run as plain data (a profile's rows keep it, to judge a run again alone)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> RunSpec:
        return cls(**{**data, "gpus": [[Shape(**s) for s in g] for g in data["gpus"]],
                      "failure": None if data["failure"] is None
                      else Failure(**data["failure"])})

    def required_lead_s(self, full_s: float) -> float:
        """A warning this long before full: 60 s, or a quarter of the climb (≤ 10 min)."""
        assert self.failure is not None
        return max(60.0, min(0.25 * (full_s - self.failure.start_s), 600.0))


@dataclass
class Outcome:
    loud: list[tuple[float, str, str]] = field(default_factory=list)   # (t, code, severity)
    full_s: int | None = None

    def first_warning_s(self) -> float | None:
        return self.loud[0][0] if self.loud else None


def snapshots(spec: RunSpec):
    """The run's snapshots, one a second, as NVML would report them."""
    t, per, full = spec.demands()
    total, reserved = spec.total_bytes, spec.reserved_bytes
    driver = int(spec.driver * total)
    info = BackendInfo(BackendKind.SIMULATED)
    for i, ti in enumerate(t):
        if full is not None and ti > full + 120:
            return
        gpus = []
        for g, demands in enumerate(per):
            procs = tuple(ProcessSample(1000 + 100 * g + k, g, int(d[i]), "compute",
                                        name="python")
                          for k, d in enumerate(demands) if not math.isnan(d[i]))
            used = driver + sum(p.used_bytes for p in procs)    # type: ignore[misc]
            used = min(used, total - reserved)
            gpus.append(GpuSample(index=g, uuid=None, name="Test GPU", state=GpuState.OK,
                                  memory=MemoryInfo(total, used, total - reserved - used,
                                                    reserved),
                                  gpu_util_percent=95.0 if procs else 0.0,
                                  memory_busy_percent=50.0 if procs else 0.0,
                                  processes=procs))
        yield float(ti), full, Snapshot(T0 + ti, info, tuple(gpus))


def judge(spec: RunSpec, advisor: Advisor | None = None) -> Outcome:
    """Feed the run to the advisor a second at a time; the warnings and criticals it
    opened (or raised to critical), in order."""
    advisor = advisor or Advisor()
    history = History()
    out = Outcome()
    shown: dict[tuple, str] = {}
    for t, full, snap in snapshots(spec):
        out.full_s = full
        history.append(snap)
        for e in advisor.update(history):
            sev, before = e.hint.severity.value, shown.get(e.hint.key)
            if e.kind is HintEventKind.CLOSED:
                shown.pop(e.hint.key, None)
                continue
            shown[e.hint.key] = sev
            if sev != "info" and (before is None or (sev == "critical" != before)):
                out.loud.append((t, e.hint.code, sev))
    return out


def assert_warned_in_time(spec: RunSpec) -> None:
    """``spec``'s failure is warned of in time, and never before its climb began."""
    assert spec.failure is not None
    out = judge(spec)
    before = [x for x in out.loud if x[0] < spec.failure.start_s]
    assert before == [], spec.label
    assert out.full_s is not None, spec.label            # the shape does fill the card
    first = next((x[0] for x in out.loud if x[0] >= spec.failure.start_s), None)
    assert first is not None, f"never warned: {spec.label}"
    need = spec.required_lead_s(out.full_s)
    assert out.full_s - first >= need, \
        f"warned {out.full_s - first:.0f} s before full, {need:.0f} s needed: {spec.label}"


# --- strategies --------------------------------------------------------------------------

def _fractions(draw, n: int, share: float) -> list[float]:
    """n positive shares adding up to ``share``."""
    weights = [draw(st.floats(0.2, 1.0)) for _ in range(n)]
    return [share * w / sum(weights) for w in weights]


@st.composite
def _trainer(draw, peak: float, start_s: float) -> Shape:
    """A training process whose peak (level + sawtooth + evaluation) is ``peak``."""
    amplitude = min(draw(st.floats(0.01, 0.30)), 0.6 * peak)
    evals = draw(st.booleans())
    eval_height = min(draw(st.floats(0.02, 0.15)), 0.3 * (peak - amplitude)) if evals else 0.0
    level = peak - amplitude - eval_height
    context = min(draw(st.floats(0.01, 0.04)), 0.5 * level)
    ckpt = draw(st.booleans())
    return Shape(
        start_s=start_s, end_s=None, context=context, level=level,
        warmup=draw(st.sampled_from(WARMUPS)), warmup_s=draw(st.floats(10, 360)),
        steps=draw(st.integers(2, 6)), period_s=draw(st.floats(1, 60)),
        amplitude=amplitude, phase_s=draw(st.floats(0, 60)),
        eval_every_s=draw(st.floats(300, 1800)) if evals else None,
        eval_height=eval_height, eval_s=draw(st.floats(10, 180)),
        ckpt_every_s=draw(st.floats(300, 1800)) if ckpt else None,
        ckpt_s=draw(st.floats(5, 60)))


def _rank(draw, shape: Shape) -> Shape:
    """The same training run on another GPU: its own timings."""
    jitter = draw(st.floats(0.9, 1.1))
    return Shape(**{**shape.__dict__,
                    "start_s": shape.start_s + draw(st.floats(0, 20)),
                    "warmup_s": min(360.0, max(10.0, shape.warmup_s * jitter)),
                    "period_s": max(1.0, shape.period_s * draw(st.floats(0.95, 1.05))),
                    "phase_s": draw(st.floats(0, 60))})


@st.composite
def healthy_runs(draw, duration: tuple[int, int] = (900, 1800)) -> RunSpec:
    """A healthy run: nothing should warn about it."""
    return _run(draw, draw(st.integers(*duration)))


def _run(draw, duration_s: int) -> RunSpec:
    total = draw(st.sampled_from(CARDS_GIB)) * GIB
    reserved = int(total * draw(st.floats(0.0, 0.012)))
    driver = draw(st.floats(0.005, 0.02))
    n_gpus = draw(st.sampled_from((1, 1, 2, 4, 8)))
    others = draw(st.integers(0, 2))           # processes arriving on GPU 0 (and leaving)
    share = draw(st.floats(0.3, HEALTHY_PEAK - driver))
    peaks = _fractions(draw, 1 + others, share)
    main = draw(_trainer(peaks[0], draw(st.floats(0, 30))))
    gpus = [[main]] + [[_rank(draw, main)] for _ in range(n_gpus - 1)]
    for peak in peaks[1:]:
        start = draw(st.floats(0, duration_s - 120))
        stays = draw(st.booleans())
        end = None if stays else start + draw(st.floats(60, duration_s))
        gpus[0].append(Shape(**{**draw(_trainer(peak, start)).__dict__, "end_s": end,
                                "warmup_s": draw(st.floats(10, 120))}))
    return RunSpec(total, reserved, driver, gpus, duration_s,
                   label=f"healthy {n_gpus} GPU(s), {1 + others} process(es) on GPU 0, "
                         f"warm-up {main.warmup} {main.warmup_s:.0f} s, "
                         f"steps {main.period_s:.0f} s ±{100 * main.amplitude:.0f} %")


@st.composite
def failing_runs(draw, longest_fill_s: float = 4 * 3600,
                 kinds: tuple[str, ...] = FAILURES) -> RunSpec:
    """A run that fills its card: the advisor must warn in time."""
    base = _run(draw, 1200)
    main = base.gpus[0][0]
    kind = draw(st.sampled_from(kinds))
    fastest = {"ramp": 120.0, "staircase": 600.0, "leak": 600.0, "drift": 1800.0}[kind]
    slowest = {"ramp": 1800.0, "staircase": 3600.0}.get(kind, longest_fill_s)
    # A climb must outlast the evidence that it is one, plus the lead it is owed: a
    # trend is told from a step once it has made new highs for 40 s and four training
    # steps (each in its own bucket: 1.5 steps, 10 s at least), and a warning holds
    # 15 s before it opens. A shorter one is a step up as far as anyone can tell.
    evidence = EVIDENCE_S + max(40.0, 4 * main.period_s) + max(10.0, 1.5 * main.period_s)
    fastest = max(fastest, 6 * main.period_s, evidence + 60.0, evidence / 0.75)
    fill_s = draw(st.floats(fastest, max(fastest, slowest)))
    if kind in ("leak", "drift") and fill_s >= 1800 and draw(st.booleans()):
        start = main.start_s                   # from the first step on
    else:                                      # past the longest warm-up
        start = main.start_s + max(WARMUP_MAX_S, main.warmup_s) + draw(st.floats(0, 600))
    # a staircase is one from its third step (two intervals to compare), and must make
    # it in time to be warned of: five steps at least to fill the card
    step_every = draw(st.floats(60, min(600.0, fill_s / 5))) if kind == "staircase" else 0.0
    # the card fills because of the climb: no process arrives on it once it has begun,
    # and those there when it begins stay
    base.gpus[0] = [main] + [p if p.end_s is None or p.end_s < start
                             else Shape(**{**p.__dict__, "end_s": None})
                             for p in base.gpus[0][1:] if p.start_s < start]
    base.failure = Failure(kind, start, fill_s, step_every)
    climb_s = fill_s if kind != "staircase" else math.ceil(fill_s / step_every) * step_every
    # run until the card is full, and two minutes on (``snapshots`` stops there): an
    # evaluation's spike may be what tops it, late in the climb
    base.duration_s = int(start + 2 * max(fill_s, climb_s) + 600)
    base.label = (f"failing: {kind} filling in {fill_s / 60:.0f} min from "
                  f"{start:.0f} s; " + base.label)
    return base


@st.composite
def climbs_filled_by_an_evaluation(draw, longest_fill_s: float = 2700.0) -> RunSpec:
    """A leak, a drift or a ramp under recurring evaluations (+5–12 % of the card, held
    30 s to 3 min, every 5–10 min) whose card is filled by one of them, not the first:
    the climb is short of full, and the evaluation's spike, seen before, tops it. The
    warning is owed as for any failing run."""
    spec = draw(failing_runs(longest_fill_s, kinds=("leak", "drift", "ramp")))
    main = spec.gpus[0][0]
    height = draw(st.floats(0.05, 0.12))
    level = main.level + main.eval_height - height
    assume(level >= main.context + 0.05)
    spec.gpus[0][0] = replace(main, level=level, eval_height=height,
                              eval_every_s=draw(st.floats(300, 600)),
                              eval_s=draw(st.floats(30, 180)))
    full = spec.demands()[2]
    assume(full is not None and (spec.evaluation_filling(full) or 0) >= 2)
    spec.label = f"{spec.label}, evaluations +{100 * height:.0f} % every " \
                 f"{spec.gpus[0][0].eval_every_s / 60:.0f} min"
    return spec
