"""``benchlang replicate``: check a bundle, rerun or re-analyse it, and judge the replication.

The verdict per metric and configuration follows TriScale (Jacob et al., JSys 1(1) 2021,
§4.3 and §4.7): the published variability score bounds, with its confidence, where the series
KPIs of the experiment fall. Its bounds are order statistics x(r), x(s) of n series KPIs, so
a replication whose series KPIs come from the same distribution has a known,
distribution-free number of them inside: beta-binomial (Wilks 1942;
:mod:`benchlang.stats.replication`). It *disagrees* when so few of its k KPIs fall inside
that this count is unlikely (exact one-sided test at 5%, per metric and configuration).
Without a score (or without new series KPIs) the shift between the published and the new
trials decides: the stratified cluster-bootstrap interval of their ratio
(:mod:`benchlang.stats.two_sample`) excluding 1 is a disagreement. The shift is reported in
every case, and so are the host facts and the measured host state (governor, turbo, SMT,
ASLR, swap, isolated CPUs, virtualization: report.machine) that differ.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import attrs
import numpy as np

from benchlang import __version__, jsonin
from benchlang.app.publish.bundle import plugin_versions
from benchlang.app.publish.bundle_archive import extract, shown
from benchlang.app.publish.sandbox import sandboxed
from benchlang.app.stores import load_store
from benchlang.errors import UserError
from benchlang.report.diff import diff

FACTS_COMPARED = ("cpu_model", "cores", "kernel", "governor", "platform", "isolation")


@attrs.frozen
class OpenedBundle:
    root: Path
    experiment: str
    plan_hash: str
    spec: Path
    store: Path
    problems: tuple[str, ...]
    """Members whose hash or size differs, missing or unlisted: the bundle cannot be trusted."""
    version_notes: tuple[str, ...]
    """benchlang or plugin versions that differ from the bundle's (said, not fatal)."""
    signature: bytes | None = None


@attrs.frozen
class ConfigurationVerdict:
    metric: str
    configuration: str
    bounds: tuple[float, float] | None
    new_kpis: tuple[float, ...]
    ratio: float
    lower: float
    upper: float
    verdict: str
    why: str


@attrs.frozen
class Replication:
    verdicts: tuple[ConfigurationVerdict, ...]
    facts_differ: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def outcome(self) -> str:
        kinds = {v.verdict for v in self.verdicts}
        if "disagree" in kinds:
            return "disagree"
        if not kinds or "could not compare" in kinds:
            return "could not compare"
        return "agree"


def open_bundle(
    bundle: str | Path,
    workdir: str | Path,
    verify: Callable[[bytes, bytes | None], None] | None = None,
) -> OpenedBundle:
    """Extract ``bundle`` into ``workdir`` within limits (``app.publish.bundle_archive``), after
    ``verify(manifest, signature)`` accepted it, and check every member against the manifest
    and the versions against this installation."""
    extracted = extract(bundle, workdir, verify=verify)
    root, manifest = extracted.root, extracted.manifest
    return OpenedBundle(
        root,
        manifest["experiment"],
        manifest["plan_hash"],
        root / manifest["spec"],
        root / "data" / "store.sqlite",
        extracted.problems,
        tuple(_version_notes(root / "versions.json")),
        extracted.signature,
    )


def current_store(store: Path) -> str | None:
    """Bring the extracted copy of a bundle's store of an earlier schema to today's
    (``app.store_migrate``: copied, compared value by value, swapped in; the original kept
    beside it), so that a bundle published before a schema change still replicates; the
    bundle itself is untouched. What was done, or None when it had today's schema."""
    from benchlang.app.store_migrate import migrate_store

    migrated = migrate_store(store)
    if migrated.before == migrated.after:
        return None
    return (
        f"the bundle's store has store schema {migrated.before}: migrated to schema "
        f"{migrated.after} in the working copy ({migrated.trials} trials compared value by value; "
        "the bundle is unchanged)"
    )


def rerun(
    spec: Path, store: Path, seed: int, *, sandbox: Path | None = None, network: bool = False
) -> int:
    """Run ``spec`` with the published ``seed`` into ``store`` in a child ``benchlang run``
    (resuming it); with ``sandbox`` (the bundle's directory) under bubblewrap, that
    directory and the store's writable (``app.publish.sandbox``). Its exit status."""
    command = [
        sys.executable, "-m", "benchlang", "run", str(spec),
        "--store", str(store), "--seed", str(seed), "--quiet",
        *(["--resume"] if store.exists() else []),
    ]  # fmt: skip
    print(f"rerunning the plan: {' '.join(command[2:])}", flush=True)
    if sandbox is not None:
        command = sandboxed(command, [sandbox, store.parent], network=network)
        print(f"sandboxed: {' '.join(command[: command.index('--')])}", flush=True)
    return subprocess.run(command, cwd=spec.parent, check=False).returncode


