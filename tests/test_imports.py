"""No import cycles among the project's modules, counting imports inside functions (a cycle that only works
because its closing import waits inside a function is still a cycle for a reader)."""

import ast
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the packages from the ground up: a module imports from its own package and from the floors below it only. The
# design card's four packages are the lower floors; this project's own name, `beta_dqn`, holds the floors above
# them, each a package of its own here (`beta_dqn` itself, its `__init__`, is the top: the Python API's names)
FLOORS = (("replay_service", "meta_controller"), ("learner",), ("actors",), ("beta_dqn.files", "beta_dqn.version"),
          ("beta_dqn.configuration",), ("beta_dqn.reporting",), ("beta_dqn.driver",), ("beta_dqn.launcher",),
          ("beta_dqn",), ("bench",))
PACKAGES = tuple(package for floor in FLOORS for package in floor)
TOP_LEVEL = ("actors", "learner", "replay_service", "meta_controller", "beta_dqn")  # the import names installed
# the commands: each hands over to its module above by name when it runs (`learner.entry.run`), and imports nothing
# above the learner
COMMANDS = {"learner.main": "beta_dqn.launcher.main", "learner.report": "beta_dqn.reporting.report",
            "learner.evaluate": "beta_dqn.launcher.evaluate", "learner.search": "beta_dqn.launcher.search"}


def package_of(module: str) -> str:
    """The entry of `FLOORS` a module belongs to: the longest that is the module or a package above it."""
    return max((p for p in PACKAGES if module == p or module.startswith(p + ".")), key=len)


def modules() -> dict[str, Path]:
    found = {}
    for package in (*TOP_LEVEL, "bench"):
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the project's modules it imports anywhere in its file (`from pkg import mod` is mod)."""
    mods = modules()
    graph: dict[str, set[str]] = {name: set() for name in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names if a.name in mods}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    target = f"{node.module}.{alias.name}"
                    if target in mods:
                        graph[name].add(target)
                    elif node.module in mods:
                        graph[name].add(node.module)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_finder_finds_a_cycle_through_an_import_inside_a_function():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_of_the_project_is_part_of_an_import_cycle():
    graph = import_graph()
    # the walk sees the project
    assert "beta_dqn.configuration.flags" in graph
    assert "beta_dqn.configuration.cli" in graph["beta_dqn.launcher.grid"]
    found = cycles(graph)
    detail = "; ".join(" -> ".join(c) for c in found)
    assert not found, f"import cycles: {detail}"


def test_every_import_between_packages_points_down():
    """A module imports from its own package or from a lower floor of `FLOORS` (packages of one floor do not
    import each other): no import climbs, the commands' included: they hand over to the module they stand for
    by name."""
    graph = import_graph()
    floor = {package: n for n, packages in enumerate(FLOORS) for package in packages}
    upward = {(m, t) for m, targets in graph.items() for t in targets
              if package_of(m) != package_of(t) and floor[package_of(t)] >= floor[package_of(m)]}
    assert not upward, f"imports that do not point down: {sorted(upward)}"
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "docs"}
    assert packages == set(TOP_LEVEL), f"top-level packages: {sorted(packages)}, allowed: {sorted(TOP_LEVEL)}"
    inside = {f"beta_dqn.{p.parent.name}" for p in (ROOT / "beta_dqn").glob("*/__init__.py")}
    inside |= {f"beta_dqn.{p.stem}" for p in (ROOT / "beta_dqn").glob("*.py") if p.stem != "__init__"}
    assert inside == {p for p in PACKAGES if p.startswith("beta_dqn.")}, f"beta_dqn's parts: {sorted(inside)}"
    for command, target in COMMANDS.items():  # each runs the one module it stands for, by name
        source = (ROOT / (command.replace(".", "/") + ".py")).read_text()
        assert f'run("{target}")' in source, command
        assert graph[command] <= {"learner.entry"}, (command, graph[command])
    assert graph["learner.api"] == set()  # the Python API's former name: an ImportError naming the new one


# the torch modules shared by the methods' learning
LEARNING_HELPERS = ("learner.methods.td", "learner.methods.networks")


