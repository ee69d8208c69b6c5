"""Answers in hours and dollars, the readable text, and the planner's own options
(--gpus, --inter-node, --tokens, --epochs): parsed or refused with exit 2, never a
traceback."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwatch.commands.plan_cmd import parse_counts, parse_network, parse_tokens
from gpuwatch.plan.errors import PlanError
from tests.cli_support import run, run_captured


def plan_json(capsys, *argv: str) -> dict:
    code, out, err = run(capsys, "plan", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("text, gb_per_s", [
    ("400Gbit/s", 50), ("400Gbps", 50), ("400 Gb/s", 50), ("50GB/s", 50), ("3.125 GB/s", 3.125),
])
def test_inter_node_rates_in_bits_or_bytes(text, gb_per_s):
    assert parse_network(text) == pytest.approx(gb_per_s * 1e9)


@given(st.text(max_size=30))
@settings(max_examples=200)
def test_any_inter_node_text_parses_in_range_or_is_refused(text):
    try:
        value = parse_network(text)
    except PlanError as e:
        assert e.field == "--inter-node"
    else:
        assert 1e8 <= value <= 1e13 and math.isfinite(value)


@given(st.text(max_size=40))
@settings(max_examples=200)
def test_any_gpu_count_list_parses_in_range_or_is_refused(text):
    try:
        counts = parse_counts(text)
    except PlanError as e:
        assert e.field == "--gpus"
    else:
        assert counts == tuple(sorted(set(counts))) and all(1 <= n <= 16384 for n in counts)


@given(st.one_of(st.text(max_size=20), st.floats(allow_nan=True).map(str)))
@settings(max_examples=200)
def test_any_token_count_parses_in_range_or_is_refused(text):
    try:
        value = parse_tokens(text)
    except PlanError as e:
        assert e.field == "--tokens"
    else:
        assert 1 <= value <= 1e16


@pytest.mark.parametrize("text, value", [("300B", 3e11), ("2T", 2e12), ("1.5e12", 1.5e12),
                                         ("5,000,000", 5e6), ("15t", 1.5e13)])
def test_token_counts_with_their_suffixes(text, value):
    assert parse_tokens(text) == value


@pytest.mark.parametrize("argv, named", [
    (["--model", "gpt2", "--gpus", "0"], "--gpus"),
    (["--model", "gpt2", "--gpus", "99999"], "--gpus"),
    (["--model", "gpt2", "--inter-node", "fast"], "--inter-node"),
    (["--model", "gpt2", "--tokens", "lots"], "--tokens"),
    (["--model", "gpt2", "--epochs", "3"], "--epochs"),  # no data set to repeat
    (["--model", "resnet-50", "--tokens", "1B"], "--tokens"),  # images are not tokens
    (["--model", "gpt2", "--mode", "infer", "--tokens", "1B"], "--tokens"),
])
def test_bad_planner_options_exit_2_naming_them(capsys, argv, named):
    code, out, err = run(capsys, "plan", *argv)
    assert code == 2 and out == "" and named in err and "Traceback" not in err


@given(st.sampled_from(["--gpus", "--inter-node", "--tokens", "--epochs"]),
       st.text(max_size=12))
@settings(max_examples=60, deadline=None)
def test_any_value_of_the_new_options_runs_or_exits_2(option, value):
    code, _, err = run_captured(["plan", "--model", "gpt2", "--gpu", "T4", "--dataset",
                                   "1000", "--no-prices", option, value])
    assert code in (0, 2) and "Traceback" not in err


def test_training_job_hours_and_dollars(capsys):
    doc = plan_json(capsys, "--model", "llama-3.1-8b", "--batch", "64", "--seq", "4096",
                    "--gpu", "H100-80GB", "--tokens", "10B")
    assert doc["job_samples"] == pytest.approx(10e9 / 4096)
    for option in doc["cloud"]["options"]:
        steps = math.ceil(doc["job_samples"] / doc["global_batch"])
        assert option["job_steps"] == steps
        assert option["job_s"] == pytest.approx(steps * option["step_s"])
        assert option["job_cost"] == pytest.approx(steps * option["cost_per_step"])
        hours = option["job_s"] / 3600
        assert option["job_cost"] == pytest.approx(hours * option["on_demand_total_per_hour"])
    code, out, _ = run(capsys, "plan", "--model", "llama-3.1-8b", "--batch", "64", "--seq",
                       "4096", "--gpu", "H100-80GB", "--tokens", "10B")
    assert code == 0 and "job: 10.0 B tokens" in out and " USD" in out and "job " in out


def test_a_job_beyond_one_node_rents_whole_nodes(capsys):
    doc = plan_json(capsys, "--model", "llama-3.1-70b", "--batch", "128", "--seq", "4096",
                    "--precision", "fp8", "--gpu", "H100-80GB", "--gpus", "32", "--tokens", "1T")
    (config,) = [c for c in doc["configs"] if c["gpus"] == 32]
    assert config["fits"] and config["nodes"] == 4 and config["job_s"] > 0
    options = doc["cloud"]["options"]
    assert options and all(o["instances"] == 4 and o["gpus_rented"] == 32 for o in options)
    assert options[0]["provider"] == "Lambda"  # the cheapest 8× H100 node in the file


@pytest.mark.parametrize("gpu", ["H100-80GB", "H200"])
def test_the_price_file_has_8_gpu_nodes_from_at_least_three_clouds(gpu):
    from gpuwatch.plan.prices import read_prices

    nodes = [i for i in read_prices().instances if i.gpu == gpu and i.gpus == 8]
    assert len({i.provider for i in nodes}) >= 3 and all(i.fast_link for i in nodes)


def test_inference_time_to_first_token_and_price_per_million_tokens(capsys):
    doc = plan_json(capsys, "--model", "llama-2-7b", "--mode", "infer", "--batch", "64",
                    "--seq", "128", "--context", "256", "--precision", "fp8", "--gpu",
                    "H100-80GB", "--gpus", "1")
    assert doc["precision"] == "fp8-weights"  # as inference engines keep FP8 weights
    (c,) = doc["configs"]
    assert c["time_to_first_token_s"] == c["step"]["prefill_s"] > 0
    assert c["tokens_per_s_per_user"] == pytest.approx(1 / c["step"]["total_s"])
    assert c["tokens_per_s"] == pytest.approx(64 / c["step"]["total_s"])
    # 128 output tokens, each at the mean context or less: below the full-context step
    assert c["step"]["prefill_s"] < c["generation_s"] <= c["step"]["prefill_s"] \
        + 128 * c["step"]["total_s"]
    (option,) = doc["cloud"]["options"][:1]
    per_token = option["on_demand_per_hour"] / 3600 * c["generation_s"] / (64 * 128)
    assert option["cost_per_million_tokens"] == pytest.approx(per_token * 1e6)


def test_the_text_shows_what_fits_first_and_folds_the_rest(capsys):
    code, out, _ = run(capsys, "plan", "--model", "llama-3.1-8b", "--batch", "8", "--seq",
                       "2048", "--no-prices")
    assert code == 0
    fits = out.index("Fits (")
    folded = out.index("Does not fit:")
    assert fits < folded and "re-splits it over its data-parallel replicas" in out
    block = out[folded:].split("\n\n")[0].splitlines()[1:]
    names = [line.split()[0] for line in block]
    assert len(names) == len(set(names))  # one line per GPU type
    assert all(("out of memory" in line or "batch too small" in line) for line in block)


def test_levers_are_printed_when_nothing_holds_the_workload(capsys):
    code, out, _ = run(capsys, "plan", "--model", "llama-3.1-8b", "--seq", "16777216",
                       "--gpu", "T4", "--no-prices")
    assert code == 0 and "not even 16,384 GPUs hold it" in out
    assert "Levers, by the memory each saves on one GPU:" in out and "--checkpointing" in out


OLD_KEYS = {  # gpuwatch.plan/1 as it was first published: fields are added, none renamed
    "": {"schema", "model", "params", "mode", "global_batch", "seq", "image", "precision",
         "efficiency", "dataset_samples", "sort", "hardware", "configs", "cloud", "spot",
         "reference", "preset", "beyond_one_node", "levers", "ignores"},
    "hardware": {"gpu", "vendor", "memory_bytes", "bandwidth_bytes_per_s", "peak_flops",
                 "peak_format", "bandwidth_per_gb_per_s", "ridge_point_flops_per_byte",
                 "link", "link_bytes_per_s", "fast_domain_gpus", "source"},
    "configs": {"gpu", "gpus", "fits", "layout", "max_micro_batch", "micro_batch",
                "grad_accum", "peak_bytes", "memory_bytes", "step", "samples_per_s_per_gpu",
                "tokens_per_s_per_gpu", "note"},
    "step": {"total_s", "compute_s", "memory_s", "communication_s", "optimizer_s", "bound",
             "flops", "bytes_moved", "communication_bytes", "link_bytes_per_s", "offload_s",
             "offload_bytes", "prefill_s", "compute_format"},
    "options": {"instance", "provider", "gpu", "gpus_per_node", "gpus_used", "interconnect",
                "cpu_memory_bytes", "on_demand_per_hour", "spot_per_hour", "step_s",
                "cost_per_step", "spot_cost_per_step", "steps_per_epoch", "cost_per_epoch",
                "spot_cost_per_epoch"},
}


def test_the_json_keeps_every_field_it_had(capsys):
    doc = plan_json(capsys, "--model", "llama-3.1-70b", "--batch", "16", "--seq", "4096",
                    "--precision", "mixed-bf16", "--gpu", "H100-80GB", "--dataset", "1000")
    assert OLD_KEYS[""] <= set(doc) and doc["schema"] == "gpuwatch.plan/1"
    assert all(OLD_KEYS["hardware"] <= set(h) for h in doc["hardware"])
    assert all(OLD_KEYS["configs"] <= set(c) for c in doc["configs"])
    fitting = [c for c in doc["configs"] if c["fits"]]
    assert fitting and all(OLD_KEYS["step"] <= set(c["step"]) for c in fitting)
    assert {"dp", "tp", "zero", "text"} <= set(fitting[0]["layout"])
    assert all(OLD_KEYS["options"] <= set(o) for o in doc["cloud"]["options"])
    assert {"gpu", "min_gpus_zero3"} <= set(doc["beyond_one_node"][0])


def test_the_text_says_what_communication_hides_and_what_it_cannot(capsys):
    code, out, _ = run(capsys, "plan", "--model", "llama-3.1-70b", "--batch", "128", "--seq",
                       "8192", "--precision", "fp8", "--gpus", "64", "--gpu", "H100",
                       "--no-prices")
    assert code == 0 and "Fits (1 configuration, by time)" in out
    line = next(x for x in out.splitlines() if x.startswith("Communication on 64× H100-80GB"))
    assert "hidden behind compute" in line and "exposed: " in line
    exposed = line.split("exposed: ")[1]      # which collective is left depends on the layout
    assert re.search(r"(all-reduces|gathers|reduce-scatter|sends)\b.* \d[\d,.]* ms", exposed)
