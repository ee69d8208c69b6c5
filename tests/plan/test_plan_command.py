"""`gpuwatch plan`: presets, the JSON document, sorting, and exit codes for bad input."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpuwatch.plan.presets import PRESETS
from tests.cli_support import run, run_captured

GIB = 1 << 30


def plan_json(capsys, *argv: str) -> dict:
    code, out, err = run(capsys, "plan", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("name", list(PRESETS))
def test_each_preset_plans_and_its_recommended_regime_runs_faster_than_fp32(capsys, name):
    p = PRESETS[name]

    def h100_step(*precision: str) -> float:
        doc = plan_json(capsys, "--preset", name, "--gpu", "H100-80GB", "--no-prices",
                        *precision)
        return min(c["step"]["total_s"] for c in doc["configs"] if c["fits"])

    assert h100_step() < h100_step("--precision", "fp32")  # tensor cores
    doc = plan_json(capsys, "--preset", name)
    assert doc["schema"] == "gpuwatch.plan/1" and doc["model"] == p.model
    assert doc["dataset_samples"] == p.dataset_samples
    fits = [c for c in doc["configs"] if c["fits"]]
    assert fits, name
    for c in fits:
        assert c["micro_batch"] * c["grad_accum"] * c["layout"]["dp"] >= doc["global_batch"]
        assert c["peak_bytes"] <= c["memory_bytes"]
        assert c["step"]["bound"] in ("compute", "memory", "communication")
    assert doc["cloud"]["cheapest"]["cost_per_epoch"] > 0
    assert p.levers and p.recipe


def test_json_sorted_views(capsys):
    for key, field in (("time", lambda c: c["step"]["total_s"]),
                       ("memory", lambda c: c["peak_bytes"])):
        doc = plan_json(capsys, "--model", "gpt2", "--batch", "8", "--sort", key)
        values = [field(c) for c in doc["configs"] if c["fits"]]
        assert values == sorted(values)
    doc = plan_json(capsys, "--model", "gpt2", "--batch", "8", "--sort", "cost")
    costs = [o["cost_per_step"] for o in doc["cloud"]["options"]]
    assert costs == sorted(costs) and doc["cloud"]["cheapest"]["cost_per_step"] == costs[0]


def test_a_model_too_big_for_one_gpu_needs_several(capsys):
    doc = plan_json(capsys, "--model", "llama-3.1-8b", "--precision", "mixed-bf16",
                    "--batch", "1", "--seq", "2048", "--no-prices", "--gpu", "H100")
    by_count = {c["gpus"]: c for c in doc["configs"]}
    assert not by_count[1]["fits"]  # 16 bytes per parameter: 128 GB
    layout = by_count[8]["layout"]
    assert by_count[8]["fits"] and (layout["zero"] >= 1 or layout["tp"] > 1)  # sharded
    assert doc["cloud"] is None and doc["spot"] is None


def test_levers_come_cheapest_in_time_first(capsys):
    doc = plan_json(capsys, "--model", "gpt2-medium", "--batch", "16", "--seq", "1024",
                    "--precision", "fp32", "--no-prices")
    deltas = [lv["time_delta_s"] for lv in doc["levers"]]
    assert deltas == sorted(deltas)
    changes = {lv["change"]: lv for lv in doc["levers"]}
    assert changes["--precision amp-bf16"]["time_ratio"] < 1
    full = changes["--checkpointing full"]
    assert full["saves_bytes"] > 0 and full["time_ratio"] > 1


def test_text_output_names_units_and_what_the_roofline_ignores(capsys):
    code, out, _ = run(capsys, "plan", "--preset", "detection")
    assert code == 0
    assert "images/s/GPU" in out and "GiB" in out and "cheapest:" in out
    assert "The roofline ignores" in out and "Young's formula" in out


@pytest.mark.parametrize("argv, named", [
    (("--preset", "chess"), "unknown preset"),
    (("--model", "gpt2", "--sort", "price"), "--sort"),
    (("--model", "gpt2", "--efficiency", "0"), "--efficiency"),
    (("--model", "gpt2", "--efficiency", "nan"), "--efficiency"),
    (("--model", "gpt2", "--bandwidth-efficiency", "150%"), "--bandwidth-efficiency"),
    (("--model", "gpt2", "--capacity", "24GiB"), "--capacity"),
    (("--model", "gpt2", "--dataset", "-3"), "--dataset"),
    (("--model", "gpt2", "--gpu", "Z80"), "unknown GPU"),
    (("--model", "nope"), "unknown model"),
])
def test_bad_input_exits_2_naming_it(capsys, argv, named):
    code, out, err = run(capsys, "plan", *argv)
    assert code == 2 and out == ""
    assert err.startswith("gpuwatch plan: ") and named in err
    assert "Traceback" not in err


def test_a_bad_price_file_exits_2_naming_the_field(capsys, tmp_path):
    bad = tmp_path / "prices.toml"
    bad.write_text('schema = "gpuwatch.prices/1"\n[[instances]]\nname = "x"\ngpu = "H100"\n'
                   'gpus = 16\ncpu_memory = "1TiB"\non_demand_per_hour = 1\n')
    code, _, err = run(capsys, "plan", "--model", "gpt2", "--prices", str(bad))
    assert code == 2 and "instances[0].gpus must be between 1 and 8, not 16" in err


def test_a_custom_price_file_decides_the_cheapest(capsys, tmp_path):
    mine = tmp_path / "prices.toml"
    mine.write_text('schema = "gpuwatch.prices/1"\ncurrency = "EUR"\n'
                    '[[instances]]\nname = "cheap-4090"\ngpu = "RTX-4090"\ngpus = 1\n'
                    'cpu_memory = "64GiB"\non_demand_per_hour = 0.01\n')
    doc = plan_json(capsys, "--model", "gpt2", "--batch", "4", "--prices", str(mine))
    assert doc["cloud"]["currency"] == "EUR"
    assert doc["cloud"]["cheapest"]["instance"] == "cheap-4090"
    assert doc["cloud"]["cheapest"]["spot_cost_per_step"] is None


def test_more_gpus_than_samples_is_said_not_counted_as_out_of_memory(capsys):
    doc = plan_json(capsys, "--model", "gpt2", "--batch", "1", "--gpu", "RTX-4090",
                    "--no-prices")
    by_count = {c["gpus"]: c for c in doc["configs"]}
    assert by_count[1]["fits"] and by_count[1]["note"] is None
    for n in (2, 4, 8):  # PCIe card: no tensor parallelism; one sample for n replicas
        assert not by_count[n]["fits"] and "global batch of 1" in by_count[n]["note"]
    assert [c["gpus"] for c in doc["configs"]][-3:] == [2, 4, 8]  # listed last


def test_a_preset_fills_only_what_the_command_line_leaves_at_its_default(capsys):
    doc = plan_json(capsys, "--preset", "llm-finetuning", "--no-prices")
    p = PRESETS["llm-finetuning"]
    assert doc["precision"] == p.setup.precision and doc["seq"] == p.workload.seq
    assert doc["global_batch"] == p.workload.batch * p.workload.grad_accum
    assert doc["efficiency"]["compute"] == p.efficiency
    assert "NeMo" in doc["efficiency"]["source"]
    doc = plan_json(capsys, "--preset", "llm-finetuning", "--precision", "fp32",
                    "--efficiency", "30%", "--no-prices")
    assert doc["precision"] == "fp32" and doc["efficiency"]["compute"] == 0.3
    assert doc["efficiency"]["source"] == "--efficiency"


def test_the_published_lora_comparison_of_docs_plan_md(capsys):
    """docs/plan.md quotes this run against NeMo AutoModel's 12,473 tokens/s/GPU."""
    doc = plan_json(capsys, "--model", "llama-3.1-8b", "--precision", "bf16", "--lora", "16",
                    "--batch", "2", "--grad-accum", "16", "--seq", "4096", "--gpu",
                    "H100-80GB", "--no-prices", "--efficiency", "41%")
    (one,) = [c for c in doc["configs"] if c["gpus"] == 1]
    assert one["step"]["bound"] == "compute"
    assert one["tokens_per_s_per_gpu"] == pytest.approx(12_473, rel=0.15)


