"""Mutation testing per module (``make mutation``): run mutmut, print the kill-rate table.

``python bench/mutation_rates.py`` reads ``mutants/**/*.py.meta`` (mutmut 3) and prints one
row per mutated module: mutants run, killed by a failing test, killed by the CPU/wall
limit (a timeout), survived, and the kill rate ``(killed + timeouts) / run``. Mutants never
run (``not checked``, ``no tests``) are counted apart, not as killed.

``python bench/mutation_rates.py --run prefix diagnose providers.anthropic`` runs mutmut
once per named module, each against that module's own fast unit tests (:data:`TESTS`)
instead of the whole ``[tool.mutmut]`` selection: a mutant is run by the tests of the
selection that execute its function, and the selection's slower tests (analysis, fuzz,
redaction) execute every ``prefix``/``diagnose``/provider function, which would make each
mutant cost seconds more. The rates are therefore a lower bound for the full suite. Each
module's run starts from a fresh ``mutants/``; its table row is printed and appended to
``bench/out/mutation.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

FAILED = {1, 3}  # a test failed (3: pytest internal error with the mutant in place)
TIMEOUT = {36, 24, -24, 152, 255, -9}  # SIGXCPU at the limit; -9: SIGKILL one second later

WALL_SLACK = 10
_PROVIDER = "tests/providers/test_{}.py"
# module -> the unit tests that run its mutants (paths relative to the repo root)
TESTS: dict[str, list[str]] = {
    "prefix": ["tests/core/test_prefix.py", "tests/providers/test_token_scale.py"],
    "diagnose": [
        "tests/core/test_diagnose_causes.py",
        "tests/core/test_diagnosis.py",
        "tests/providers/test_rule_edges_anthropic.py",
    ],
    "providers.anthropic": [
        _PROVIDER.format("anthropic"),
        "tests/providers/test_anthropic_params.py",
        "tests/providers/test_rule_edges_anthropic.py",
    ],
    "providers.openai": [_PROVIDER.format("openai"), _PROVIDER.format("openai_rules")],
    "providers.google": [_PROVIDER.format("google"), _PROVIDER.format("google_rules")],
    "providers.deepseek": [
        _PROVIDER.format("deepseek"),
        _PROVIDER.format("deepseek_rules"),
        "tests/providers/test_token_scale.py",
    ],
    "providers.sglang": [_PROVIDER.format("sglang"), _PROVIDER.format("sglang_rules")],
    "providers.vllm": [_PROVIDER.format("vllm"), _PROVIDER.format("vllm_rules")],
    "providers.llamacpp": [_PROVIDER.format("llamacpp")],
    # the shared modules: the unit tests of the simulators that use them
    "providers._cache": [
        "tests/providers/test_token_scale.py",
        *[_PROVIDER.format(p) for p in ["anthropic", "openai", "openai_rules", "google"]],
        *[_PROVIDER.format(p) for p in ["google_rules", "deepseek", "deepseek_rules"]],
        _PROVIDER.format("cache"),
    ],
    "providers._base": [
        *[_PROVIDER.format(p) for p in ["anthropic", "openai_rules", "sglang", "vllm"]],
        _PROVIDER.format("base"),
    ],
    # the registry and the profiles: the architecture test of the provider facts
    "providers._profile": [
        "tests/architecture/test_provider_facts.py",
        _PROVIDER.format("simulate"),
        "tests/core/test_costs.py",
        _PROVIDER.format("registry"),
    ],
    "providers.__init__": [
        "tests/architecture/test_provider_facts.py",
        _PROVIDER.format("simulate"),
        _PROVIDER.format("registry"),
    ],
    "usage": ["tests/core/test_usage.py"],
    "redact": [
        "tests/core/test_redaction.py",
        "tests/formats/test_fuzz.py",
        "tests/core/test_redact_rules.py",
    ],
}


def classify(code: int | None) -> str:
    """The verdict of one mutmut exit code."""
    if code in FAILED:
        return "killed"
    if code in TIMEOUT:
        return "timeout"
    if code == 0:
        return "survived"
    return "not run"


def rates(root: Path = Path("mutants")) -> list[tuple[str, Counter[str]]]:
    """``(module, verdict counts)`` per mutated module."""
    rows = []
    for meta in sorted(root.rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"].values()
        module = str(meta.relative_to(root)).removesuffix(".meta")
        rows.append((module, Counter(classify(c) for c in codes)))
    return rows


HEADER = (
    "| module | mutants | killed by a failing test | killed by timeout | survived "
    "| kill rate | not run |\n|---|---:|---:|---:|---:|---:|---:|"
)


def row(module: str, counts: Counter[str]) -> str:
    """One markdown table row."""
    run = counts["killed"] + counts["timeout"] + counts["survived"]
    rate = f"{(counts['killed'] + counts['timeout']) / run:.0%}".replace("%", " %") if run else "-"
    return (
        f"| `{module}` | {run} | {counts['killed']} | {counts['timeout']} "
        f"| {counts['survived']} | {rate} | {counts['not run']} |"
    )


def run_module(module: str, children: int) -> None:
    """Run mutmut on one module against its own unit tests, from a fresh ``mutants/``."""
    path = "cacheviz/" + module.replace(".", "/") + ".py"
    # a package's own functions are named after the package (cacheviz.providers.x_ids)
    names = f"cacheviz.{module.removesuffix('.__init__')}.*"
    shutil.rmtree("mutants", ignore_errors=True)
    # mutmut reads [tool.mutmut] through configuration.config(); override two fields of
    # the loaded config in a child interpreter, then hand over to mutmut's own CLI. Its
    # wall-clock limit, (test time + constant) x multiplier, calls a slow run on a loaded
    # machine a timeout; the CPU-time limit (RLIMIT_CPU, twice that) does not depend on
    # the load, so the wall limit is stretched WALL_SLACK-fold and kept only as a backstop
    # for a mutant that blocks without using CPU.
    code = (
        "from mutmut import configuration\n"
        "from mutmut.workers import isolation\n"
        "c = configuration.config()\n"
        f"c.only_mutate = [{path!r}]\n"
        f"c.pytest_add_cli_args_test_selection = {TESTS[module]!r}\n"
        "wall = isolation.register_timeout\n"
        f"isolation.register_timeout = lambda pid, timeout_s: wall(pid, timeout_s * {WALL_SLACK})\n"
        "from mutmut.__main__ import cli\n"
        f"cli(['run', '--max-children', '{children}', '{names}'])\n"
    )
    subprocess.run([sys.executable, "-c", code], check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", nargs="+", metavar="MODULE", choices=sorted(TESTS))
    parser.add_argument("--max-children", type=int, default=1)
    args = parser.parse_args()
    if not args.run:
        print(HEADER)
        for module, counts in rates():
            print(row(module, counts))
        return
    out = Path("bench/out/mutation.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    for module in args.run:
        run_module(module, args.max_children)
        lines = [row(m, c) for m, c in rates()]
        print(HEADER, *lines, sep="\n")
        with out.open("a") as log:
            log.write("\n".join(lines) + f"  <!-- load {os.getloadavg()[0]:.1f} -->\n")


if __name__ == "__main__":
    main()
