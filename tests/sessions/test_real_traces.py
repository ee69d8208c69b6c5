"""Real-GPU traces replayed in CI (no GPU): every session listed in
``tests/data/real/manifest.json`` must show, through ``gpuwatch report --format json``,
what its ``expect`` says (DESIGN.md, "Real-GPU traces"; benchmarks/real_gpu/).

The checker itself is held to account on sessions recorded here from the simulated
scenarios (`gpuwatch record --demo … --time-scale max`): it passes what a scenario
shows and fails what it does not, so an empty or passing manifest means something. The
importer is shown to refuse what is not a real GPU's trace.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "data" / "real"
sys.path.insert(0, str(REPO / "benchmarks" / "real_gpu"))

import expectations  # noqa: E402
import import_results  # noqa: E402
import manifest  # noqa: E402

ENTRIES = manifest.load(REAL / "manifest.json")


# ---------------------------------------------------------------- the real traces
def test_the_manifest_keeps_the_contract_and_the_size_budget():
    total = 0
    for e in ENTRIES:
        trace = REAL / e["file"]
        assert trace.is_file(), f"{e['file']} is listed but missing"
        total += trace.stat().st_size
    assert total <= manifest.MAX_TOTAL_BYTES


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["file"] for e in ENTRIES])
def test_each_real_trace_shows_what_it_expects(entry):
    report = manifest.replay(REAL / entry["file"], REPO)
    assert report["session"]["backend"]["kind"] == "nvml"
    assert [g["name"] for g in report["gpus"]][:1] == [entry["gpu"]]
    assert expectations.check(report, entry) == []


# ---------------------------------------------------------------- the checker can fail
def _record(tmp: Path, scenario: str, *extra: str) -> Path:
    session = tmp / f"{scenario}.gpuwatch.sqlite"
    done = subprocess.run([sys.executable, "-m", "gpuwatch", "record", "--demo", scenario,
                           "--time-scale", "max", "--out", str(session), *extra],
                          capture_output=True, text=True, cwd=REPO, check=False,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin",
                               "GPUWATCH_DATA_DIR": str(tmp)})
    assert done.returncode == 0, done.stderr
    return session


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> dict[str, dict]:
    """Reports of sessions recorded from the built-in scenarios (the first GPU's
    process of each is the one that dies, leaks or fragments)."""
    tmp = tmp_path_factory.mktemp("sim")
    sessions = {"oom-ramp": _record(tmp, "oom-ramp"),
                "leak": _record(tmp, "leak", "--duration", "1200"),
                "fragmentation": _record(tmp, "fragmentation", "--duration", "120"),
                "warmup-staircase": _record(tmp, "warmup-staircase", "--duration", "900")}
    # one compressed, as the traces are stored
    packed = tmp / "oom-ramp.gpuwatch.sqlite.gz"
    packed.write_bytes(gzip.compress(sessions["oom-ramp"].read_bytes()))
    reports = {name: manifest.replay(path, REPO) for name, path in sessions.items()}
    reports["oom-ramp.gz"] = manifest.replay(packed, REPO)
    return reports


def _pid(report: dict, code: str) -> int:
    return next(h["pid"] for h in report["hints"] if h["code"] == code)


def test_the_checker_passes_what_the_scenarios_show(simulated):
    oom = simulated["oom-ramp"]
    death = oom["oom_exits"][0]
    entry = {"expect": "oom", "t_oom_s": death["exited_at_s"], "pid": death["pid"]}
    assert expectations.check(oom, entry) == []
    assert expectations.check(simulated["oom-ramp.gz"], entry) == []
    leak = simulated["leak"]
    assert expectations.check(leak, {"expect": "leak",
                                      "pid": _pid(leak, "memory-leak")}) == []
    frag = simulated["fragmentation"]
    assert expectations.check(frag, {"expect": "fragmentation",
                                      "pid": _pid(frag, "fragmentation")}) == []
    for expect in ("healthy", "arrival"):
        assert expectations.check(simulated["warmup-staircase"], {"expect": expect}) == []


@pytest.mark.parametrize(("name", "entry", "says"), [
    # a warning that came too late for the death
    ("oom-ramp", {"expect": "oom", "t_oom_s": 190.0}, "60 s or more before"),
    # the wrong process named
    ("oom-ramp", {"expect": "oom", "t_oom_s": 492.0, "pid": 4242}, "not named likely-oom"),
    # the death at another time than the report's
    ("oom-ramp", {"expect": "oom", "t_oom_s": 560.0}, "not within"),
    ("oom-ramp", {"expect": "healthy"}, "expected no warning"),
    ("oom-ramp", {"expect": "oom"}, "needs t_oom_s"),
    ("leak", {"expect": "arrival"}, "expected no warning"),
    ("leak", {"expect": "fragmentation"}, "no fragmentation hint"),
    ("leak", {"expect": "leak", "pid": 4242}, "no memory-leak hint for pid 4242"),
    ("warmup-staircase", {"expect": "leak"}, "no memory-leak hint"),
    ("warmup-staircase", {"expect": "oom", "t_oom_s": 800.0}, "no warning at all"),
    ("fragmentation", {"expect": "healthy"}, "expected no warning"),
    ("fragmentation", {"expect": "burst"}, "unknown expect"),
])
def test_the_checker_fails_what_the_scenarios_do_not_show(simulated, name, entry, says):
    problems = expectations.check(simulated[name], entry)
    assert problems and says in " ".join(problems)


def test_a_fragmentation_hint_without_the_probes_figures_fails():
    report = {"schema": "gpuwatch.report/1", "hints": [
        {"code": "fragmentation", "severity": "warning", "pid": 7, "first_seen_s": 30.0,
         "title": "pid 7 holds 3 GiB more than its budget",
         "detail": "it holds 9 GiB; its budget peaks at 6 GiB"}]}
    assert "probe's allocator figures" in " ".join(
        expectations.check(report, {"expect": "fragmentation"}))


# ---------------------------------------------------------------- the importer refuses
def _run_folder(tmp: Path, mode: str, session: Path) -> Path:
    out = tmp / mode
    (out / "sessions").mkdir(parents=True)
    target = out / "sessions" / session.name
    target.write_bytes(session.read_bytes())
    (out / "summary.json").write_text(json.dumps({
        "mode": mode, "gpu": {"name": "NVIDIA H100 80GB HBM3"}, "phases": {"oom": {
            "session": f"sessions/{session.name}", "entry": {
                "expect": "oom", "pid": 71310, "t_oom_s": 492.0,
                "died_of_out_of_memory": True}}}}))
    return out


def test_the_importer_never_imports_a_dry_run_or_a_simulated_session(tmp_path, capsys):
    session = _record(tmp_path, "oom-ramp", "--duration", "30")
    dest = tmp_path / "dest"
    assert import_results.main([str(_run_folder(tmp_path, "dry-run", session)),
                                "--dest", str(dest)]) == 2
    assert "a dry run never is" in capsys.readouterr().err
    assert import_results.main([str(_run_folder(tmp_path, "real", session)),
                                "--dest", str(dest)]) == 2
    assert "not a real driver through NVML" in capsys.readouterr().err
    assert not dest.exists() or not any(dest.iterdir())


def _as_if_real(session: Path, gpu: str) -> Path:
    """A copy of a simulated session that says it came from NVML on ``gpu`` (only ever
    in a temporary folder: it exercises the importer's path for a real run)."""
    import sqlite3

    copy = session.with_name("real-" + session.name)
    copy.write_bytes(session.read_bytes())
    with sqlite3.connect(copy) as db:
        db.execute("UPDATE session SET backend_kind = 'nvml', scenario = NULL")
        db.execute("UPDATE gpu SET name = ?", (gpu,))
    return copy


def test_the_importer_compacts_lists_and_replays_a_real_run(tmp_path, capsys):
    gpu = "NVIDIA H100 80GB HBM3"
    oom = _as_if_real(_record(tmp_path, "oom-ramp"), gpu)
    calm = _as_if_real(_record(tmp_path, "warmup-staircase", "--duration", "300"), gpu)
    out = tmp_path / "run"
    (out / "sessions").mkdir(parents=True)
    for src in (oom, calm):
        (out / "sessions" / src.name).write_bytes(src.read_bytes())
    (out / "summary.json").write_text(json.dumps({
        "mode": "real", "gpu": {"name": gpu, "driver": "550.54.15"}, "figures": {},
        "phases": {
            "oom": {"session": f"sessions/{oom.name}", "wall_s": 500, "ended": "ended",
                    "entry": {"expect": "oom", "pid": 71310, "t_oom_s": 492.0,
                              "died_of_out_of_memory": True}},
            "healthy": {"session": f"sessions/{calm.name}", "entry": {"expect": "healthy"}},
            "leak": {"session": f"sessions/{calm.name}",
                     "entry": {"expect": "leak", "pid": 1}}}}))
    doc = tmp_path / "real-gpu.md"
    doc.write_text(f"before\n{import_results.BEGIN}\nold\n{import_results.END}\nafter\n")
    dest = tmp_path / "dest"
    assert import_results.main([str(out), "--dest", str(dest), "--doc", str(doc)]) == 0
    said = capsys.readouterr().out
    assert "not imported as a leak trace" in said and said.count(": ok") == 2
    listed = manifest.load(dest / "manifest.json")
    assert {e["expect"] for e in listed} == {"oom", "healthy"}
    assert all(e["gpu"] == gpu and (dest / e["file"]).stat().st_size < 10**6
               for e in listed)
    text = doc.read_text()
    assert "old" not in text and text.startswith("before") and "| oom |" in text
    # a second import of the same run replaces its entries, it does not add to them
    assert import_results.main([str(out), "--dest", str(dest), "--doc", str(doc)]) == 0
    assert len(manifest.load(dest / "manifest.json")) == 2


# ---------------------------------------------------------------- the manifest's reader
ENTRY = st.fixed_dictionaries(
    {"file": st.sampled_from(["a.gpuwatch.sqlite.gz", "b.gpuwatch.sqlite", "../x.gz", ""]),
     "workload": st.text(max_size=5), "gpu": st.sampled_from(
         ["NVIDIA H100 80GB HBM3", "NVIDIA Fake GPU 80GB", ""]),
     "driver": st.sampled_from(["580.95.05", "", None]),
     "expect": st.sampled_from([*expectations.EXPECTS, "crash", None])},
    optional={"t_oom_s": st.one_of(st.none(), st.booleans(), st.floats(), st.integers(),
                                   st.text(max_size=3)),
              "pid": st.one_of(st.none(), st.integers(), st.booleans())})
JSON = st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)


@given(st.one_of(JSON, st.fixed_dictionaries({"sessions": st.lists(ENTRY, max_size=4)})))
def test_a_manifest_is_accepted_whole_or_refused_with_a_reason(doc):
    try:
        entries = manifest.validate(doc)
    except manifest.ManifestError as exc:
        assert str(exc)
        return
    for e in entries:
        assert e["expect"] in expectations.EXPECTS
        assert "fake" not in e["gpu"].lower()
        assert (e["expect"] == "oom") == (e.get("t_oom_s") is not None)


@given(st.binary(max_size=200))
def test_a_manifest_file_of_any_bytes_is_read_or_refused(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("m") / "manifest.json"
    path.write_bytes(data)
    try:
        manifest.load(path)
    except manifest.ManifestError as exc:
        assert str(path) in str(exc) or "sessions" in str(exc)
