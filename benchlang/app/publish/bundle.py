"""``benchlang bundle``: everything a reader needs to check and rerun a published experiment,
in one deterministic archive (docs/replicate.md).

A gzip-compressed tar, not a zip: one compression stream over many similar text files, the
format reproducible-build tooling normalises (sorted names, fixed mtime/owner), and
``tar xzf`` everywhere. Determinism: members sorted by name, mtime 0, uid/gid 0, no owner
names, mode 0644, gzip header without name or time; the store is copied with SQLite's backup
API (page by page, so the same store gives the same bytes). The same store and spec files give
the same bundle bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import platform
import re
import sqlite3
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

import attrs

from benchlang import __version__
from benchlang.app.publish import signing
from benchlang.app.publish.bundle_archive import SIGNATURE
from benchlang.app.publish.signing import Signer
from benchlang.entrypoints import entry_points_of
from benchlang.errors import UserError
from benchlang.report.atomic import replacing
from benchlang.run.store import Store

PLUGIN_GROUPS = (
    "benchlang.backends",
    "benchlang.statistics",
    "benchlang.factors",
    "benchlang.importers",
)
_FROM_FILE = re.compile(r'\bfrom\s+file\s+"((?:[^"\\]|\\.)*)"')


@attrs.frozen
class Bundled:
    path: Path
    experiment: str
    plan_hash: str
    members: tuple[tuple[str, int, str], ...]
    """(name, size, sha256) of every member but the manifest."""
    notes: tuple[str, ...]
    signer: Signer | None = None
    """Who signed the manifest (``--sign``): the fingerprint a paper publishes."""


def files_read(spec_text: str) -> list[str]:
    """The files a spec reads (``... from file "F"``: host lists, request pools, profile
    data), relative to the spec's directory, in order of appearance."""
    lines = (line.split("#", 1)[0] if '"' not in line else line for line in spec_text.splitlines())
    return list(dict.fromkeys(m.group(1) for line in lines for m in _FROM_FILE.finditer(line)))


def plugin_versions() -> list[dict[str, str]]:
    """Every registered plugin with its distribution and version (benchlang's own included)."""
    rows = []
    for group in PLUGIN_GROUPS:
        for ep in entry_points_of(group):
            dist = ep.dist
            rows.append(
                {
                    "group": group,
                    "name": ep.name,
                    "distribution": dist.name if dist else "?",
                    "version": dist.version if dist else "?",
                }
            )
    return rows


def _store_bytes(path: Path) -> bytes:
    """The store as one SQLite file (WAL folded in), via the backup API, read-only."""
    with Store(path):
        pass  # refuses what is not a benchlang store, with the store's own message
    source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "store.sqlite"
        target = sqlite3.connect(copy)
        source.backup(target)
        target.execute("PRAGMA journal_mode=DELETE")
        target.close()
        source.close()
        return copy.read_bytes()


def _readme(experiment: str, spec_name: str, plan_hash: str, notes: Iterable[str]) -> str:
    extra = "".join(f"- {n}\n" for n in notes)
    return f"""# {experiment}: a benchlang bundle

This archive holds a performance experiment as it was run, so that you can check it and run
it again with benchlang (the version in `versions.json`).

- `spec/{spec_name}`: the experiment, in benchlang's language, and the files it reads;
- `plan.json`: the compiled plan (every trial: series, round, position, host, configuration,
  seed), hash `{plan_hash}`;
- `data/store.sqlite`: every trial as it ran (status, output tails, measures), and
  `data/trials.csv`, the same trials as a table;
- `record.md`, `record.json`, `record.tex`: the 12-parameter reproducibility record (when the
  spec has a KPI);
- `hosts.json`: the facts of the hosts the trials ran on; `machine.json` (when the spec has a
  machine block): the block and the host state measured at the run's start;
- `versions.json`: benchlang's version and every plugin's package and version;
- `manifest.json`: the SHA-256 of every file above, and `manifest.json.sig`, its OpenSSH
  signature, when the bundle is signed.

To check the bundle and rerun the experiment on your machine, then compare with these results
(TriScale's variability score, and a shift test per configuration):

    benchlang replicate {experiment}.benchlang.tar.gz

With `--analyze-only`, replicate checks the bundle and re-analyses the stored trials without
running anything. `benchlang results data/store.sqlite` and `benchlang analyze --store
data/store.sqlite` show the published results.

{extra}"""


def _record_members(store_path: Path, plan_hash: str) -> tuple[dict[str, bytes], list[str]]:
    from benchlang.app.analysis import record_of

    try:
        record = record_of(store_path, plan_hash)
    except UserError as err:
        return {}, [f"no reproducibility record: {err.message}"]
    return {
        "record.md": (record.to_markdown() + "\n").encode(),
        "record.json": (json.dumps(record.to_json(), indent=2, default=str) + "\n").encode(),
        "record.tex": (record.to_latex() + "\n").encode(),
    }, []