def acting_modules(graph) -> set[str]:
    """The methods' torch-free modules: the registry, the contracts, the shared ε-greedy helpers, the networks'
    numpy forward pass and every module of a method's folder but its learning."""
    return {m for m in graph if m == "learner.methods" or (m.startswith("learner.methods.")
                                                            and m not in LEARNING_HELPERS
                                                    and not m.endswith(".learning"))}


def test_actors_reach_into_the_methods_only_for_their_acting():
    graph = import_graph()
    torch_free = acting_modules(graph)
    assert {"learner.methods.contracts", "learner.methods.exploration", "learner.methods.numpy_net",
            "learner.methods.beta_dqn.acting"} <= torch_free
    reached = {(m, t) for m, targets in graph.items() if m.startswith("actors.") for t in targets
               if t.split(".")[0] == "learner" and t not in torch_free}
    assert not reached, f"actors import learning modules: {sorted(reached)}"
    inside = {(m, t) for m in torch_free for t in graph[m] if t.split(".")[0] == "learner"
              and t not in torch_free}
    assert not inside, f"acting modules import learning modules: {sorted(inside)}"


def test_an_actor_unpickling_its_ports_loads_no_torch(monkeypatch):
    """Every actor unpickles the Ray ports of its replay shard and of the bandit
    (`beta_dqn.driver.runtime._RemotePort`):
    the module they come from must not bring torch into the actor's process. A port travels as its actor's
    name, not its handle (a handle among a restartable actor's arguments makes Ray warn on every run that a
    restart could fail), and is looked up again where it lands."""
    import ray

    from beta_dqn.driver.runtime import _RemotePort

    port = pickle.dumps(_RemotePort("ReplayBuffer-7-ab12-3", object()))  # the handle itself is not pickled
    looked_up = []
    monkeypatch.setattr(ray, "get_actor", lambda name: looked_up.append(name) or f"the actor named {name}")
    back = pickle.loads(port)
    assert back.name == "ReplayBuffer-7-ab12-3" and looked_up == []  # looked up at its first use, not before
    assert back.handle == back.handle == "the actor named ReplayBuffer-7-ab12-3" and looked_up == [back.name]
    code = ("import sys, pickle; pickle.loads(sys.stdin.buffer.read()); "
            "assert 'torch' not in sys.modules, 'torch was imported'")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, input=port, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_acting_loads_no_torch():
    """Actors and the evaluator act with numpy: importing them (and every method's acting) loads no torch."""
    code = ("import sys, actors.actor, actors.evaluator, learner.methods as m; "
            "assert 'torch' not in sys.modules, 'torch was imported'; print(len(m.METHODS))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "6"


CONNECTING = ("redis", "ray", "torch")  # clients of servers and devices; and the project's modules that use them:
CONNECTING_MODULES = ("replay_service.local_redis", "replay_service.redis_replay", "replay_service.redis_shard",
                      "beta_dqn.driver", "beta_dqn.launcher")


def _imports_of(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_the_configuration_describes_and_checks_and_imports_nothing_that_connects():
    """`configuration` says what a run is and whether it is valid; reaching Redis, CUDA or a cluster is the
    driver's (`beta_dqn.driver.preflight`). No module of it imports a client (even inside a function), and importing all
    of it loads none (nor the replay backends' clients: they import theirs where they open or preflight)."""
    wrong = {f"{path.name}: {name}" for path in (ROOT / "beta_dqn" / "configuration").glob("*.py")
             for name in _imports_of(path)
             if name.split(".")[0] in CONNECTING or name.startswith(CONNECTING_MODULES)}
    assert not wrong, sorted(wrong)
    code = ("import sys, beta_dqn.configuration.flags, beta_dqn.configuration.cli, "
            "beta_dqn.configuration.config_file, beta_dqn.configuration.defaults; "
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {CONNECTING!r} "
            f"or m.startswith({CONNECTING_MODULES!r})))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


HEAVY = ("torch", "ray", "rliable", "matplotlib")
RUN, REPORT = "beta_dqn.launcher.main", "beta_dqn.reporting.report"


@pytest.mark.parametrize(("module", "argv", "said"), [
    (RUN, ["--help"], "usage: python -m learner.main"), (RUN, ["--env", "Pong"], "--env: unknown env 'Pong'"),
    (RUN, ["--lr", "-1"], "--lr: must be > 0"), (RUN, ["--device", "tpu"], "--device: 'tpu' is not one of"),
    (RUN, ["--algo", "dqn,nope"], "--algo: 'nope' is not one of"),
    (RUN, ["--seeds", "0-2", "--lr", "-1"], "--lr: must be > 0"),
    (RUN, ["--resume", "no-such-run"], "--resume: no checkpoint.pt in 'no-such-run'"),
    (RUN, ["--env", "CliffWalk", "--out", "{held}"], "already holds a run (config.json)"),
    (REPORT, ["--help"], "usage: python -m learner.report"), (REPORT, ["no-such-directory"], "no-such-directory"),
], ids=["run-help", "run-env", "run-lr", "run-device", "grid-algo", "grid-lr", "run-resume", "run-out", "report-help",
        "report-path"])
def test_help_and_a_mistake_answer_before_the_heavy_imports(tmp_path, module, argv, said):
    """`python -m learner.main --help` and a value that the command line of a run or a grid refuses (a name it
    does not know, a number out of range, a --resume directory without a checkpoint, an --out that holds a run)
    answer before torch and Ray are imported (torch alone takes seconds on 2 cores); `python -m learner.report
    --help` and a path that is not a run, before rliable (SciPy, pandas, arch)."""
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "config.json").write_text("{}")
    argv = [a.replace("{held}", str(tmp_path / "held")) for a in argv]
    code = (f"import sys; from {module} import main\n"
            "try:\n    status = main(sys.argv[1:])\nexcept SystemExit as e:\n    status = e.code\n"
            f"print('heavy:', sorted(set({HEAVY!r}) & set(sys.modules)), 'status:', status, file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
    status = 0 if argv == ["--help"] else 2
    assert proc.stderr.strip().splitlines()[-1] == f"heavy: [] status: {status}", proc.stderr
    assert said in proc.stdout + proc.stderr


METHOD_NAMES = re.compile(r"(?i)(?<![a-z])(lesson|bootstrapped|option|cliffwalk)(?![a-z])")
# where the shared code still names a method or an environment in its code (not its comments): the names it may
# use there, and why
NAMES_ALLOWED = {
    "beta_dqn/configuration/fields.py": ({"cliffwalk"}, "the help of --gamma names CliffWalk's default"),
    "replay_service/codec.py": ({"option"}, "schema 2 records, written before the extras, carry an option"),
    "beta_dqn/configuration/errors.py": ({"option"}, "argparse's own table of the flags it knows "
                                                    "(_option_string_actions), for a did-you-mean"),
    "beta_dqn/reporting/results.py": ({"bootstrapped", "lesson"}, "Table 1's column order is the paper's"),
    "beta_dqn/reporting/directory.py": ({"cliffwalk"},
                                     "an older report's figure (cliffwalk_visits.png), replaced with it"),
}


def named(path: Path) -> set[str]:
    """The method and environment names a module's code uses, lower case."""
    return {m.group(1).lower() for w in code_words(path) for m in METHOD_NAMES.finditer(w)}


def code_words(path: Path) -> set[str]:
    """The identifiers and string literals of a module's code: not its comments or docstrings."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    words = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            words.add(node.name)
        elif isinstance(node, ast.arg):
            words.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            words.add(node.value)
    return words


def test_only_the_methods_and_the_environment_module_name_a_method_or_an_environment():
    """A method's names (LESSON's options, Bootstrapped DQN's heads) live in its folder, an environment's in
    `actors/envs/` (the families): the shared code asks them (`Acting`, `EnvSpec`) instead of testing for a name."""
    assert METHOD_NAMES.search("lesson_tau") and METHOD_NAMES.search("CliffWalk") and not METHOD_NAMES.search("options")
    found = {}
    for path in sorted(modules().values()):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(("learner/methods/", "bench/")) or rel.startswith("actors/envs/"):
            continue
        extra = named(path) - NAMES_ALLOWED.get(rel, (set(), ""))[0]
        if extra:
            found[rel] = sorted(extra)
    assert not found, f"shared code that names a method or an environment: {found}"
    for rel, (names, _) in NAMES_ALLOWED.items():  # an entry whose reason is gone goes too
        assert named(ROOT / rel) == names, f"{rel} no longer needs all of its allowed names {sorted(names)}"
