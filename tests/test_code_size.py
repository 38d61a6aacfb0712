"""The code's rooms: no module outside tests/ over 500 lines, no function there over 80 (decorators counted)."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _modules() -> list[str]:
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "*.py"], cwd=ROOT, capture_output=True, text=True,
                                check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked modules are not known")
    return [name for name in listed.stdout.split("\0")
            if name and not name.startswith("tests/") and (ROOT / name).is_file()]


def oversized(source: str, name: str) -> list[str]:
    """What in `source` (module `name`) is over the limits, one line each."""
    found = []
    lines = len(source.splitlines())
    if lines > MAX_MODULE_LINES:
        found.append(f"{name}: {lines} lines")
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            length = node.end_lineno - start + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{name}:{start} {node.name}: {length} lines")
    return found


def test_no_module_or_function_over_the_limits():
    modules = _modules()
    assert modules
    found = [line for name in modules for line in oversized((ROOT / name).read_text(encoding="utf-8"), name)]
    assert not found, "over the limits:\n" + "\n".join(found)


def test_the_check_sees_a_long_function_and_a_long_module():
    long_function = "def f():\n" + "    x = 1\n" * MAX_FUNCTION_LINES
    assert oversized(long_function, "m.py") == [f"m.py:1 f: {MAX_FUNCTION_LINES + 1} lines"]
    assert oversized("def f():\n" + "    x = 1\n" * (MAX_FUNCTION_LINES - 1), "m.py") == []
    assert oversized("x = 1\n" * (MAX_MODULE_LINES + 1), "m.py") == [f"m.py: {MAX_MODULE_LINES + 1} lines"]
