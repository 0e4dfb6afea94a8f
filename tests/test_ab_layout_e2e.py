"""End to end: A/B layout designs (Bakshy & Frachtenberg, WWW 2015, the method behind
Facebook's Perflab) run on local worker slots, through the CLI in process (check, plan, run,
analyze, results; ``cli_in_process``) with the real local backend and store; the run killed
with SIGKILL is a process of its own, since the kill is what is tested.

- a fully balanced layout detects a known 5% slowdown and an A/A layout (identical versions) is
  not flagged; the mixed-effects fit on the same store agrees;
- the warm-up and cool-down trials are stored with their phase and left out of `results`;
- the reset runs once before every host batch, with that batch's version;
- a layout run killed with SIGKILL mid-batch resumes with every planned trial present once;
- the worker slots really run at the same time.

The measured value is synthetic and seeded (docs/testing.md): each trial prints a lognormal
value derived from its seed (``BENCHLANG_SEED``), its request, its slot and its version's text
(1.05 for the treatment), so the statistical assertions are exact for these seeds and do not
move with the machine's load. Concurrency is proven by barriers (each slot's trial waits until
the other slot's trial has started) and the store's timestamps, never by elapsed time. The
real-CPU version of these experiments is benchmarks/bench_ab_calibration.py.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

# The statistical runs: R requests per version, T repetitions, W warm-up and C cool-down trials
# per host batch, on H worker slots.
H, R, T, W, C = 4, 20, 3, 2, 1
BATCHES = 2 * H  # fully balanced: two batches per host, the versions swapped between them
MEASURED = 2 * R * T
SIZES = [1_800_000 + 20_000 * i for i in range(R)]

# value.awk (awk -v version=TEXT -v request=N -f value.awk): the request's base (N / 1e6, a
# request effect) x the version's text (1.00 or 1.05: the known effect) x a host effect
# (1 + 0.02 x slot) x exp(0.02 z), z the standard normal quantile (Abramowitz & Stegun 26.2.23)
# of the trial's seed as a uniform (the plan's seeds are 31-bit SplitMix64 draws; only IEEE
# arithmetic, so every awk gives the same values).
VALUE_AWK = """\
BEGIN {
  u = (ENVIRON["BENCHLANG_SEED"] % 2147483648 + 0.5) / 2147483648; p = u < 0.5 ? u : 1 - u
  t = sqrt(-2 * log(p))
  z = t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t)
  if (u < 0.5) z = -z
  host = substr(ENVIRON["BENCHLANG_HOST"], 7) + 0
  printf "v=%.12g\\n", request / 1e6 * version * (1 + 0.02 * host) * exp(0.02 * z)
}
"""

LAYOUT_SPEC = """benchlang 1
experiment ab_layout {{
  seed {seed}
  hosts local {{ slots {hosts} }}
  reset "echo {{version}} $BENCHLANG_HOST $(date +%s.%N) >> resets.log"
  benchmark loop {{
    run "awk -v version={{version}} -v request={{request}} -f value.awk"
    measure v from stdout regex "v=([0-9.e+-]+)"
  }}
  metric v {{ unit "s" better lower }}
  design {{
    versions {{ control "1.00" treatment "{treatment}" }}
    layout fully_balanced {{ hosts {hosts} requests {requests} repetitions {repetitions} warmup {warmup} cooldown {cooldown} }}
    requests [{pool}]
  }}
  analysis {{
    compare v by version with bootstrap {{ cluster request log true replicates 4000 confidence {confidence}% }}
    compare v by version with mixed_effects
  }}
}}
"""


def layout_spec(treatment: str, confidence: int, seed: int) -> str:
    return LAYOUT_SPEC.format(
        seed=seed,
        hosts=H,
        treatment=treatment,
        requests=R,
        repetitions=T,
        warmup=W,
        cooldown=C,
        pool=", ".join(map(str, SIZES)),
        confidence=confidence,
    )


def run_layout(workdir: Path, cli, spec_text: str) -> dict:
    """Check, plan, run and analyse a spec in its own directory (the CLI in process)."""
    workdir.mkdir()
    (workdir / "ab.bench").write_text(spec_text)
    (workdir / "value.awk").write_text(VALUE_AWK)
    status, out, err = cli(["check", "ab.bench"], cwd=workdir)
    assert status == 0 and "warning" not in out + err, out + err
    status, plan_json, err = cli(["plan", "ab.bench", "--json"], cwd=workdir)
    assert status == 0, err
    status, out, err = cli(["run", "ab.bench", "--store", "ab.sqlite"], cwd=workdir, timeout=600)
    assert status == 0, out + err
    assert "Traceback" not in out + err
    status, analysis, err = cli(
        ["analyze", "ab.bench", "--store", "ab.sqlite", "--json"], cwd=workdir
    )
    assert status == 0, err
    comparisons = {c["method"]: c for c in json.loads(analysis)["comparisons"]}
    return {
        "dir": workdir,
        "store": workdir / "ab.sqlite",
        "plan": json.loads(plan_json),
        "stdout": out,
        "bootstrap": comparisons["bootstrap"],
        "mixed": comparisons["mixed_effects"],
    }


@pytest.fixture(scope="module")
def ab_runs(tmp_path_factory, cli_in_process) -> dict[str, dict]:
    """An A/B run (treatment 1.05x) and an A/A run (identical versions), with seeded values.

    Clusters: request (R = 20 clusters; the H = 4 slots would be far too few clusters for a
    bootstrap interval). The fully balanced layout runs both versions on every slot, so the
    synthetic host effect cancels in the comparison as a real one would.
    """
    base = tmp_path_factory.mktemp("ab_layout")
    return {
        "ab": run_layout(base / "ab", cli_in_process, layout_spec("1.05", 95, seed=2015)),
        "aa": run_layout(base / "aa", cli_in_process, layout_spec("1.00", 99, seed=2016)),
    }


def control_mean(store: Path) -> float:
    db = sqlite3.connect(store)
    try:
        rows = db.execute(
            "SELECT t.levels, m.value FROM trials t JOIN measures m USING (plan_hash, trial) "
            "WHERE m.name = 'v' AND t.phase = 'measured' AND t.status = 'ok'"
        ).fetchall()
    finally:
        db.close()
    control = [v for levels, v in rows if json.loads(levels)["version"] == "control"]
    assert len(control) == R * T
    return sum(control) / len(control)


def relative(bootstrap: dict) -> tuple[float, float, float]:
    """The relative effect and its interval, from a log-scale bootstrap result."""
    return tuple(math.expm1(bootstrap[k]) for k in ("estimate", "ci_low", "ci_high"))


@pytest.mark.slow
def test_known_five_percent_slowdown_is_detected(ab_runs):
    got = ab_runs["ab"]
    b = got["bootstrap"]["bootstrap"]
    assert got["bootstrap"]["problem"] is None
    assert b["log"] and b["cluster"] == "request" and b["clusters"] == R
    assert got["bootstrap"]["trials"] == MEASURED  # warm-up and cool-down left out
    effect, low, high = relative(b)
    assert low > 0, f"not significant: {effect:+.2%} [{low:+.2%}, {high:+.2%}]"
    # Seeded: the estimate is a fixed number; the band only allows for a change of the
    # bootstrap's resampling, never for load.
    assert 0.04 < effect < 0.06, f"{effect:+.2%} [{low:+.2%}, {high:+.2%}]"
    assert "comparisons: reweighting bootstrap" in got["stdout"]
    assert f"request ({R})" in got["stdout"]  # the clusters column


@pytest.mark.slow
def test_mixed_effects_on_the_same_store_agrees(ab_runs):
    got = ab_runs["ab"]
    m = got["mixed"]["mixed_effects"]
    assert got["mixed"]["problem"] is None and got["mixed"]["trials"] == MEASURED
    assert m["method"] == "moments"  # auto: the fully balanced layout is balanced
    size = m["effect"] / control_mean(got["store"])  # seconds -> relative to the control
    assert 0.04 < size < 0.06, f"mixed effects: {size:+.2%} (effect {m['effect']:.4g} s)"
    assert m["effect_se"] > 0 and m["effect"] > m["effect_se"]
    # Every component of the model is separable in a fully balanced layout with T > 1.
    assert m["not_identifiable"] == []
    assert set(m["components"]) == {"request", "host", "request_batch", "host_batch", "residual"}
    assert "mixed effects (moments): v by version" in got["stdout"]


@pytest.mark.slow
def test_a_a_layout_is_not_flagged(ab_runs):
    got = ab_runs["aa"]
    b = got["bootstrap"]["bootstrap"]
    assert b["confidence"] == pytest.approx(99.0)
    effect, low, high = relative(b)
    assert low <= 0 <= high, f"A/A flagged: {effect:+.2%} [{low:+.2%}, {high:+.2%}]"
    assert abs(effect) < 0.01
    m = got["mixed"]["mixed_effects"]
    assert abs(m["effect"] / control_mean(got["store"])) < 0.01


@pytest.mark.slow
def test_warmup_and_cooldown_are_stored_and_left_out(ab_runs, cli_in_process):
    got = ab_runs["ab"]
    db = sqlite3.connect(got["store"])
    try:
        phases = Counter(dict(db.execute("SELECT phase, count(*) FROM trials GROUP BY phase")))
        rows = db.execute("SELECT trial, round, position, phase FROM trials").fetchall()
        failed = db.execute("SELECT count(*) FROM trials WHERE status != 'ok'").fetchone()[0]
    finally:
        db.close()
    assert failed == 0
    assert phases == {"measured": MEASURED, "warmup": BATCHES * W, "cooldown": BATCHES * C}
    # Each trial has the phase its plan gave it: W warm-up trials open every batch, C
    # cool-down trials close it.
    plan = got["plan"]["trials"]
    assert sorted(t for t, *_ in rows) == list(range(len(plan["phase"])))
    per_batch = W + R // H * T + C
    for trial, round_, position, phase in rows:
        assert (round_, position, phase) == (
            plan["round"][trial],
            plan["position"][trial],
            plan["phase"][trial],
        )
        expected = (
            "warmup" if position < W else "cooldown" if position >= per_batch - C else "measured"
        )
        assert phase == expected, (trial, round_, position)

    results = cli_json(cli_in_process, ["results", got["store"], "--json"])["configurations"]
    by_version = {row["configuration"]["levels"]["version"]: row for row in results}
    assert set(by_version) == {"control", "treatment"}
    for row in by_version.values():
        assert row["n"] == R * T and row["failures"] == 0
        assert row["metrics"]["v"]["n"] == R * T
    assert f"{BATCHES * (W + C)} warm-up/cool-down trials ran and are left out" in got["stdout"]


def cli_json(cli, args: list) -> object:
    status, out, err = cli(args)
    assert status == 0, err
    return json.loads(out)


def reset_lines(path: Path) -> list[tuple[str, str, float]]:
    """(version text, BENCHLANG_HOST, time) of every reset, in the order they ran."""
    lines = path.read_text().splitlines() if path.exists() else []
    return [(version, host, float(at)) for version, host, at in map(str.split, lines)]


@pytest.mark.slow
def test_reset_runs_before_every_host_batch_with_its_version(ab_runs):
    """Every host batch (round) has its own reset: on the round's host (BENCHLANG_HOST), with
    the round's version, after the round started and before its first trial. A host runs
    one batch of each version, so (version, host) names the round a reset belongs to."""
    got = ab_runs["ab"]
    texts = {"control": "1.00", "treatment": "1.05"}
    resets = reset_lines(got["dir"] / "resets.log")
    assert len(resets) == BATCHES
    assert Counter(v for v, _, _ in resets) == {"1.00": H, "1.05": H}  # H batches per version

    db = sqlite3.connect(got["store"])
    try:
        rounds = db.execute(
            "SELECT round, host, started, reset_status FROM rounds ORDER BY round"
        ).fetchall()
        first = dict(db.execute("SELECT round, min(started) FROM trials GROUP BY round"))
        versions = {
            r: {
                json.loads(lv)["version"]
                for (lv,) in db.execute("SELECT levels FROM trials WHERE round = ?", (r,))
            }
            for r, *_ in rounds
        }
    finally:
        db.close()
    plan_rounds = got["plan"]["rounds"]
    assert [r for r, *_ in rounds] == list(range(BATCHES))
    for r, host, started_at, reset_status in rounds:
        assert reset_status == "ok"
        h, batch = plan_rounds["host"][r], plan_rounds["batch"][r]
        assert host == got["plan"]["hosts"][h]
        # A host batch runs one version; host h runs version h % 2 first, then the other.
        assert versions[r] == {("control", "treatment")[(h + batch) % 2]}, (r, host)
        (version,) = versions[r]
        mine = [at for text, on, at in resets if (text, on) == (texts[version], host)]
        assert len(mine) == 1, (r, host, resets)
        assert started_at <= mine[0] <= first[r], f"the reset of round {r} ran outside it"


# A small layout for resuming and for concurrency: 2 slots, 2 batches each, per batch
# 1 warm-up, 2 requests x 2 repetitions, 1 cool-down = 6 trials; round r is trials 6r..6r+5.
SMALL = """benchlang 1
experiment small {{
  seed 5
  hosts local {{ slots 2 }}
  reset "echo {{version}} $BENCHLANG_HOST $(date +%s.%N) >> resets.log"
  benchmark b {{
    run "{command}"
    measure t = wall_time
  }}
  metric t {{ better lower }}
  design {{
    versions {{ control "A" treatment "B" }}
    layout fully_balanced {{ hosts 2 requests {requests} repetitions {repetitions} warmup {warmup} cooldown {cooldown} }}
    requests ["r1", "r2", "r3", "r4", "r5", "r6"]
  }}
  analysis {{ compare t by version with bootstrap {{ cluster request }} }}
}}
"""
PER_BATCH = 6
# The third trial (position 2) of each slot's second batch blocks until the file 'go' exists.
GATES = (2 * PER_BATCH + 2, 3 * PER_BATCH + 2)
GATED = (
    "echo $BENCHLANG_TRIAL >> ran.txt; "
    f"if [ $BENCHLANG_TRIAL -eq {GATES[0]} ] || [ $BENCHLANG_TRIAL -eq {GATES[1]} ]; then "
    "while [ ! -e go ]; do sleep 0.01; done; fi; "
    "sleep 0.02; echo {version} {request}"
)


def started(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


@pytest.mark.slow
def test_resume_after_sigkill_mid_batch(tmp_path, cli_in_process):
    """Both slots are stopped at a gated trial in the middle of their second batch, then the
    run is SIGKILLed: the store holds exactly the trials before the gates. `--resume` then
    runs each missing trial once, with the phase, round, position and host of the plan, and
    resets the two interrupted batches (a new service instance) before continuing them. The
    killed run is a subprocess by necessity (SIGKILL); the plan and the resumed runs are not."""
    spec = SMALL.format(command=GATED, requests=4, repetitions=2, warmup=1, cooldown=1)
    (tmp_path / "small.bench").write_text(spec)
    status, plan_json, err = cli_in_process(["plan", "small.bench", "--json"], cwd=tmp_path)
    assert status == 0, err
    plan = json.loads(plan_json)
    total = len(plan["trials"]["phase"])
    assert total == 4 * PER_BATCH
    store, ran_file = tmp_path / "small.sqlite", tmp_path / "ran.txt"
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlang", "run", "small.bench", "--store", str(store), "-q"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if set(GATES) <= set(started(ran_file)):
                break
            time.sleep(0.01)
        assert set(GATES) <= set(started(ran_file)), "the run never reached both gated trials"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
        (tmp_path / "go").touch()  # releases the orphaned in-flight trials
    assert proc.returncode == -signal.SIGKILL
    db = sqlite3.connect(store)
    before = {t for (t,) in db.execute("SELECT trial FROM trials")}
    db.close()
    expected_before = set(range(2 * PER_BATCH)) | {g - 2 for g in GATES} | {g - 1 for g in GATES}
    assert before == expected_before
    before_kill = reset_lines(tmp_path / "resets.log")
    assert len({(v, h) for v, h, _ in before_kill}) == len(before_kill) == 4  # one per batch

    status, _out, err = cli_in_process(["run", "small.bench", "--store", store, "-q"], cwd=tmp_path)
    assert status == 2 and "--resume" in err
    status, out, err = cli_in_process(
        ["run", "small.bench", "--store", store, "-q", "--resume"], cwd=tmp_path
    )
    assert status == 0, out + err

    db = sqlite3.connect(store)
    try:
        rows = db.execute(
            "SELECT trial, round, position, host, phase, levels, status, stdout_tail FROM trials"
        ).fetchall()
        plans = db.execute("SELECT count(*) FROM plans").fetchone()[0]
    finally:
        db.close()
    assert plans == 1
    assert sorted(r[0] for r in rows) == list(range(total)), "every planned trial exactly once"
    texts = {"control": "A", "treatment": "B"}
    for trial, round_, position, host, phase, levels, status_, stdout in rows:
        assert status_ == "ok"
        assert (round_, position, phase) == (
            plan["trials"]["round"][trial],
            plan["trials"]["position"][trial],
            plan["trials"]["phase"][trial],
        )
        assert host == plan["hosts"][plan["rounds"]["host"][round_]], "a layout pins hosts"
        lv = json.loads(levels)
        assert stdout.decode().split() == [texts[lv["version"]], lv["request"]]
    assert Counter(r[4] for r in rows) == {"measured": 16, "warmup": 4, "cooldown": 4}

    ran = Counter(started(ran_file))
    assert set(ran) == set(range(total))
    assert {t for t, n in ran.items() if n > 1} == set(GATES), "only in-flight trials run twice"

    resets = reset_lines(tmp_path / "resets.log")
    assert len(resets) == 6, resets
    # The first four ran before the kill, one per round; then the two interrupted batches
    # were reset again, on their hosts, with their versions.
    trials, configurations = plan["trials"], plan["configurations"]
    interrupted = [
        (
            texts[configurations[trials["configuration"][g]]["levels"]["version"]],
            plan["hosts"][plan["rounds"]["host"][trials["round"][g]]],
        )
        for g in GATES
    ]
    assert sorted((v, h) for v, h, _ in resets[4:]) == sorted(interrupted), resets

    results = cli_json(cli_in_process, ["results", store, "--json"])["configurations"]
    assert [(row["n"], row["failures"]) for row in results] == [(8, 0), (8, 0)]

    status, _out, err = cli_in_process(
        ["run", "small.bench", "--store", store, "-q", "--resume"], cwd=tmp_path
    )
    assert status == 0, err
    assert Counter(started(ran_file)) == ran, "resuming a finished run runs nothing"
    assert len(reset_lines(tmp_path / "resets.log")) == 6, "nor resets a finished batch"


# pair.sh VERSION REQUEST: the k-th trial of each slot announces itself, then waits (30 s at
# most, then fails) until the k-th trial of the other slot has announced itself too.
PAIR_SH = """\
me=${BENCHLANG_HOST#local:}; other=$((1 - me))
k=$(( $(cat count.$me 2>/dev/null || echo 0) + 1 )); echo $k > count.$me
: > started.$k.$me
i=0
while [ ! -e started.$k.$other ]; do
  i=$((i + 1))
  if [ $i -gt 3000 ]; then echo "slot $other never started its trial $k" >&2; exit 1; fi
  sleep 0.01
done
echo "$1 $2"
"""


def test_worker_slots_run_at_the_same_time(tmp_path, cli_in_process):
    """12 trials on two slots, paired by a barrier: the k-th trial of a slot only ends after
    the k-th trial of the other slot has started. If the slots ran one after the other, every
    trial would fail after 30 s. The store's start and end times show each pair overlapping
    and each slot running one trial at a time; elapsed time is not measured."""
    (tmp_path / "pair.sh").write_text(PAIR_SH)
    spec = SMALL.format(
        command="sh pair.sh {version} {request}",
        requests=6,
        repetitions=1,
        warmup=0,
        cooldown=0,
    )
    (tmp_path / "small.bench").write_text(spec)
    status, out, err = cli_in_process(
        ["run", "small.bench", "--store", "s.sqlite", "-q"], cwd=tmp_path, timeout=300
    )
    assert status == 0, out + err
    db = sqlite3.connect(tmp_path / "s.sqlite")
    try:
        rows = db.execute(
            "SELECT host, started, ended, status FROM trials ORDER BY started"
        ).fetchall()
    finally:
        db.close()
    assert len(rows) == 12 and all(row[3] == "ok" for row in rows)
    slots = {
        h: sorted((s, e) for host, s, e, _ in rows if host == h) for h in ("local:0", "local:1")
    }
    assert all(len(v) == 6 for v in slots.values())
    for intervals in slots.values():  # one trial at a time on a slot
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(intervals))
    for k, ((s0, e0), (s1, e1)) in enumerate(zip(slots["local:0"], slots["local:1"], strict=True)):
        assert max(s0, s1) < min(e0, e1), f"pair {k + 1}: {(s0, e0)} and {(s1, e1)} do not overlap"


# Its module fixtures are built once: under pytest -n the whole module runs on one worker
# (--dist loadgroup, pyproject.toml).
pytestmark = pytest.mark.xdist_group("test_ab_layout_e2e")
