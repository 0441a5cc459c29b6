"""The layout is the process boundary, enforced from the imports (read with ast, nothing run):

- the engine side (engine/: the executor child) never imports the session side (session/,
  report/, plugin.py: the pytest process);
- the session side never imports the engine side, except session/fixtures.py in function
  bodies (fixtures that hand Paddle objects to a user's test in its own process);
- the shared modules (protocol, supervise, cases/, models/, modes/, verdict/, ...) import
  neither side;
- the session side imports neither numpy nor paddle at module level, directly or through
  what it imports at module level;
- no module runs code at import: definitions, constants and imports only (no statement
  beyond those, no call that starts a process or thread or touches files or the environment);
- no import cycles.

Each rule is shown to fail on a tree with a planted violation.
"""
import ast
import functools
import shutil
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_paddle_infer"
ROOT = "pytest_paddle_infer"
SESSION = ("session", "report", "plugin")
ENGINE = ("engine",)
TOOLS = ("diff",)  # a command-line tool of its own: may use both sides, nothing imports it
HEAVY = ("numpy", "paddle")
# what a module may not call at import: processes, threads, files, the clock, the environment
EFFECTFUL = {"os", "sys", "subprocess", "threading", "multiprocessing", "socket", "shutil",
             "tempfile", "time", "signal", "importlib", "atexit", "open", "exec", "eval", "print",
             "input", "Popen", "Thread", "environ", "getenv", "sched_getaffinity"}
DEFINING = {"Lock", "RLock", "local"}  # a lock made at import starts nothing


def modules(package: Path):
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def side(module: str) -> str:
    top = module.split(".")[1] if "." in module else ""
    if top in SESSION:
        return "session"
    if top in ENGINE:
        return "engine"
    if top in TOOLS:
        return "tool"
    return "shared"