def _version_notes(path: Path) -> list[str]:
    unreadable = ["versions.json is missing or malformed: versions not compared"]
    try:
        published = jsonin.loads(path.read_bytes())
    except (OSError, ValueError, UnicodeError):
        return unreadable
    fields = ("group", "name", "distribution", "version")
    plugins = published.get("plugins", []) if isinstance(published, dict) else None
    if not isinstance(plugins, list) or not all(
        isinstance(p, dict) and all(isinstance(p.get(k), str) for k in fields) for p in plugins
    ):
        return unreadable
    notes = []
    if published.get("benchlang") != __version__:
        notes.append(
            f"benchlang {shown(published.get('benchlang'), 40)} made the bundle; "
            f"this is {__version__}"
        )
    here = {(p["group"], p["name"]): p for p in plugin_versions()}
    for plugin in plugins:
        name, dist, version = (shown(plugin[k], 60) for k in fields[1:])
        mine = here.get((plugin["group"], plugin["name"]))
        if mine is None:
            notes.append(f"plugin {name} ({dist} {version}) is not installed here")
        elif mine["version"] != plugin["version"]:
            notes.append(f"plugin {name}: {dist} {version} published, {mine['version']} here")
    return notes


def judge(published: str | Path, replication: str | Path) -> Replication:
    """The verdict of a replication store against the published store (read-only)."""
    from benchlang.report.analysis import analyze

    try:
        old = load_store(published)
        old_kpis = {(a.metric, a.configuration): a for a in analyze(old)}
    except (sqlite3.Error, ValueError, TypeError, KeyError, IndexError) as err:
        raise UserError(
            f"the bundle's store {published} cannot be analysed "
            f"({type(err).__name__}: {shown(err, 80)}): a malformed bundle"
        ) from None
    new = load_store(replication)
    notes = []
    if old.plan.plan_hash != new.plan.plan_hash:
        notes.append("the replication's plan differs from the published one: matched by label")
    new_kpis = {(a.metric, a.configuration): a for a in analyze(new)}
    shifts = diff(old, new, ("published", "replication"))
    verdicts = []
    for metric in shifts.metrics:
        for row in metric.rows:
            key = (metric.metric, row.label)
            if key not in old_kpis or key not in new_kpis:
                continue
            verdicts.append(_verdict(old_kpis[key], new_kpis[key], row.interval))
    from benchlang.report.machine import state_differences

    facts = _facts_differ(old.hosts, new.hosts) + state_differences(
        old.host_states, new.host_states
    )
    return Replication(tuple(verdicts), tuple(facts), tuple(notes + list(shifts.warnings)))


ALPHA = 0.05


def _verdict(old, new, shift) -> ConfigurationVerdict:
    from benchlang.stats.replication import inside_bounds_test

    score = old.analysis.variability
    bounds = (score.lower, score.upper) if score is not None and score.enough else None
    kpis = tuple(s.kpi.value for s in new.analysis.series if s.kpi.enough)
    excludes_one = not shift.descriptive_only and (shift.lower > 1 or shift.upper < 1)
    if bounds is not None and kpis:
        test = inside_bounds_test(
            np.array(kpis), *bounds, score.rank_lower, score.rank_upper, score.n
        )
        verdict = "disagree" if test.p_value < ALPHA else "agree"
        why = (
            f"{test.inside} of {test.k} new KPIs inside the published score "
            f"[x({test.rank_lower}), x({test.rank_upper})] of {test.n} series, which holds "
            f"{test.expected_coverage:.0%} of KPIs on average (Wilks; p = {test.p_value:.3g})"
        )
    elif not shift.descriptive_only:
        verdict = "disagree" if excludes_one else "agree"
        why = ("no published variability score" if bounds is None else "no new series KPIs") + (
            "; the shift is significant" if excludes_one else "; the shift is not significant"
        )
    else:
        verdict = "could not compare"
        why = "no published variability score and too few units for a shift interval"
    return ConfigurationVerdict(
        old.metric, old.configuration, bounds, kpis, shift.ratio, shift.lower, shift.upper,
        verdict, why,
    )  # fmt: skip


def _facts_differ(old: dict, new: dict) -> list[str]:
    def values(hosts: dict, key: str) -> set[str]:
        return {str(f[key]) for f in hosts.values() if key in f}

    out = []
    for key in FACTS_COMPARED:
        a, b = values(old, key), values(new, key)
        if a and b and a != b:
            out.append(f"{key}: {', '.join(sorted(a))} published, {', '.join(sorted(b))} here")
    return out