text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
               max_size=12)


@given(st.sampled_from(["--efficiency", "--bandwidth-efficiency", "--dataset", "--sort",
                        "--preset", "--batch", "--gpu"]), text)
def test_any_value_of_a_plan_option_runs_or_exits_2(option, value):
    code, out, err = run_captured(["plan", "--model", "gpt2", "--gpu", "T4", "--no-prices",
                                   option, value] if option != "--gpu" else
                                  ["plan", "--model", "gpt2", "--no-prices", option, value])
    assert code in (0, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert out == "" and err.startswith(("gpuwatch plan: ", "usage:"))


def test_a_model_beyond_one_node_says_how_many_gpus_it_needs(capsys):
    doc = plan_json(capsys, "--model", "llama-3.1-70b", "--precision", "mixed-bf16",
                    "--batch", "8", "--seq", "4096", "--checkpointing", "full",
                    "--gpu", "H100-80GB", "--no-prices")
    assert not any(c["fits"] for c in doc["configs"] if c["gpus"] <= 8)
    (need,) = doc["beyond_one_node"]
    # 70.6 B parameters × 16 bytes (mixed precision, AdamW) ≈ 1.13 TB: 14 × 80 GB and up,
    # in whole nodes of 8
    assert need["gpu"] == "H100-80GB" and need["min_gpus"] == need["min_gpus_zero3"] == 16
    (planned,) = [c for c in doc["configs"] if c["gpus"] > 8]
    assert planned["fits"] and planned["gpus"] == 16 and planned["nodes"] == 2
    assert planned["step"]["network_bytes_per_s"] == 50e9  # NDR 400 Gb/s per GPU
    assert need["reason"] is None


def test_a_preset_shows_its_fp32_and_recommended_estimates_and_its_levers(capsys):
    p = PRESETS["image-classification"]
    doc = plan_json(capsys, "--preset", p.name)
    preset = doc["preset"]
    assert preset["name"] == p.name and preset["levers"] == list(p.levers)
    fp32, recommended = preset["regimes"]
    assert fp32["precision"] == "fp32" and recommended["precision"] == p.setup.precision
    assert recommended["peak_bytes"] < fp32["peak_bytes"]  # 16-bit activations
    assert recommended["max_micro_batch_on_reference"] > fp32["max_micro_batch_on_reference"]
    code, out, _ = run(capsys, "plan", "--preset", p.name, "--no-prices")
    assert code == 0 and "fp32 21." in out and f"{p.setup.precision} (recommended)" in out
    assert "levers that matter: autocast" in out
    assert plan_json(capsys, "--model", "gpt2", "--no-prices")["preset"] is None


def test_the_text_names_each_data_sheet_and_its_figures_of_merit(capsys):
    code, out, _ = run(capsys, "plan", "--model", "gpt2", "--precision", "bf16",
                       "--no-prices")
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("  H100-80GB ") and "TB/s" in x)
    assert "3.35 TB/s" in line and "989 TFLOP/s bf16" in line and "ridge 295 FLOP/B" in line
    assert "NVIDIA H100 Tensor Core GPU data sheet" in line
