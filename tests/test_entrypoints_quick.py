"""The quick read of entry points (``entrypoints.declared_in``, no ``importlib.metadata`` at
import) finds what ``importlib.metadata`` finds: for every group of this installation, the same
names, values and distributions in the same order, and the same objects loaded for
benchlang's own groups (the plugins of plugins/ among them)."""

from __future__ import annotations

from importlib.metadata import entry_points

from benchlang.entrypoints import Declared, declared_in, entry_points_of


def _seen(points) -> list[tuple[str, str, str]]:
    return [(p.name, p.value, p.dist.metadata["Name"]) for p in points]


def test_every_group_reads_as_the_full_scan_does():
    groups = sorted(entry_points().groups)
    assert "benchlang.backends" in groups and "console_scripts" in groups
    assert all(isinstance(p, Declared) for p in declared_in("benchlang.backends")), (
        "the quick read fell back to the full scan here: the comparison would prove nothing"
    )
    for group in groups:
        assert _seen(declared_in(group)) == _seen(entry_points_of(group)), group


def test_benchlangs_groups_load_the_same_objects():
    for group in sorted(g for g in entry_points().groups if g.startswith("benchlang.")):
        quick, full = declared_in(group), entry_points_of(group)
        assert [p.load() for p in quick] == [p.load() for p in full], group
