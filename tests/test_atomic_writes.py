"""Every produced file is written whole or not at all (benchlang.report.atomic):
a writer that fails midway, a full disk (a 64 KiB tmpfs) under `bundle` and `report`, and a
file-size limit (``RLIMIT_FSIZE``: a child's write past it fails with EFBIG) while an export
(JSON, Parquet) and a figure are written over a good file, leave the good file as it was and
no temporary file beside it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchlang.report.atomic import replacing, write_atomic
from tests.test_bundle_trust import SPEC

LIMITED = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of the signal
def limit(size):
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
"""


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_a_writer_that_fails_midway_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.json"
    write_atomic(target, '{"good": true}\n')
    target.chmod(0o640)
    with pytest.raises(RuntimeError), replacing(target, "w", encoding="utf-8") as out:
        out.write("x" * 100_000)
        raise RuntimeError("the writer fails after 100,000 characters")
    assert target.read_text() == '{"good": true}\n' and leftovers(tmp_path) == []
    write_atomic(target, b"new")
    assert target.read_bytes() == b"new" and (target.stat().st_mode & 0o777) == 0o640
    assert leftovers(tmp_path) == []


def test_a_device_is_written_in_place_and_a_link_is_followed(tmp_path):
    write_atomic("/dev/null", "nothing")
    assert Path("/dev/null").is_char_device()
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "report.html").write_text("old")
    (tmp_path / "report.html").symlink_to(tmp_path / "site" / "report.html")
    write_atomic(tmp_path / "report.html", "new")
    assert (tmp_path / "report.html").is_symlink()
    assert (tmp_path / "site" / "report.html").read_text() == "new"
    assert leftovers(tmp_path) == leftovers(tmp_path / "site") == []


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("atomic")
    (root / "probe.bench").write_text(SPEC.format(mark=root / "mark"))
    for args in (
        ["run", "probe.bench", "--store", "p.sqlite", "--quiet"],
        ["bundle", "p.sqlite", "probe.bench", "-o", "p.tar.gz"],
    ):
        done = subprocess.run([sys.executable, "-m", "benchlang", *args], cwd=root,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    return root


FULL_DISK = """
set -u
mount -t tmpfs -o size=64k tmpfs "$DIR" || exit 77
cp "$GOOD" "$DIR/$TARGET"
head -c 1000000 /dev/zero > "$DIR/filler" 2>/dev/null
"$PYTHON" -m benchlang "$@" 2>&1
echo "status $?"
cmp -s "$GOOD" "$DIR/$TARGET" && echo "good file intact"
ls -A "$DIR"
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root")
@pytest.mark.parametrize(
    ("target", "command"),
    [
        ("p.tar.gz", ["bundle", "p.sqlite", "probe.bench", "-o"]),
        ("r.html", ["report", "p.sqlite", "-o"]),
    ],
)
def test_bundle_and_report_on_a_full_disk_keep_the_good_file(published, tmp_path, target, command):
    """A 64 KiB tmpfs, in a mount namespace of its own, holds the good file and a filler
    that takes the rest: the new file cannot be written."""
    good = published / "p.tar.gz" if target == "p.tar.gz" else tmp_path / "good.html"
    if target == "r.html":
        good.write_text("<p>the good report</p>\n")
    (tmp_path / "disk").mkdir()
    env = {**os.environ, "DIR": str(tmp_path / "disk"), "GOOD": str(good), "TARGET": target,
           "PYTHON": sys.executable}  # fmt: skip
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", FULL_DISK, "sh", *command, str(tmp_path / "disk" / target)],
        capture_output=True, text=True, timeout=300, cwd=published, env=env,
    )  # fmt: skip
    if done.returncode == 77:
        pytest.skip("no tmpfs mount here")
    lines = done.stdout.splitlines()
    assert lines[0].startswith("benchlang: error: cannot write"), done.stdout
    assert "No space left" in lines[0], done.stdout
    assert lines[1:] == ["status 2", "good file intact", "filler", target], done.stdout


def test_exports_and_figures_past_the_file_size_limit_keep_the_old_files(published, tmp_path):
    """Each writer fails past 6,000 bytes (the files are larger) over a good file of its own."""
    names = {"export": "e.json", "parquet": "t.parquet", "figure": "f.svg"}
    if importlib.util.find_spec("pyarrow") is None:  # the benchlang[parquet] extra
        del names["parquet"]
    for name in names.values():
        (tmp_path / name).write_text(f"good {name}\n")
    code = (
        LIMITED
        + f"""
from pathlib import Path
from benchlang.errors import UserError
from benchlang.report.data import load_data
from benchlang.run.store import Store
from benchlang.report.export_files import export_text, write_export_file
from benchlang.app.figures import write_files
from benchlang.app.api import BenchStore, write_parquet
out = Path({str(tmp_path)!r})
store = {str(published / "p.sqlite")!r}
with Store(store) as s:
    data = load_data(s)
frame = BenchStore(store).trials() if "parquet" in {sorted(names)!r} else None
assert len(export_text(data, "json")) > 6_000
limit(6_000)
for name, write in (
    ("export", lambda: write_export_file(data, "json", out / "e.json")),
    ("parquet", lambda: write_parquet(frame, out / "t.parquet")),
    ("figure", lambda: write_files([(out / "f.svg", b"<svg>" + bytes(50_000) + b"</svg>")])),
):
    if name not in {sorted(names)!r}:
        continue
    try:
        write()
        print(name, "written")
    except UserError as err:
        print(name, "refused:", err.message)
"""
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=published)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(names), done.stdout + done.stderr
    for line, (what, name) in zip(lines, names.items(), strict=True):
        assert line.startswith(f"{what} refused: cannot write") and "File too large" in line, line
        assert (tmp_path / name).read_text() == f"good {name}\n"
    assert leftovers(tmp_path) == []
