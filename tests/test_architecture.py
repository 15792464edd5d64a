"""The layout keeps its promises (docs/architecture.md, whose table of the parts gives each
unit's layer and imports as the code has them): layers import downwards only, modules
import each other without cycles, adapters, the server and the CLI use the
public API, and the core imports no framework. (Long classes and functions are a
report, not a test: `python3 run.py sizes`.)"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import truemem_core

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "truemem_core"
ADAPTERS = ROOT / "truemem_integrations"
SERVER = ROOT / "truemem_server"
PACKAGES = (CORE, ADAPTERS, SERVER)
# The application inside the core's tree: the command line (its commands, the demo, the
# importers). It uses the public API, as the server does, and its own modules.
APPLICATIONS = ("truemem_core.cli",)

# Each unit of the core and its layer: a unit may import its own modules and lower layers.
# docs/architecture.md draws the same table, with each unit's imports (a test checks).
LAYERS: dict[str, int] = {
    "errors": 0, "records": 0,
    "settings": 1, "_validation": 1, "_bridge": 1,
    "embeddings": 2, "language": 2,
    "storage": 3,
    # the knowledge graph is a foundation of memory and search, not a plug-in above them:
    # a memory's graph facts end with it in the same transaction (graph.superseded,
    # graph.erasure) and the hybrid search runs the graph channel (graph.channel)
    "graph": 4,
    "search": 5,
    "memory": 6, "synthesis": 6,
    "conversation": 7,
    "jobs": 8,
    "_users": 9,
    "_core": 10,
    "_graph_client": 11, "_items_client": 11, "_sessions_client": 11, "_admin_client": 11,
    "_client": 12,
    "__init__": 13,
    "cli": 14,  # the `truemem` command, its demo and importers: an application on the core
}
FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "llama_index", "fastapi", "starlette")


def _modules(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*.py")):
        if "migrations" not in path.parts:  # migrations are frozen history
            yield path


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """(line, absolute module, names) of every ``from … import …`` in the file."""
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(
        ".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield node.lineno, module, [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []


def test_every_unit_of_the_core_has_a_layer() -> None:
    units = {_unit(_module_name(path)) for path in _modules(CORE)}
    assert units == set(LAYERS), "add the new unit to LAYERS and docs/architecture.md"


def _unit_imports(unit: str) -> set[str]:
    """The other units of the core that ``unit``'s modules import."""
    return {_unit(module) for path in _modules(CORE) if _unit(_module_name(path)) == unit
            for _, module, _ in _imports(path)
            if module.startswith("truemem_core") and _unit(module) != unit}


