"""The tree's architecture as STYLE.md asks for it, checked: the pure core
(`src/core`) names neither SQLite nor the bindings; no two Rust modules
import each other, directly or round a circle (types two modules share live
in a module of their own); no module imports what its parent module's file
defines (a parent declares its children); the Spark layer imports PySpark only inside its
functions, so `import sqlite_dedup` works without it."""
import ast
import glob
import os
import re

import pipeline as P

SRC = os.path.join(P.ROOT, "src")


def code(path):
    """A Rust file's code before its test module, without comments."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.split(r"#\[cfg\(test\)\]\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+tests", text)[0]
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def rust_modules():
    """Every module of the crate: its path (`core::near_dups`) -> file."""
    modules = {}
    for folder, _, files in os.walk(SRC):
        for name in files:
            if name.endswith(".rs"):
                path = os.path.join(folder, name)
                parts = os.path.relpath(path, SRC)[:-3].split(os.sep)
                if parts[-1] in ("mod", "lib"):
                    parts = parts[:-1]
                modules["::".join(parts)] = path
    return modules


def imports(module, path, modules):
    """The other modules `module` names (`crate::x::y`, `super::y`,
    `self::y`), each resolved to the longest module path it starts with."""
    here = module.split("::") if module else []
    found = set()
    for kind, rest in re.findall(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)", code(path)):
        names = rest.split("::")[1:]
        if kind == "crate":
            base = names
        elif kind == "self":
            base = here + names
        else:
            parent = here[:-1]
            while names and names[0] == "super":
                names, parent = names[1:], parent[:-1]
            base = parent + names
        for end in range(len(base), 0, -1):
            target = "::".join(base[:end])
            if target in modules:
                # (A module's parent or child is not an import: the tree.)
                if not (module + "::").startswith(target + "::") and not target.startswith(module + "::"):
                    found.add(target)
                break
    return found


def circles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def graph():
    modules = rust_modules()
    return {m: imports(m, p, modules) for m, p in modules.items()}


def test_no_two_rust_modules_import_each_other():
    found = circles(graph())
    assert not found, "modules that import each other round a circle: " + "; ".join(
        " <-> ".join(c) for c in found)


def test_the_import_graph_is_read_right():
    # (So that the test above cannot pass by reading nothing.)
    g = graph()
    assert "core::near_dups" in g["core::pair_scan"]
    assert "sqlite::ground::trace" in g["sqlite::pipeline::run::plan"]
    assert "sqlite::pipeline::incremental::index_state" in g["sqlite::pipeline::incremental::changes"]
    assert "core::similarity" in g["core::near_dups"]
    # A circle is found when there is one.
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_core_knows_nothing_of_sqlite():
    for module, path in rust_modules().items():
        if module == "core" or module.startswith("core::"):
            text = code(path)
            assert "rusqlite" not in text and "crate::sqlite" not in text, path


def test_the_spark_layer_imports_pyspark_only_inside_functions():
    folder = os.path.join(P.ROOT, "python", "sqlite_dedup", "spark")
    files = [f for f in os.listdir(folder) if f.endswith(".py")]
    assert "__init__.py" in files
    for name in files:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in tree.body:  # module level only
            if isinstance(node, ast.Import):
                assert not any(a.name.split(".")[0] == "pyspark" for a in node.names), (name, node.lineno)
            if isinstance(node, ast.ImportFrom):
                assert (node.module or "").split(".")[0] != "pyspark", (name, node.lineno)


def parent_items(modules):
    """Each module's imports of items its parent module's own file defines
    (`super::fail` in a child of the module that defines `fail`): module ->
    the names. A parent declares its children; what they share lives in a
    module of their own."""
    found = {}
    for module, path in modules.items():
        here = module.split("::")
        text = code(path)
        # (An inline module's `super::` is this file: its own items.)
        own = set(re.findall(r"\b(?:fn|struct|enum|const|static|type|trait)\s+([A-Za-z_][A-Za-z0-9_]*)", text))
        for kind, rest in re.findall(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)", code(path)):
            names = rest.split("::")[1:]
            base = names if kind == "crate" else here[:-1] + names
            parent = "::".join(here[:-1])
            if len(base) > len(here) - 1 and "::".join(base[:len(here) - 1]) == parent \
                    and "::".join(base[:len(here)]) not in modules and parent in modules \
                    and base[len(here) - 1] not in own:
                found.setdefault(module, set()).add(base[len(here) - 1])
        # (`use super::{a, b}`: each name.)
        for group in re.findall(r"\buse\s+super::\{([^}]*)\}", code(path)):
            for name in [item.strip().split("::")[0].split()[0] for item in group.split(",") if item.strip()]:
                parent = "::".join(here[:-1])
                if parent + "::" + name not in modules and name not in ("self",):
                    found.setdefault(module, set()).add(name)
    return found


def test_no_module_imports_from_its_parent():
    """No file imports from one above it: a parent module holds its
    children's declarations (and re-exports), never what they import."""
    found = parent_items(rust_modules())
    assert not found, "; ".join(f"{m} imports {', '.join(sorted(n))} from its parent" for m, n in sorted(found.items()))


