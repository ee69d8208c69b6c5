"""Names, command lines and users from other processes reach the terminal escaped."""

from __future__ import annotations

import json

from gpuwatch.cli import main

HOSTILE_SCENARIO = r'''
schema = "gpuwatch.scenario/1"
name = "hostile"
description = "Processes whose names try to act on the terminal."
duration_s = 60

[[gpus]]
name = "NVIDIA A100-SXM4-80GB"
memory_total = "80GiB"

[[processes]]
pid = 4242
gpu = 0
name = "py\u001b]0;owned\u0007thon"
cmdline = ["python", "train.py\r\u001b[2Kfake", "--x\nnext"]
user = "ev\u001b[8mil"
container = "c\u202eontainer"
memory = "10GiB"
'''


def test_snapshot_and_record_escape_control_characters(capsys, tmp_path):
    path = tmp_path / "hostile.toml"
    path.write_text(HOSTILE_SCENARIO, encoding="utf-8")
    assert main(["snapshot", "--demo", str(path)]) == 0
    out, _ = capsys.readouterr()
    assert main(["record", "--demo", str(path), "--time-scale", "max", "--duration", "5",
                 "--no-save"]) == 0
    out2, _ = capsys.readouterr()
    for text in (out, out2):
        assert "\x1b" not in text and "\x07" not in text and "\r" not in text
        assert "\u202e" not in text
    assert "\\x1b[2Kfake" in out and "\\u202e" in out and "ev\\x1b[8mi" in out
    # every line of the table is a line of its own: the newline in an argument is shown
    assert not any(line.startswith("next") for line in out.splitlines())


def test_json_keeps_the_exact_strings(capsys, tmp_path):
    path = tmp_path / "hostile.toml"
    path.write_text(HOSTILE_SCENARIO, encoding="utf-8")
    assert main(["snapshot", "--demo", str(path), "--json"]) == 0
    out, _ = capsys.readouterr()
    assert "\x1b" not in out                   # JSON escapes control characters itself
    proc = json.loads(out)["gpus"][0]["processes"][0]
    assert proc["name"] == "py\x1b]0;owned\x07thon"