def _documented_parts() -> list[tuple[int, list[str], set[str]]]:
    """(layer, units, imports besides the base) of each row of docs/architecture.md's
    table of the parts."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("## The parts", 1)[1].split("\n\n|", 1)[1].split("\n\n", 1)[0]
    rows = []
    for line in table.splitlines()[2:]:
        layer, units, _, imports = (cell.strip() for cell in line.strip("|").split(" | "))
        rows.append((int(layer), [u.strip("/") for u in re.findall(r"`([^`]+)`", units)],
                     set(re.findall(r"`([^`]+)`", imports))))
    return rows


def test_the_architecture_page_draws_the_real_layers_and_imports() -> None:
    base = {unit for unit, layer in LAYERS.items() if layer <= 1}
    rows = _documented_parts()
    assert sorted(u for _, units, _ in rows for u in units) == sorted(LAYERS)
    for layer, units, imports in rows:
        assert all(LAYERS[unit] == layer for unit in units), (units, layer)
        real = set().union(*map(_unit_imports, units)) - set(units) - base
        assert imports == real, f"{', '.join(units)} imports {sorted(real)}"


def test_layers_import_downwards_only() -> None:
    upward = []
    for path in _modules(CORE):
        unit = _unit(_module_name(path))
        for line, module, _ in _imports(path):
            if not module.startswith("truemem_core"):
                continue
            target = _unit(module)
            if target != unit and LAYERS[target] >= LAYERS[unit]:
                upward.append(f"{path.relative_to(ROOT)}:{line} ({unit}) imports {module}")
    assert not upward, "imports from a layer to one at or above it:\n" + "\n".join(upward)


def test_modules_import_each_other_without_cycles() -> None:
    """Across the core, the adapters and the server, imports inside functions too."""
    graph: dict[str, set[str]] = {}
    paths = [path for root in PACKAGES for path in _modules(root)]
    names = {_module_name(path) for path in paths}
    for path in paths:
        edges = graph.setdefault(_module_name(path), set())
        for _, module, imported in _imports(path):
            for candidate in [module, *(f"{module}.{name}" for name in imported)]:
                if candidate in names and candidate != _module_name(path):
                    edges.add(candidate)
    # a package's __init__ re-exporting its own modules is not a cycle through them
    for name, edges in graph.items():
        graph[name] = {e for e in edges if not name.startswith(e + ".")}
    done: set[str] = set()

    def visit(node: str, stack: list[str]) -> None:
        if node in stack:
            pytest.fail("import cycle: " + " -> ".join([*stack[stack.index(node):], node]))
        if node in done:
            return
        for target in sorted(graph.get(node, ())):
            visit(target, [*stack, node])
        done.add(node)

    for name in sorted(graph):
        visit(name, [])


def _is_application(module: str) -> bool:
    return any(module == app or module.startswith(app + ".") for app in APPLICATIONS)


def _private_imports(paths: list[Path], allowed: Callable[[str], bool]) -> list[str]:
    """Where the modules at ``paths`` import the core other than by its public names
    (``truemem_core.__all__``), unless ``allowed(module)``."""
    private = []
    for path in paths:
        for line, module, imported in _imports(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            if module.startswith("truemem_core.") and not allowed(module) and not (
                    imported and all(allowed(f"{module}.{name}") for name in imported)):
                private.append(f"{where} imports {module}")
            elif module == "truemem_core":
                private += [f"{where} imports {name}" for name in imported
                            if name not in truemem_core.__all__]
    return private


def test_adapters_use_only_the_public_api() -> None:
    private = _private_imports(list(_modules(ADAPTERS)), lambda module: False)
    assert not private, "adapters import internals:\n" + "\n".join(private)


def test_the_core_never_imports_the_server() -> None:
    found = [f"{path.relative_to(ROOT)}:{line} imports {module}"
             for path in _modules(CORE) for line, module, _ in _imports(path)
             if module.split(".")[0] == "truemem_server"]
    assert not found, "\n".join(found)


def test_the_server_uses_only_the_public_api() -> None:
    private = _private_imports(list(_modules(SERVER)), lambda module: False)
    assert not private, "the server imports internals:\n" + "\n".join(private)


def test_the_command_line_uses_only_the_public_api() -> None:
    cli = [path for path in _modules(CORE) if _is_application(_module_name(path))]
    assert cli, "APPLICATIONS names no module: update it to where the CLI now lives"
    private = _private_imports(cli, _is_application)
    assert not private, "the command line imports internals:\n" + "\n".join(private)


def test_the_core_imports_no_framework() -> None:
    found = [f"{path.relative_to(ROOT)}:{line} imports {module}"
             for path in _modules(CORE) for line, module, _ in _imports(path)
             if module.split(".")[0] in FRAMEWORKS]
    assert not found, "\n".join(found)


def test_every_module_says_its_job() -> None:
    silent = [str(path.relative_to(ROOT)) for root in (CORE, ADAPTERS, SERVER)
              for path in _modules(root)
              if not ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))]
    assert not silent, "modules without a docstring: " + ", ".join(silent)


# The write transactions that take no user's lock, and why (docs/architecture.md, "One
# lock order"): every other writer opens ``Database.writing``.
UNLOCKED_WRITES = {
    ("truemem_core.jobs.runner", "run"),  # a failed job's status: one statement
    ("truemem_core.jobs.handlers", "_finish"),  # a job's status: one statement
    ("truemem_core.storage.text_indexes", "merge_some"),  # SQLite's full-text indexes
    ("truemem_core.conversation.service", "_record"),  # SQLite: BEGIN IMMEDIATE serialises it
    # vectors across users, each stored only where its text is still the one embedded
    # (an edit meanwhile leaves it for the next pass); then the model
    ("truemem_core.memory.reembedding", "run"),
}


def test_every_writer_of_a_users_rows_takes_the_users_lock_first() -> None:
    unlocked, locking = set(), []
    for path in _modules(CORE):
        module = _module_name(path)
        if module == "truemem_core.storage.database":  # where ``writing`` takes the lock
            continue
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for call in ast.walk(function):
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
                    continue
                readonly = any(k.arg == "readonly" for k in call.keywords)
                if call.func.attr == "transaction" and not readonly:
                    unlocked.add((module, function.name))
                if call.func.attr in ("lock_user", "lock_users"):
                    locking.append(f"{module}.{function.name}")
    assert unlocked <= UNLOCKED_WRITES
    assert locking == [], "lock through Database.writing, as its first statement"


def _namespaces(memory: truemem_core.TrueMem) -> dict[str, object]:
    return {name: value for name, value in vars(memory).items() if not name.startswith("_")}


def test_the_front_door_is_small(tmp_path: Path) -> None:
    """``TrueMem`` keeps the calls every application makes (a sync and an async twin
    count as two); topics are namespaces (``memory.graph`` …), each counted as one."""
    memory = truemem_core.TrueMem(tmp_path / "front.db", preload=False)  # no I/O yet
    try:
        namespaces = _namespaces(memory)
        own = [name for name in dir(truemem_core.TrueMem) if not name.startswith("_")]
        assert sorted(namespaces) == ["admin", "graph", "items", "sessions", "syntheses"]
        assert len(own) + len(namespaces) <= 40, own
    finally:
        memory.close()


def _twins(owner: type) -> Iterator[tuple[str, Callable[..., object], Callable[..., object]]]:
    for name in dir(owner):
        if not name.startswith("_") and hasattr(owner, f"a{name}") and name != "close":
            yield name, getattr(owner, name), getattr(owner, f"a{name}")


def test_each_sync_method_is_derived_from_its_async_twin(tmp_path: Path) -> None:
    """One signature per operation: the sync method is ``sync_twin(a…)``, with the async
    one's parameters and docstring, so help() and IDEs show the same call."""
    import inspect

    memory = truemem_core.TrueMem(tmp_path / "twins.db", preload=False)
    try:
        owners = [truemem_core.TrueMem, *(type(n) for n in _namespaces(memory).values())]
    finally:
        memory.close()
    twins = [twin for owner in owners for twin in _twins(owner)]
    assert len(twins) > 40
    for name, sync, coro in twins:
        assert inspect.iscoroutinefunction(coro), name
        assert getattr(sync, "__wrapped__", None) is coro, name
        assert inspect.signature(sync) == inspect.signature(coro), name
        assert sync.__doc__ == coro.__doc__ and sync.__name__ == name, name


def test_the_search_filters_are_defined_once() -> None:
    """``SearchFilters`` names ``search``'s filters; the validator, the HTTP body and the
    LangChain retriever's options are that list, not copies of it."""
    import inspect

    from truemem_core.search.filters import FILTERS, make_filters
    from truemem_integrations.langchain.retriever import SEARCH_OPTIONS
    from truemem_server.models import SearchRequest

    assert set(inspect.signature(make_filters).parameters) == FILTERS
    assert set(SearchRequest.model_fields) - {"user_id", "query", "k", "mode"} == FILTERS
    assert FILTERS | {"k", "mode"} == SEARCH_OPTIONS
