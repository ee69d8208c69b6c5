"""The monitor's side of the probe: only the user's own, well-formed, fresh documents."""

from __future__ import annotations

import json
import os
import time

import pytest
from sim_support import make_scenario

from gpuwatch.core.probe_format import PROBE_SCHEMA, parse_probe_report, probe_report_to_json
from gpuwatch.telemetry.host import PsutilHost
from gpuwatch.telemetry.probes import ProbeDirectory


def doc(pid: int, published: float | None = None, **extra) -> dict:
    base = {"schema": PROBE_SCHEMA, "pid": pid,
            "published_at_s": time.time() if published is None else published,
            "model": {"class": "M", "parameters": 10, "parameter_bytes": 40},
            "allocator": {"allocated_bytes": 100, "reserved_bytes": 400,
                          "inactive_split_bytes": 50, "num_alloc_retries": 2}}
    base.update(extra)
    return base


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "probes"
    path.mkdir(mode=0o700)
    return path


def write(folder, name: str, content) -> None:
    data = content if isinstance(content, bytes) else json.dumps(content).encode()
    (folder / name).write_bytes(data)


def test_a_good_document_round_trips(folder):
    write(folder, "100.json", doc(100))
    report = ProbeDirectory(folder).read([100, 101])[100]
    assert report.model.parameters == 10 and report.allocator.cached_free_bytes == 300
    assert parse_probe_report(probe_report_to_json(report)) == report


@pytest.mark.parametrize(("name", "content", "why"), [
    ("200.json", b"\x00garbage{{", "unreadable"),
    ("201.json", {"schema": "something/else", "pid": 201}, "unreadable"),
    ("202.json", doc(999), "unreadable"),                              # names another pid
    ("203.json", doc(203, model={"parameters": -5}), "unreadable"),
    ("204.json", doc(204, allocator={"reserved_bytes": "lots"}), "unreadable"),
    ("205.json", b"[" * 300_000, "larger than"),
    ("206.json", doc(206, adaptive_batch={"micro_batch": -1}), "unreadable"),
    ("207.json", doc(207, adaptive_batch={"last_change": {"at_s": "soon"}}), "unreadable"),
    ("208.json", doc(208, adaptive_batch=[1, 2]), "unreadable"),
])
def test_hostile_documents_are_ignored_with_a_reason(folder, name, content, why):
    write(folder, name, content)
    pid = int(name.split(".")[0])
    reader = ProbeDirectory(folder)
    assert reader.read([pid]) == {}
    assert why in reader.rejected[pid]


def test_symlinks_and_other_owners_are_ignored(folder, tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps(doc(300)))
    os.symlink(target, folder / "300.json")
    write(folder, "301.json", doc(301))
    reader = ProbeDirectory(folder)
    if os.getuid() == 0:                          # only root can give a file away
        os.chown(folder / "301.json", 65534, 65534)
        assert reader.read([300, 301]) == {}
        assert reader.rejected[301] == "belongs to another user"
    else:
        assert 300 not in reader.read([300])
    assert reader.rejected[300] == "not a regular file"


def test_a_folder_open_to_others_is_not_read(folder):
    write(folder, "400.json", doc(400))
    os.chmod(folder, 0o777)
    assert ProbeDirectory(folder).read([400]) == {}


def test_the_backend_attaches_reports_to_live_processes_only(open_sim, folder):
    me = os.getpid()
    write(folder, f"{me}.json", doc(me))
    s = make_scenario(processes=[{"pid": me, "gpu": 0, "name": "me", "memory": "2GiB"}])
    backend = open_sim(s, host=PsutilHost(pid_namespace_isolated=False),
                       probes=ProbeDirectory(folder))
    snap = backend.sample()
    assert snap.probe(me).allocator.reserved_bytes == 400
    write(folder, f"{me}.json", doc(me, published=1.0))    # older than this process: a
    assert backend.sample().probe(me) is None               # recycled pid's leftover


def test_simulated_processes_publish_from_their_scenario(open_sim):
    from gpuwatch.telemetry.sim.catalog import resolve_scenario
    from gpuwatch.telemetry.sim.library import SimulatedNvml
    from gpuwatch.telemetry.sim.probes import ScenarioProbes

    scenario = resolve_scenario("fragmentation")
    backend = open_sim(scenario, at_s=600)
    backend._probes = ScenarioProbes(backend._lib)
    assert isinstance(backend._lib, SimulatedNvml)
    report = backend.sample().probe(66120)
    a = report.allocator
    assert a.reserved_bytes > 3 * a.allocated_bytes and a.inactive_split_bytes > 30 * 1024**3
    assert report.model.parameters == 354823168


def test_the_adaptive_batch_section_reads_back_and_describes_itself(folder):
    change = {"step": 40, "old_micro_batch": 16, "micro_batch": 8, "grad_accum": 4,
              "reason": "out-of-memory", "at_s": 1000.0}
    write(folder, "300.json", doc(300, adaptive_batch={
        "effective_batch": 32, "micro_batch": 8, "grad_accum": 4, "steps": 40,
        "changes": 1, "last_change": change}))
    report = ProbeDirectory(folder).read([300])[300]
    batch = report.adaptive_batch
    assert (batch.micro_batch, batch.grad_accum, batch.effective_batch) == (8, 4, 32)
    assert batch.describe(1120.0) == "micro-batch 8 × 4 (lowered 2 min ago: out of memory)"
    assert batch.describe(1030.0) == "micro-batch 8 × 4 (lowered 30 s ago: out of memory)"
    assert parse_probe_report(probe_report_to_json(report)) == report
