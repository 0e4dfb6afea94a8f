"""No import cycle between benchlang's modules, package ``__init__`` modules included.

import-linter's ``acyclic_siblings`` contract checks siblings inside a package; this checks the
whole graph. An edge is every import grimp finds (module level, inside functions and under
``TYPE_CHECKING`` alike), plus, for ``from PACKAGE import name``, an edge to ``PACKAGE``: that
statement runs the package's ``__init__`` and reads its namespace, so a package whose
``__init__`` imports the module back is a cycle even when ``name`` is a submodule.
"""

from __future__ import annotations

import re

import grimp

FROM = re.compile(r"\s*from\s+([\w.]+)\s+import\b")


def import_graph() -> dict[str, set[str]]:
    """Each benchlang module -> the benchlang modules it imports."""
    graph = grimp.build_graph("benchlang")
    edges: dict[str, set[str]] = {m: set() for m in graph.modules}
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            edges[importer].add(imported)
            for detail in graph.get_import_details(importer=importer, imported=imported):
                source = FROM.match(detail["line_contents"])
                if source and source[1] in edges and source[1] != importer:
                    edges[importer].add(source[1])
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules (first == last), or None: an iterative depth-first search
    that stops at the first edge back to a module on the current path."""
    done: set[str] = set()
    for root in sorted(edges):
        if root in done:
            continue
        path = [root]
        on_path = {root}
        stack = [iter(sorted(edges[root]))]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                stack.pop()
                finished = path.pop()
                on_path.discard(finished)
                done.add(finished)
                continue
            if step in on_path:
                return [*path[path.index(step) :], step]
            if step in done:
                continue
            path.append(step)
            on_path.add(step)
            stack.append(iter(sorted(edges[step])))
    return None


def test_the_cycle_finder_finds_a_planted_cycle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert find_cycle(edges) == ["a", "b", "c", "a"]
    edges["c"] = {"d"}
    assert find_cycle(edges) is None


def test_no_import_cycle_between_modules():
    edges = import_graph()
    assert "benchlang.stats.metric" in edges and len(edges) > 300
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