def test_imports_from_a_parent_are_seen():
    # (So that the test above cannot pass by reading nothing.)
    import tempfile
    folder = tempfile.mkdtemp()
    child = os.path.join(folder, "child.rs")
    with open(child, "w") as f:
        f.write("use super::{fail, sibling};\nfn f() { super::DedupError::new(); }\nmod imp { fn g() { super::f() } }\n")
    parent = os.path.join(folder, "mod.rs")
    with open(parent, "w") as f:
        f.write("mod child;\nmod sibling;\n")
    sibling = os.path.join(folder, "sibling.rs")
    with open(sibling, "w") as f:
        f.write("pub fn h() {}\n")
    found = parent_items({"a": parent, "a::child": child, "a::sibling": sibling})
    assert found == {"a::child": {"fail", "DedupError"}}, found


def python_imports():
    """The package's modules (`sqlite_dedup.spark.cli`) -> the package's
    modules each imports, at any level (a function's import too)."""
    root = os.path.join(P.ROOT, "python")
    modules = {}
    for folder, _, files in os.walk(os.path.join(root, "sqlite_dedup")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                parts = os.path.relpath(path, root)[:-3].split(os.sep)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                modules[".".join(parts)] = path
    graph = {}
    for module, path in modules.items():
        package = module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                # (`from . import _tasks` imports the module; `from
                # sqlite_dedup import _quoted`, the package's item.)
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for n in names:
                while n and n not in modules:
                    n = n.rsplit(".", 1)[0] if "." in n else ""
                if n and n != module:
                    found.add(n)
        graph[module] = found
    return graph


def test_no_two_python_modules_import_each_other():
    """Round a circle, at any level (`sqlite_dedup.cli` and
    `sqlite_dedup.spark.cli` did: what they share is in `_options`). A
    module's import of its own package (`from sqlite_dedup import x`) counts:
    a package's `__init__` imports none of its modules back."""
    g = python_imports()
    assert "sqlite_dedup._options" in g["sqlite_dedup.spark.cli"] and "sqlite_dedup.spark.cli" in g["sqlite_dedup.cli"]
    found = circles(g)
    assert not found, "; ".join(" <-> ".join(c) for c in found)


def floors_of(title, base):
    """The rooms of ARCHITECTURE.md's table under `## title`: module path
    (`base` + the folder or file named) -> its floor (1 the top)."""
    text = open(os.path.join(P.ROOT, "ARCHITECTURE.md"), encoding="utf-8").read()
    section = text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    floors = {}
    for floor, cell in re.findall(r"^\| (\d+) \| ([^|]*) \|", section, flags=re.M):
        for name in re.findall(r"`([^`]+)`", cell):
            if base == "sqlite::pipeline::" and name.startswith("pipeline/"):
                name = name[len("pipeline/"):]
            floors[base + name.rstrip("/").removesuffix(".rs").replace("/", "::")] = int(floor)
    return floors


def pipeline_floors():
    """The pipeline's rooms ("The pipeline's rooms")."""
    return floors_of("The pipeline's rooms", "sqlite::pipeline::")


def bindings_floors():
    """The rooms of `src/sqlite/` ("The bindings' rooms")."""
    return floors_of("The bindings' rooms", "sqlite::")


def room_of(module, floors):
    """The room (a key of `floors`) `module` is in, or None."""
    for room in sorted(floors, key=len, reverse=True):
        if module == room or module.startswith(room + "::"):
            return room
    return None


def upward_imports(g, floors):
    """Imports between the pipeline's rooms that do not point down a floor:
    (module, what it imports)."""
    bad = []
    for module, targets in g.items():
        here = room_of(module, floors)
        if here is None:
            continue
        for target in targets:
            there = room_of(target, floors)
            if there is not None and there != here and floors[there] <= floors[here]:
                bad.append((module, target))
    return sorted(bad)


def test_the_pipelines_rooms_import_only_rooms_below_them():
    """Every module of the pipeline is in a room of ARCHITECTURE.md's table,
    and imports only rooms on a lower floor (or its own room's files)."""
    g, floors = graph(), pipeline_floors()
    for room in floors:
        assert room in g, f"ARCHITECTURE.md names {room}, which is no module"
    homeless = [m for m in g if m.startswith("sqlite::pipeline::") and room_of(m, floors) is None]
    assert not homeless, f"modules in no room of ARCHITECTURE.md: {homeless}"
    bad = upward_imports(g, floors)
    assert not bad, "imports that point up or across a floor: " + "; ".join(f"{a} -> {b}" for a, b in bad)
    # (So that this cannot pass by reading nothing: the table is read, the
    # run imports the settings, and an import up would be seen.)
    assert floors["sqlite::pipeline::functions"] < floors["sqlite::pipeline::run"] \
        < floors["sqlite::pipeline::incremental"] < floors["sqlite::pipeline::scripts"]
    assert "sqlite::pipeline::incremental::run_kind" in g["sqlite::pipeline::run::plan"]
    assert upward_imports({"sqlite::pipeline::incremental::index": {"sqlite::pipeline::run::plan"}}, floors) == [
        ("sqlite::pipeline::incremental::index", "sqlite::pipeline::run::plan")]


def test_the_bindings_rooms_import_only_rooms_below_them():
    """Every module of src/sqlite is in a room of ARCHITECTURE.md's table of
    the bindings' rooms (but the layer's root, which declares them and
    registers everything), and imports only rooms on a lower floor (or its
    own room's modules)."""
    g, floors = graph(), bindings_floors()
    for room in floors:
        assert room in g, f"ARCHITECTURE.md names {room}, which is no module"
    homeless = [m for m in g if m.startswith("sqlite::") and room_of(m, floors) is None]
    assert not homeless, f"modules in no room of ARCHITECTURE.md: {homeless}"
    bad = upward_imports(g, floors)
    assert not bad, "imports that point up or across a floor: " + "; ".join(f"{a} -> {b}" for a, b in bad)
    # (Read right: the table is read, and an import up would be seen.)
    assert floors["sqlite::pipeline"] < floors["sqlite::vtab"] < floors["sqlite::url_learner"] \
        < floors["sqlite::settings"] < floors["sqlite::tables"] < floors["sqlite::ground"]
    assert "sqlite::ground::error" in g["sqlite::tables::schema"]
    assert upward_imports({"sqlite::vtab::near_dups": {"sqlite::pipeline::run::progress"}}, floors) == [
        ("sqlite::vtab::near_dups", "sqlite::pipeline::run::progress")]


def ancestor_items(modules):
    """Each module's uses of an item an ancestor module's own file defines
    (`crate::sqlite::register` from within `sqlite::pipeline`, `crate::X`
    of lib.rs): module -> the paths. A room calls nothing of the layer
    above it; what its children share lives in a module of their own."""
    found = {}
    for module, path in modules.items():
        here = module.split("::") if module else []
        # (An inline module's `super::` is this file: its own items.)
        own = set(re.findall(r"\b(?:fn|struct|enum|const|static|type|trait)\s+([A-Za-z_][A-Za-z0-9_]*)", code(path)))
        for kind, rest in re.findall(r"\b(crate|super)((?:::[A-Za-z_][A-Za-z0-9_]*)+)", code(path)):
            names = rest.split("::")[1:]
            if kind == "crate":
                base = names
            else:
                parent = here[:-1]
                while names and names[0] == "super":
                    names, parent = names[1:], parent[:-1]
                base = parent + names
            for end in range(len(base), -1, -1):
                target = "::".join(base[:end])
                if target in modules:
                    ancestor = target == "" or (module + "::").startswith(target + "::")
                    if ancestor and target != module and end < len(base) and module \
                            and not (kind == "super" and base[end] in own):
                        found.setdefault(module, set()).add("::".join(["crate"] + base[:end + 1]))
                    break
    return found


def test_no_module_uses_an_ancestors_items():
    found = ancestor_items(rust_modules())
    assert not found, "; ".join(f"{m} uses {', '.join(sorted(n))}" for m, n in sorted(found.items()))
    # (Seen when there: the layer's root called from a room, lib.rs's item from anywhere.)
    seen = ancestor_items({"": os.path.join(SRC, "lib.rs"), "sqlite": os.path.join(SRC, "sqlite", "mod.rs"),
                           "sqlite::pipeline::x": _written("fn f() { crate::sqlite::register(db); crate::VERSION; }")})
    assert seen == {"sqlite::pipeline::x": {"crate::sqlite::register", "crate::VERSION"}}, seen


def _written(text):
    import tempfile
    path = os.path.join(tempfile.mkdtemp(), "x.rs")
    with open(path, "w") as f:
        f.write(text)
    return path


def test_every_algorithm_module_says_what_it_computes_costs_and_follows():
    """Each module of src/core documents, as rapidfuzz-rs's indel.rs does,
    what it computes (its first paragraph), its cost (`Cost:`) and its
    reference (`Reference:`: the paper, peer or oracle it follows)."""
    missing = []
    for path in sorted(glob.glob(os.path.join(P.ROOT, "src", "core", "*.rs"))):
        if os.path.basename(path) == "mod.rs":
            continue
        doc = "\n".join(line[3:].strip() for line in open(path, encoding="utf-8") if line.startswith("//!"))
        lacks = [w for w in ("Cost:", "Reference:") if f"\n{w}" not in "\n" + doc]
        if not doc.strip() or lacks:
            missing.append((os.path.basename(path), lacks or ["a module doc"]))
    assert not missing, missing