def imports(module: str, path: Path):
    """(imported module or package, line, at module level) for every import in the file."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    top_level = {id(node) for node in tree.body}
    # imports in a top-level try (an optional dependency) run at import too
    top_level |= {id(n) for node in tree.body if isinstance(node, ast.Try) for n in ast.walk(node)}
    # imports inside `if TYPE_CHECKING:` never run
    checking = {id(n) for node in tree.body if isinstance(node, ast.If)
                and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING"
                for n in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in checking:
            continue
        level = id(node) in top_level
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno, level
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target, node.lineno, level
            for alias in node.names:  # `from package import submodule`
                yield f"{target}.{alias.name}", node.lineno, level


@functools.lru_cache(maxsize=None)  # one read per tree
def graph(package: Path):
    mods = modules(package)
    edges = {}
    for module, path in mods.items():
        edges[module] = [(t, line, level) for t, line, level in imports(module, path)
                         if t in mods and t != module or t.split(".")[0] in HEAVY]
    return mods, edges


def boundary_violations(package: Path):
    mods, edges = graph(package)
    found = []
    for module, targets in edges.items():
        mine = side(module)
        for target, line, level in targets:
            if target.split(".")[0] in HEAVY or target == ROOT:
                continue
            theirs = side(target)
            where = f"{module}:{line} imports {target}"
            if mine == "engine" and theirs == "session":
                found.append(f"{where}: the engine never imports the session side")
            elif mine == "session" and theirs == "engine" and (module != f"{ROOT}.session.fixtures" or level):
                found.append(f"{where}: the session side never imports the engine "
                             f"(only session/fixtures.py, in function bodies)")
            elif mine == "shared" and theirs in ("session", "engine", "tool"):
                found.append(f"{where}: a shared module imports a side ({theirs})")
    return found


def heavy_session_imports(package: Path):
    """Session-side modules whose module-level imports reach numpy or paddle."""
    mods, edges = graph(package)
    found = []
    for module in mods:
        if side(module) != "session":
            continue
        seen, stack, parent = {module}, [module], {}
        while stack:
            current = stack.pop()
            for target, line, level in edges[current]:
                if not level:
                    continue
                if target.split(".")[0] in HEAVY:
                    chain = [current]
                    while chain[-1] in parent:
                        chain.append(parent[chain[-1]])
                    found.append(f"{module} imports {target.split('.')[0]} at import: "
                                 f"{' <- '.join(chain)}:{line}")
                    stack = []
                    break
                if target not in seen:
                    seen.add(target)
                    parent[target] = current
                    stack.append(target)
    return found


def cycles(package: Path):
    """Import cycles among modules, module-level and function-level imports alike."""
    mods, edges = graph(package)
    succ = {m: sorted({t for t, _, _ in edges[m] if t in mods and not mods[t].name == "__init__.py"})
            for m in mods}
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]

    def strong(v):  # Tarjan
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in succ[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(succ):
        if v not in index:
            strong(v)
    return found


def import_time_code(package: Path):
    """Top-level statements that do something beyond defining: calls other than the defining
    ones, loops, with-blocks, bare expressions."""
    found = []
    for module, path in modules(package).items():
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef,
                                 ast.ClassDef)):
                continue
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue  # a docstring
            if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
                continue
            if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
                continue  # `if __name__ == "__main__":` runs only as a program
            if isinstance(node, ast.Try) and all(isinstance(n, (ast.Import, ast.ImportFrom, ast.Pass))
                                                 for n in node.body):
                continue
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                odd = [ast.unparse(c.func) for c in ast.walk(node) if isinstance(c, ast.Call)
                       and _call_names(c.func) & EFFECTFUL and not _call_names(c.func) & DEFINING]
                if odd:
                    found.append(f"{module}:{node.lineno} calls {', '.join(odd)} at import")
                continue
            found.append(f"{module}:{node.lineno} runs {type(node).__name__} at import")
    return found


def _call_names(func) -> set:
    """Every name in a called expression: ``subprocess.Popen`` -> {subprocess, Popen}."""
    return {getattr(n, "id", None) or getattr(n, "attr", None) for n in ast.walk(func)} - {None}


def test_the_package_keeps_the_process_boundary():
    assert boundary_violations(PACKAGE) == []


def test_the_session_side_imports_neither_numpy_nor_paddle():
    assert heavy_session_imports(PACKAGE) == []


def test_no_import_cycles():
    assert cycles(PACKAGE) == []


def test_no_module_runs_code_at_import():
    assert import_time_code(PACKAGE) == []


@pytest.fixture
def tree_copy(tmp_path):
    copy = tmp_path / ROOT
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def plant(copy: Path, relative: str, text: str, at_top: bool = True) -> None:
    path = copy / relative
    source = path.read_text()
    if at_top:
        path.write_text(source + "\n" + text + "\n")
    else:
        path.write_text(source + "\n\ndef planted():\n    " + text + "\n")


def test_an_upward_import_from_the_engine_is_found(tree_copy):
    plant(tree_copy, "engine/runner.py", "from ..session.items import build_cases")
    assert any("engine.runner" in v and "session.items" in v for v in boundary_violations(tree_copy))


def test_the_engine_in_a_session_function_is_found(tree_copy):
    plant(tree_copy, "session/summary.py", "from ..engine.runner import Runner", at_top=False)
    assert any("session.summary" in v and "engine.runner" in v for v in boundary_violations(tree_copy))


def test_a_shared_module_that_imports_a_side_is_found(tree_copy):
    plant(tree_copy, "verdict/compare.py", "from ..plugin import MARKERS", at_top=False)
    assert any("verdict.compare" in v and "plugin" in v for v in boundary_violations(tree_copy))


def test_numpy_reached_from_the_session_side_is_found(tree_copy):
    plant(tree_copy, "session/headers.py", "from ..verdict import compare")
    found = heavy_session_imports(tree_copy)
    assert any(v.startswith(f"{ROOT}.session.headers imports numpy") for v in found), found


def test_a_cycle_is_found(tree_copy):
    plant(tree_copy, "verdict/tolerances.py", "from . import compare", at_top=False)
    plant(tree_copy, "verdict/rows.py", "from . import tolerances", at_top=False)
    assert any(f"{ROOT}.verdict.rows" in c and f"{ROOT}.verdict.tolerances" in c
               for c in cycles(tree_copy))


def test_code_run_at_import_is_found(tree_copy):
    plant(tree_copy, "session/state.py", "import subprocess\nPROC = subprocess.Popen(['true'])")
    assert any("session.state" in v and "subprocess.Popen" in v for v in import_time_code(tree_copy))
