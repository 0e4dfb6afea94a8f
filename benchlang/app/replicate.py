"""``benchlang replicate``: check a bundle, rerun or re-analyse it, and judge the replication.

The verdict per metric and configuration follows TriScale (Jacob et al., JSys 1(1) 2021,
§4.3 and §4.7): a variability score over percentiles [p_l, p_h] bounds, with its confidence,
an interval that holds at least a fraction q = p_h - p_l of the series KPIs of the
experiment. A replication that agrees draws its series KPIs from the same distribution, so
each falls inside the published bounds with probability at least q; it *disagrees* when so
few of its k KPIs fall inside that Bin(k, q) makes the count unlikely (one-sided binomial
test at 5%). A median score (q = 0) says where the median lies, not where KPIs fall, so
it cannot judge a replication; then (and without a score) the shift between the published
and the new trials decides: the stratified cluster-bootstrap interval of their ratio
(:mod:`benchlang.stats.two_sample`) excluding 1 is a disagreement. The shift is reported in
every case, and so are the host facts that differ.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

import attrs

from benchlang import __version__
from benchlang.app.bundle import plugin_versions
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
    seed: int
    problems: tuple[str, ...]
    """Members whose hash or size differs, missing or unlisted: the bundle cannot be trusted."""
    version_notes: tuple[str, ...]
    """benchlang or plugin versions that differ from the bundle's (said, not fatal)."""


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


def open_bundle(bundle: str | Path, workdir: str | Path) -> OpenedBundle:
    """Extract ``bundle`` into ``workdir`` (refusing links and paths outside it) and check
    every member against the manifest and the versions against this installation."""
    bundle, workdir = Path(bundle), Path(workdir)
    try:
        with tarfile.open(bundle, "r:gz") as tar:
            names = tar.getnames()
            tops = {n.split("/", 1)[0] for n in names}
            if len(tops) != 1:
                raise UserError(f"{bundle} is not a benchlang bundle (several top directories)")
            tar.extractall(workdir, filter="data")
    except (OSError, tarfile.TarError, EOFError) as err:
        raise UserError(f"cannot read the bundle {bundle}: {err}") from None
    root = workdir / tops.pop()
    try:
        manifest = json.loads((root / "manifest.json").read_text())
        listed = {f["name"]: f for f in manifest["files"]}
    except (OSError, ValueError, KeyError, TypeError):
        raise UserError(f"{bundle} has no readable manifest.json: not a benchlang bundle") from None
    problems = []
    present = {n.split("/", 1)[1] for n in names if "/" in n} - {"manifest.json"}
    for name, entry in sorted(listed.items()):
        path = root / name
        if not path.is_file():
            problems.append(f"{name} is missing")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
            problems.append(f"{name} differs from its published SHA-256")
    problems += [f"{name} is not in the manifest" for name in sorted(present - listed.keys())]
    version_notes = _version_notes(root / "versions.json")
    with open(root / "plan.json", encoding="utf-8") as handle:
        seed = int(json.load(handle).get("seed", 0))
    return OpenedBundle(
        root,
        manifest["experiment"],
        manifest["plan_hash"],
        root / manifest["spec"],
        root / "data" / "store.sqlite",
        seed,
        tuple(problems),
        tuple(version_notes),
    )


def _version_notes(path: Path) -> list[str]:
    try:
        published = json.loads(path.read_text())
    except (OSError, ValueError):
        return ["versions.json is missing or unreadable: versions not compared"]
    notes = []
    if published.get("benchlang") != __version__:
        notes.append(
            f"benchlang {published.get('benchlang')} made the bundle; this is {__version__}"
        )
    here = {(p["group"], p["name"]): p for p in plugin_versions()}
    for plugin in published.get("plugins", []):
        mine = here.get((plugin["group"], plugin["name"]))
        if mine is None:
            notes.append(
                f"plugin {plugin['name']} ({plugin['distribution']} {plugin['version']}) "
                "is not installed here"
            )
        elif mine["version"] != plugin["version"]:
            notes.append(
                f"plugin {plugin['name']}: {plugin['distribution']} {plugin['version']} "
                f"published, {mine['version']} here"
            )
    return notes


def judge(published: str | Path, replication: str | Path) -> Replication:
    """The verdict of a replication store against the published store (read-only)."""
    from benchlang.report.analysis import analyze

    old, new = load_store(published), load_store(replication)
    notes = []
    if old.plan.plan_hash != new.plan.plan_hash:
        notes.append("the replication's plan differs from the published one: matched by label")
    old_kpis = {(a.metric, a.configuration): a for a in analyze(old)}
    new_kpis = {(a.metric, a.configuration): a for a in analyze(new)}
    shifts = diff(old, new, ("published", "replication"))
    verdicts = []
    for metric in shifts.metrics:
        for row in metric.rows:
            key = (metric.metric, row.label)
            if key not in old_kpis or key not in new_kpis:
                continue
            verdicts.append(_verdict(old_kpis[key], new_kpis[key], row.interval))
    facts = _facts_differ(old.hosts, new.hosts)
    return Replication(tuple(verdicts), tuple(facts), tuple(notes + list(shifts.warnings)))


ALPHA = 0.05


def _verdict(old, new, shift) -> ConfigurationVerdict:
    from benchlang.stats._orderstat import binom_cdf

    score = old.analysis.variability
    bounds = (score.lower, score.upper) if score is not None and score.enough else None
    mass = (score.percentile_high - score.percentile_low) / 100.0 if bounds else 0.0
    kpis = tuple(s.kpi.value for s in new.analysis.series if s.kpi.enough)
    excludes_one = not shift.descriptive_only and (shift.lower > 1 or shift.upper < 1)
    if bounds is not None and kpis and mass > 0:
        inside = sum(bounds[0] <= k <= bounds[1] for k in kpis)
        p = float(binom_cdf(inside, len(kpis), mass))
        verdict = "disagree" if p < ALPHA else "agree"
        why = (
            f"{inside} of {len(kpis)} new KPIs inside the published score, which holds at "
            f"least {mass:.0%} of KPIs (binomial p = {p:.3g})"
        )
    elif not shift.descriptive_only:
        verdict = "disagree" if excludes_one else "agree"
        why = (
            "the published score bounds the median, not where KPIs fall; "
            if bounds is not None
            else "no published variability score; "
        ) + ("the shift is significant" if excludes_one else "the shift is not significant")
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
