"""mxrs's modules import each other one way: the import graph of ``python/mxrs`` has no cycle.

The graph is read from the source with ``ast``: every ``import`` and ``from ... import``, at
module level and inside functions alike (an import deferred into a function still closes a
cycle, it only hides it), except under ``if TYPE_CHECKING:``, which never runs. Importing
``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first, so those packages count as imported
too, unless they enclose the importing module (they are already being imported then). There is
no cycle even when the imports for type annotations count.
"""

import ast
import pathlib

import pytest

SOURCE = pathlib.Path(__file__).resolve().parent.parent / "python" / "mxrs"

OP_MODULES = [
    "contrib",
    "contrib.box",
    "contrib.control_flow",
    "contrib.deformable",
    "contrib.ops",
    "contrib.proposal",
    "contrib.resize",
    "conv",
    "correlation",
    "elementwise",
    "factorizations",
    "grad",
    "grad.graph",
    "grad.linear",
    "image",
    "indexing",
    "leaky",
    "linalg",
    "losses",
    "matmul",
    "nn",
    "normalization",
    "operators",
    "optimizer_ops",
    "optimizer_ops._common",
    "optimizer_ops.adagrad",
    "optimizer_ops.adam",
    "optimizer_ops.ftrl",
    "optimizer_ops.lamb",
    "optimizer_ops.lars",
    "optimizer_ops.rmsprop",
    "optimizer_ops.sgd",
    "optimizer_ops.signum",
    "padding",
    "precision",
    "random_pdf",
    "reduce",
    "sequence",
    "rnn",
    "roi",
    "shape",
    "spatial",
    "unary",
    "windows",
    "core",
    "core.array",
    "core.op",
    "core.rng",
    "core.special",
    "core.transfer",
]

#: The modules of mxrs.ndarray that stand on the NDArray class: the class itself, what makes
#: arrays, the sparse arrays (subclasses), the package namespace.
ABOVE_THE_CLASS = [
    "",
    "ndarray",
    "creation",
    "serialize",
    "random",
    "random_sample",
    "_internal",
    "_pending",
    "_failed",
    "sparse",
    "dlpack",
]


