"""Own-work time of `gpuwatch estimate` (parsing, estimate, solver, what-if, fit, output)."""

from __future__ import annotations

import argparse
import time

from gpuwatch.commands.estimate import add_estimate_parser, compute

CASES = [
    ["--model", "llama-3.1-8b", "--batch", "4", "--seq", "4096", "--gpu", "H100"],
    ["--model", "gpt2-large", "--batch", "8", "--seq", "1024", "--capacity", "32GiB", "--json"],
    ["--model", "resnet-50", "--batch", "64", "--fit"],
    ["--model", "llama-3.1-8b", "--gpu", "H100", "--fit"],
    ["--model", "mixtral-8x7b", "--mode", "infer", "--context", "32768", "--gpu", "H200", "--fit"],
]


def main() -> None:
    parser = argparse.ArgumentParser(prog="gpuwatch")
    add_estimate_parser(parser.add_subparsers())
    for argv in CASES:
        args = parser.parse_args(["estimate", *argv])
        compute(args)  # warm imports
        runs = 50
        t0 = time.perf_counter()
        for _ in range(runs):
            compute(args)
        ms = (time.perf_counter() - t0) / runs * 1000
        print(f"{ms:7.2f} ms  gpuwatch estimate {' '.join(argv)}")


if __name__ == "__main__":
    main()
