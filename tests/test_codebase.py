"""The codebase's own rules, checked on its source: seams between protocols and providers, no
import cycles, no benchmark figures in docstrings, documented public calls, docs that match
the settings and a README that stays short."""

from __future__ import annotations

import ast
import inspect
import io
import re
import tokenize
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

import monjyu
from monjyu.config import MonjyuConfig
from monjyu.embed.factory import PROVIDERS as EMBEDDERS
from monjyu.llm.factory import PROVIDERS as LLMS

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "monjyu"
SOURCES = sorted(PACKAGE.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in SOURCES}


def imported_modules(path: Path, type_checking: bool = False) -> set[str]:
    """The monjyu modules a file imports anywhere (module level or inside functions); imports
    under `if TYPE_CHECKING:` only with type_checking=True, since they never run."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test) and not type_checking:
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[:len(package.split(".")) - child.level + 1]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                for alias in child.names:
                    found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else target)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {m for m in found if m in MODULES}


# ---------------------------------------------------------------- seams
PROTOCOL_PACKAGES = ["embed", "llm", "store"]


@pytest.mark.parametrize("package", PROTOCOL_PACKAGES)
def test_protocol_modules_name_no_provider(package):
    """base.py holds the protocol; factory.py knows the providers (store/ is the model)."""
    folder = PACKAGE / package
    factory = folder / "factory.py"
    # A provider is what the factory imports only when it is asked for (inside a function).
    providers = set()
    for node in ast.walk(ast.parse(factory.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef):
            providers |= {f"monjyu.{package}.{n.module}" for n in ast.walk(node)
                          if isinstance(n, ast.ImportFrom) and n.level == 1 and n.module}
    assert providers, f"{factory} imports no provider module"
    base = folder / "base.py"
    named = imported_modules(base, type_checking=True) & providers
    assert not named, f"{base} imports provider modules {sorted(named)}"
    text = base.read_text(encoding="utf-8")
    for module in providers:
        assert module.rsplit(".", 1)[1] not in re.findall(r"\w+", text), f"{base} names {module}"


def _choices(model: type[BaseModel], field: str) -> set[str]:
    return set(typing.get_args(model.model_fields[field].annotation))


def test_every_provider_choice_is_registered():
    from monjyu.config import EmbeddingConfig, LLMConfig

    embed_choices, llm_choices = _choices(EmbeddingConfig, "provider"), _choices(LLMConfig, "provider")
    assert embed_choices and embed_choices == set(EMBEDDERS)
    assert llm_choices and llm_choices == set(LLMS) | {"none"}


def test_no_import_cycle_in_src():
    """Deferred imports (inside functions) count: they run too, only later; and so do the
    imports for type checking: a circle there is a circle in the design."""
    graph = {name: imported_modules(path, type_checking=True) for name, path in MODULES.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def walk(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                walk(nxt, path + [nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name, [name])


# The stages bottom up: a module imports only from its own package and from lower layers, never
# from one beside or above it. The root package (its public names, imported on first use, and
# __version__) is no layer.
LAYERS = [
    {"errors", "types", "schemas", "runtime", "kv", "models"},
    {"config"},
    {"access", "embed", "llm"},
    {"nlp"},
    {"query"},
    {"store", "ingest"},
    {"index", "eval"},
    {"levels"},
    {"retrieval"},
    {"engines"},
    {"facade"},
    {"api"},
    {"web", "mcp_server"},
    {"cli"},
]


def _package(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def test_no_import_climbs_a_layer():
    layer = {package: i for i, packages in enumerate(LAYERS) for package in packages}
    packages = {_package(name) for name in MODULES} - {"monjyu"}
    assert packages == set(layer), f"packages without a layer: {sorted(packages - set(layer))}"
    climbs = [f"{name} -> {target}" for name, path in MODULES.items() if name != "monjyu"
              for target in imported_modules(path, type_checking=True)
              if target != "monjyu" and _package(target) != _package(name)
              and layer[_package(target)] >= layer[_package(name)]]
    assert not climbs, "imports that climb a layer (or reach beside one):\n" + "\n".join(sorted(climbs))


# ---------------------------------------------------------------- the facade a newcomer can hold
# The modules a question passes through, from the doors to the rankers.
QUERY_PATH = ["api.py", "cli", "mcp_server.py", "web", "facade", "engines", "retrieval"]
MAX_MODULE_LINES = 600


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_on_the_query_path_is_over_600_lines():
    paths = [p for part in QUERY_PATH for p in ([PACKAGE / part] if part.endswith(".py")
                                                 else sorted((PACKAGE / part).rglob("*.py")))]
    assert len(paths) > 30
    long = {str(p.relative_to(PACKAGE)): _lines(p) for p in paths if _lines(p) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_the_facade_is_small():
    """Monjyu composes services (m.documents, m.papers, ...) instead of growing methods."""
    public = [name for name, _ in inspect.getmembers(monjyu.Monjyu, callable) if not name.startswith("_")]
    assert len(public) <= 15, public
    assert _lines(PACKAGE / "api.py") <= 300


# ---------------------------------------------------------------- docstrings
FIGURE = re.compile(r"bench/|\b(Recall|ans|doc|complete)@\w*[^\n.;]{0,40}?\b[01]\.\d{2,3}\b|\b0\.\d{2,3} ?-> ?0\.\d")


def _docstrings_and_comments(path: Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                out.append((getattr(node, "lineno", 1), doc))
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            out.append((token.start[0], token.string))
    return out


def test_no_docstring_or_comment_quotes_a_benchmark():
    """Figures go stale in code; they live on the benchmarks page (docs/benchmarks.md)."""
    found = [f"{path.relative_to(ROOT)}:{line}: {FIGURE.search(text).group(0)!r}"
             for path in SOURCES for line, text in _docstrings_and_comments(path) if FIGURE.search(text)]
    assert not found, "\n".join(found)


def _public_methods(cls: type) -> list[tuple[str, object]]:
    return [(name, member) for name, member in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_")]


def test_every_public_parameter_of_monjyu_is_documented():
    missing = []
    for name, method in _public_methods(monjyu.Monjyu) + [("__init__", monjyu.Monjyu.__init__)]:
        doc = inspect.getdoc(monjyu.Monjyu if name == "__init__" else method) or ""
        twin = re.search(r"async twin of `(\w+)`", doc)  # documented once, on the sync call
        if twin:
            doc += inspect.getdoc(getattr(monjyu.Monjyu, twin.group(1))) or ""
        params = [p for p in inspect.signature(method).parameters if p != "self"]
        missing += [f"Monjyu.{name}({p})" for p in params if not re.search(rf"`\*{{0,2}}{p}`|\b{p}\b", doc)]
    assert not missing, "undocumented parameters: " + ", ".join(missing)


# ---------------------------------------------------------------- docs and README
def _settings_keys(model: type[BaseModel], prefix: str = "") -> set[str]:
    keys = set()
    for name, field in model.model_fields.items():
        kind = field.annotation
        if inspect.isclass(kind) and issubclass(kind, BaseModel):
            keys |= _settings_keys(kind, f"{prefix}{name}.")
        else:
            keys.add(f"{prefix}{name}")
    return keys


def test_configuration_page_lists_every_setting():
    page = (ROOT / "docs" / "guides" / "configuration.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\|\s*`([a-z_.0-9]+)`", page, re.M))
    keys = _settings_keys(MonjyuConfig)
    assert not keys - listed, f"settings missing on the configuration page: {sorted(keys - listed)}"
    assert not listed - keys, f"the configuration page lists keys that do not exist: {sorted(listed - keys)}"


def test_readme_is_a_short_tour():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250
    assert not [i + 1 for i, line in enumerate(lines) if len(line) > 100]
    assert "../shared" not in "\n".join(lines)
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