def _modules(root):
    """{dotted name: (path, is_package)} for every .py file below ``root`` (a package)."""
    out = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def _runtime_imports(tree, types=False):
    """Every import node of ``tree`` that can run (those under ``if TYPE_CHECKING:`` cannot),
    or with ``types`` every import node."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if not types and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph(root, types=False):
    """{module: {imported module of the same tree: line}} for the package at ``root``; with
    ``types``, the imports for type annotations count too."""
    mods = _modules(root)
    top = root.name
    known = set(mods) | {
        ".".join(p.relative_to(root.parent).with_suffix("").parts) for p in root.rglob("*.pyi")
    }
    graph = {}
    for name, (path, is_pkg) in mods.items():
        edges = graph[name] = {}
        here = name.split(".") if is_pkg else name.split(".")[:-1]
        for node in _runtime_imports(ast.parse(path.read_text(), str(path)), types):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = here[: len(here) - node.level + 1] if node.level else []
                pkg = ".".join(base + ([node.module] if node.module else []))
                # `from pkg import x` imports the submodule pkg.x when there is one
                targets = [
                    f"{pkg}.{a.name}" if f"{pkg}.{a.name}" in known else pkg for a in node.names
                ]
            for target in targets:
                if target.split(".")[0] != top:
                    continue
                parts = target.split(".")
                for i in range(1, len(parts) + 1):
                    dep = ".".join(parts[:i])
                    if dep in mods and not (name == dep or name.startswith(dep + ".")):
                        edges[dep] = min(edges.get(dep, node.lineno), node.lineno)
    return graph


def find_cycle(graph):
    """One cycle of ``graph`` as a list of modules (first == last), or None."""
    state = {}  # module -> 1 while on the path, 2 when done
    path = []

    def visit(mod):
        state[mod] = 1
        path.append(mod)
        for dep in sorted(graph.get(mod, ())):
            if state.get(dep) == 1:
                return path[path.index(dep) :] + [dep]
            if dep not in state:
                found = visit(dep)
                if found:
                    return found
        path.pop()
        state[mod] = 2
        return None

    for mod in sorted(graph):
        if mod not in state:
            found = visit(mod)
            if found:
                return found
    return None


def _describe(graph, cycle):
    steps = zip(cycle[:-1], cycle[1:], strict=True)
    return "; ".join(f"{a} imports {b} (line {graph[a][b]})" for a, b in steps)


def test_mxrs_imports_have_no_cycle():
    graph = import_graph(SOURCE)
    assert "mxrs.ndarray.ndarray" in graph and "mxrs.gluon.trainer" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + _describe(graph, cycle)


def test_mxrs_has_no_cycle_even_in_types():
    """A helper carved out of a class types against a narrow Protocol below it (``Named``,
    ``Layer``, ``Hybrid``, ``ParamOwner``, ``Rule``, ``Graph``, ``OpNode``), never against the
    class above it: no circle anywhere, annotations included."""
    graph = import_graph(SOURCE, types=True)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle (types included): " + _describe(graph, cycle)


def test_the_array_layer_has_no_cycle_even_in_types():
    """Op modules type against the array core, the core against the tape's narrow types, and
    the tape against its own Protocols: no circle, annotations included."""
    graph = import_graph(SOURCE, types=True)
    layer = [m for m in graph if m.startswith(("mxrs.ndarray", "mxrs.kernels"))]
    reach, todo = set(), layer + ["mxrs.autograd"]
    while todo:
        mod = todo.pop()
        if mod not in reach:
            reach.add(mod)
            todo.extend(graph.get(mod, ()))
    assert {"mxrs.ndarray.core.op", "mxrs.autograd", "mxrs.context"} <= reach
    sub = {m: {d: n for d, n in graph[m].items() if d in reach} for m in reach}
    cycle = find_cycle(sub)
    assert cycle is None, "import cycle: " + _describe(sub, cycle)


def test_the_layers_below_the_ndarray_class_do_not_import_it():
    graph = import_graph(SOURCE)
    for low in ["mxrs.autograd", "mxrs.context", "mxrs._backend", "mxrs.base"]:
        assert not [m for m in graph[low] if m.startswith("mxrs.ndarray")], low
    for name in OP_MODULES:
        deps = graph[f"mxrs.ndarray.{name}"]
        assert "mxrs.ndarray.ndarray" not in deps and "mxrs.ndarray" not in deps, name


def _imports_the_ndarray_class(path, name):
    """Whether module ``name`` (at ``path``) imports the NDArray class or its module anywhere,
    ``if TYPE_CHECKING:`` blocks included."""
    here = name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            if any(a.name == "mxrs.ndarray.ndarray" for a in node.names):
                return True
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            pkg = ".".join(base + ([node.module] if node.module else []))
            names = {a.name for a in node.names}
            if pkg == "mxrs.ndarray.ndarray" or (pkg == "mxrs.ndarray" and "NDArray" in names):
                return True
            if pkg == "mxrs.ndarray" and "ndarray" in names:
                return True
    return False


def test_every_module_of_ndarray_is_an_op_module_or_above_the_class():
    prefix = "mxrs.ndarray"
    names = {m[len(prefix) + 1 :] for m in _modules(SOURCE) if m.startswith(prefix)} | {""}
    above = {n for n in names if n.split(".")[0] in ABOVE_THE_CLASS}
    assert names - above == set(OP_MODULES)


def test_op_modules_never_name_the_ndarray_class():
    """Op modules type their arrays with ``ArrayCore`` (and ``ArrayT``), never with NDArray, not
    even under ``TYPE_CHECKING``: the class sits above them."""
    mods = _modules(SOURCE)
    creation = "mxrs.ndarray.creation"  # above the class: it makes NDArrays
    assert _imports_the_ndarray_class(mods[creation][0], creation)
    for name in OP_MODULES:
        path, _ = mods[f"mxrs.ndarray.{name}"]
        assert not _imports_the_ndarray_class(path, f"mxrs.ndarray.{name}"), name


def _tree(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "pkg"


@pytest.mark.parametrize(
    "files, expected",
    [
        # a plain cycle between two modules
        (
            {"__init__.py": "", "a.py": "from . import b\n", "b.py": "from .a import x\n"},
            ["pkg.a", "pkg.b", "pkg.a"],
        ),
        # the same cycle, hidden in a function
        (
            {
                "__init__.py": "",
                "a.py": "from . import b\n",
                "b.py": "def f():\n    from .a import x\n    return x\n",
            },
            ["pkg.a", "pkg.b", "pkg.a"],
        ),
        # importing a submodule runs its package's __init__, which imports the importer
        (
            {
                "__init__.py": "",
                "a.py": "from .sub.c import y\n",
                "sub/__init__.py": "from .d import z\n",
                "sub/c.py": "",
                "sub/d.py": "import pkg.a\n",
            },
            ["pkg.a", "pkg.sub", "pkg.sub.d", "pkg.a"],
        ),
    ],
)
def test_the_checker_finds_cycles(tmp_path, files, expected):
    assert find_cycle(import_graph(_tree(tmp_path, files))) == expected


def test_the_checker_accepts_one_way_imports_and_type_checking_blocks(tmp_path):
    root = _tree(
        tmp_path,
        {
            "__init__.py": "from . import a, b\n",
            "a.py": "from . import b\nfrom .b import x\n",
            "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import y\n"
            "x = 1\n",
        },
    )
    graph = import_graph(root)
    assert graph["pkg.a"] == {"pkg.b": 1} and graph["pkg.b"] == {}
    assert find_cycle(graph) is None