def _machine_member(store_path: Path, plan_hash: str) -> bytes | None:
    """``machine.json``: the spec's machine block and the host state measured at the run's
    start, with what ``--force`` went past (report.machine); None without a machine block."""
    from benchlang.report.data import experiment_of
    from benchlang.report.machine import record_json, stored_machine

    with Store(store_path) as store:
        plan = store.plan(plan_hash)
        states, forced = stored_machine(store, plan_hash)
    document = record_json(experiment_of(plan), states, forced)
    if document is None:
        return None
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode()


def _trials_csv(store_path: Path, plan_hash: str) -> bytes:
    from benchlang.app.stores import load_store
    from benchlang.report.exports import results_trials_csv

    return results_trials_csv(load_store(store_path, plan_hash, all_phases=True)).encode()


def bundle(
    store_path: str | Path,
    output: str | Path,
    *,
    spec_dir: str | Path | None = None,
    plan_hash: str | None = None,
    include: Iterable[str | Path] = (),
    sign: str | Path | None = None,
) -> Bundled:
    """Write the bundle of a stored plan to ``output``.

    ``spec_dir`` is where the files the spec reads are found (default: the directory of the
    spec path the run stored, else the store's directory); ``include`` adds files the
    commands use that the spec cannot name (scripts, inputs), relative to ``spec_dir``.
    """
    store_path = Path(store_path)
    with Store(store_path) as store:
        plan = store.plan(plan_hash)
        facts = store.host_facts(plan.plan_hash)
    if not plan.spec_text:
        raise UserError(f"{store_path} holds no spec text for plan {plan.plan_hash[:19]}")
    spec_name = Path(plan.spec_path or f"{plan.experiment}.bench").name
    base = Path(spec_dir) if spec_dir is not None else store_path.parent
    if spec_dir is None and plan.spec_path and Path(plan.spec_path).parent.is_dir():
        base = Path(plan.spec_path).parent
    members: dict[str, bytes] = {f"spec/{spec_name}": plan.spec_text.encode()}
    notes: list[str] = []
    for name in [*files_read(plan.spec_text), *map(str, include)]:
        relative = PurePosixPath(name)
        if relative.is_absolute() or ".." in relative.parts:
            notes.append(f"not included (outside the spec's directory): {name}")
            continue
        try:
            members[f"spec/{relative}"] = (base / relative).read_bytes()
        except OSError as err:
            raise UserError(
                f"the spec reads {name}, which cannot be read from {base}: {err.strerror or err}",
                "pass the spec's directory with SPEC or --spec-dir",
            ) from None
    members["plan.json"] = plan.plan_json.encode()
    members["data/store.sqlite"] = _store_bytes(store_path)
    members["data/trials.csv"] = _trials_csv(store_path, plan.plan_hash)
    records, record_notes = _record_members(store_path, plan.plan_hash)
    members.update(records)
    notes += record_notes
    members["hosts.json"] = (json.dumps(facts, indent=2, sort_keys=True) + "\n").encode()
    machine = _machine_member(store_path, plan.plan_hash)
    if machine is not None:
        members["machine.json"] = machine
    versions = {
        "benchlang": __version__,
        "python": platform.python_version(),
        "plugins": plugin_versions(),
    }
    members["versions.json"] = (json.dumps(versions, indent=2) + "\n").encode()
    members["README.md"] = _readme(plan.experiment, spec_name, plan.plan_hash, notes).encode()
    listing = tuple(
        (name, len(data), hashlib.sha256(data).hexdigest())
        for name, data in sorted(members.items())
    )
    manifest = {
        "schema": 1,
        "experiment": plan.experiment,
        "plan_hash": plan.plan_hash,
        "spec": f"spec/{spec_name}",
        "files": [{"name": n, "size": s, "sha256": h} for n, s, h in listing],
    }
    members["manifest.json"] = (json.dumps(manifest, indent=2) + "\n").encode()
    signer = None
    if sign is not None:
        members[SIGNATURE], signer = signing.sign(members["manifest.json"], sign)
    output = Path(output)
    _write_archive(output, plan.experiment, members)
    return Bundled(output, plan.experiment, plan.plan_hash, listing, tuple(notes), signer)


def _write_archive(output: Path, top: str, members: dict[str, bytes]) -> None:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(members):
            data = members[name]
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    try:
        with (
            replacing(output) as handle,
            gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=0) as zipped,
        ):
            zipped.write(raw.getvalue())
    except OSError as err:
        raise UserError(f"cannot write {output}: {err.strerror or err}") from None
