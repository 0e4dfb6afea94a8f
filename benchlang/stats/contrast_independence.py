"""Independence of the within-round contrasts: when a ranking may answer under a drift.

A slow drift of the machine fails the run-level independence check (``stats.run_independence``)
and, today, leaves the ranking without intervals. When every round ran every configuration in
random order (randomized multiple interleaved trials: Abedi & Brecht, "Conducting repeatable
experiments in highly variable cloud computing environments", ICPE 2017, §4-§5), a drift that
multiplies every configuration's values by the same factor cancels from the round's contrasts
and adds only variance to them: the ranking's comparisons, paired within rounds, stay unbiased
provided that

(a) the drift moves every configuration alike (no drift x configuration interaction, on the log
    scale: the same factor for all),
(b) the contrasts are independent across rounds, and
(c) no configuration has a trend of its own (a warm-up).

(b) and (c) are testable, and so is the part of (a) that shows as a trend: this module runs the
run-level tests on the contrasts. A round's contrast of configuration j is its log value minus
the mean of the round's log values (Box, Hunter & Hunter, *Statistics for Experimenters*, 2nd ed.
2005, §4.2: blocking removes a block effect from within-block comparisons; here the block is
the round). Two tests, one family with Holm's (1979) step-down procedure at ``ALPHA``:

- trend of the contrasts over the run: each configuration's rank-trend statistic (its
  contrasts' ranks, scaled by 1/(R + 1), against the round's time centred within its series,
  as in ``stats.run_independence``), combined as the quadratic form s' V+ s with V their
  permutation covariance. A sum over configurations, as the run-level test makes, would cancel:
  the contrasts of a round sum to zero, so a configuration's own trend shows with the opposite
  sign in the others;
- autocorrelation of the contrasts: the lag-1 serial covariance of the same rank scores,
  demeaned within each series, summed over configurations (Wald & Wolfowitz, Ann. Math. Stat.
  14, 1943; Bartels, JASA 77(377), 1982, for the rank form).

Both are permutation tests in which the rounds' vectors of contrasts are exchangeable within a
series under (b) and (c): the same permutation moves every configuration's contrast of a round
together, so the dependence between the contrasts of one round is kept (permuting each
configuration alone would make the serial test anti-conservative: with two configurations the
contrasts are each other's negatives). p = (b + 1)/(B + 1) from seeded permutations (Phipson &
Smyth, Stat. Appl. Genet. Mol. Biol. 9(1), 2010).

Only complete rounds count (every configuration measured once, or several times and averaged on
the log scale): a missing configuration would move the round's mean.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from benchlang.stats._stratified import _two_sided_mc, _within_permutations
from benchlang.stats.run_independence import IndependenceTest, holm

ALPHA = 0.05
PERMUTATIONS = 1999
MIN_PERMUTATIONS = 199
WORK = 40_000_000
"""Rounds x configurations x permutations above which fewer permutations are drawn."""
MIN_ROUNDS = 4
MAX_ROUNDS = 16_384
"""Above this many complete rounds the tests use pieces of ``PIECE`` consecutive rounds, every
m-th (a choice independent of the values, as ``stats.run_independence`` subsamples series)."""
PIECE = 256

TREND = "trend of the within-round contrasts"
AUTOCORRELATION = "autocorrelation of the within-round contrasts"


@attrs.frozen
class Contrasts:
    """The within-round contrasts: ``values`` (R x k: log value minus the round's mean log value,
    rounds in time order within ``block``), ``time`` (each round's first trial), ``block`` (its
    series), ``left_out`` (rounds without every configuration)."""

    values: np.ndarray
    time: np.ndarray
    block: np.ndarray
    left_out: int


def within_round_contrasts(
    values: np.ndarray,
    configuration: np.ndarray,
    rounds: np.ndarray,
    block: np.ndarray,
    time: np.ndarray,
) -> Contrasts:
    """Each complete round's contrasts: per (round, configuration) the mean log value, minus the
    mean of the round's. ``rounds`` identifies a round (unique across series and hosts),
    ``block`` the series it belongs to, ``time`` orders the trials. Values that are not finite
    and positive are left out first."""
    v = np.asarray(values, dtype=float).ravel()
    keep = np.isfinite(v) & (v > 0)
    c = np.unique(np.asarray(configuration).ravel()[keep], return_inverse=True)[1].ravel()
    rid, r = np.unique(np.asarray(rounds).ravel()[keep], return_inverse=True)
    r = r.ravel()
    b = np.asarray(block).ravel()[keep]
    t = np.asarray(time, dtype=float).ravel()[keep]
    k, n_rounds = int(c.max(initial=-1)) + 1, rid.size
    cell = r * max(k, 1) + c
    sums = np.bincount(cell, weights=np.log(v[keep]), minlength=n_rounds * k)
    counts = np.bincount(cell, minlength=n_rounds * k)
    complete = (counts.reshape(n_rounds, k) > 0).all(axis=1) if k else np.zeros(0, bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        logs = (sums / np.maximum(counts, 1)).reshape(n_rounds, k)[complete]
    first = np.full(n_rounds, np.inf)
    np.minimum.at(first, r, t)
    round_block = np.zeros(n_rounds, b.dtype)
    round_block[r] = b
    order = np.lexsort((first[complete], round_block[complete]))
    d = logs - logs.mean(axis=1, keepdims=True)
    return Contrasts(
        d[order],
        first[complete][order],
        np.unique(round_block[complete][order], return_inverse=True)[1].ravel(),
        int((~complete).sum()),
    )


def _scores(d: np.ndarray) -> np.ndarray:
    """Each configuration's contrasts as centred rank scores (k x R), ranks scaled by 1/(R+1)."""
    from benchlang.stats._special import rankdata

    return np.asarray(rankdata(d.T, axis=1) / (d.shape[0] + 1.0) - 0.5)


def _block_centred(x: np.ndarray, block: np.ndarray, nb: int) -> np.ndarray:
    """``x`` (..., R) minus its mean within each block."""
    counts = np.bincount(block, minlength=nb).astype(float)
    flat = x.reshape(-1, x.shape[-1])
    means = np.stack([np.bincount(block, weights=row, minlength=nb) for row in flat]) / counts
    return np.asarray(x - means.reshape(*x.shape[:-1], nb)[..., block])


def contrast_tests(
    c: Contrasts, *, seed: int = 0, permutations: int = PERMUTATIONS
) -> dict[str, float | int | str]:
    """The two tests on ``c``: ``trend_p``, ``trend_q`` (s' V+ s, its degrees of freedom
    ``trend_df``), ``serial_p``, ``serial_z`` (the serial statistic standardised with its
    permutation mean and the permutations' spread), ``rounds``, ``permutations``."""
    d, block = c.values, c.block
    rounds, k = d.shape
    nb = int(block.max(initial=-1)) + 1
    b = int(np.clip(WORK // max(1, rounds * k), MIN_PERMUTATIONS, permutations))
    rng = np.random.default_rng(seed)
    scores = _scores(d)
    # the trend over the whole run (as the run-level test without a span), serial within series
    whole = np.zeros(rounds, np.int64)
    u = scores - scores.mean(axis=1, keepdims=True)
    tc = c.time - c.time.mean()
    cov = (u * (tc @ tc / max(rounds - 1, 1))) @ u.T
    inverse = np.linalg.pinv(cov, rcond=1e-9, hermitian=True)
    df = int(np.linalg.matrix_rank(cov, tol=1e-9 * max(float(np.abs(cov).max(initial=0)), 1e-300)))
    s = u @ tc
    q = float(s @ inverse @ s)
    sp = u @ tc[_within_permutations(whole, b, rng)].T  # k x B
    qp = np.einsum("jb,jl,lb->b", sp, inverse, sp)
    trend_p = float((np.sum(qp >= q - 1e-9 * max(1.0, q)) + 1.0) / (b + 1.0)) if df else 1.0
    perm = _within_permutations(block, b, rng)
    u = _block_centred(scores, block, nb)
    counts = np.bincount(block, minlength=nb).astype(float)
    link = (block[1:] == block[:-1]).astype(float)
    serial = float(((u[:, 1:] * u[:, :-1]) @ link).sum())
    p2 = np.stack([np.bincount(block, weights=row * row, minlength=nb) for row in u])
    mean = float((-p2 / np.maximum(counts, 1)).sum())
    permuted = np.empty(b)
    step = max(1, 4_000_000 // max(1, rounds * k))
    for i in range(0, b, step):
        up = u[:, perm[i : i + step]]  # k x chunk x R
        permuted[i : i + step] = ((up[..., 1:] * up[..., :-1]) @ link).sum(axis=0)
    spread = float(permuted.std())
    z = (serial - mean) / spread if spread > 0 else 0.0
    serial_p = float(_two_sided_mc(np.array([serial - mean]), permuted[None, :] - mean)[0])
    return {
        "trend_p": trend_p,
        "trend_q": q,
        "trend_df": df,
        "serial_p": serial_p if spread > 0 else 1.0,
        "serial_z": z,
        "rounds": rounds,
        "permutations": b,
    }


@attrs.frozen
class ContrastIndependence:
    """The within-round contrasts' tests, Holm at ``alpha`` over the two. ``passed`` is False
    when a test rejected or none could be made (``note`` says why)."""

    metric: str
    alpha: float
    tests: tuple[IndependenceTest, ...]
    configurations: int
    rounds: int
    left_out: int
    note: str = ""

    @property
    def passed(self) -> bool:
        made = [t for t in self.tests if t.p is not None]
        return bool(made) and not any(t.rejected for t in self.tests)

    def family(self) -> str:
        m = sum(t.p is not None for t in self.tests)
        return f"{m} test{'s' if m != 1 else ''}, Holm at {100 * self.alpha:.3g}%"

    def summary(self) -> str:
        """ "trend of the within-round contrasts p = 0.41, autocorrelation ... p = 0.63 (25
        rounds of 3 configurations; 2 tests, Holm at 5%)"."""
        if not any(t.p is not None for t in self.tests):
            return f"the within-round contrasts could not be tested ({self.note})"
        parts = ", ".join(
            f"{t.name} p = {t.p:.2g}" + (" (rejected)" if t.rejected else "")
            for t in self.tests
            if t.p is not None
        )
        rounds = f"{self.rounds} rounds of {self.configurations} configurations"
        if self.left_out:
            rounds += f", {self.left_out} incomplete rounds left out"
        return f"{parts} ({rounds}; {self.family()})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "family": self.family(),
            "alpha": self.alpha,
            "passed": self.passed,
            "configurations": self.configurations,
            "rounds": self.rounds,
            "left_out": self.left_out,
            "note": self.note,
            "tests": [t.to_dict() for t in self.tests],
        }


def _pieces(c: Contrasts) -> tuple[Contrasts, str]:
    """``c`` itself, or above ``MAX_ROUNDS`` rounds every m-th piece of ``PIECE`` consecutive
    rounds, each piece a block of its own (the serial test never links two pieces)."""
    rounds = c.values.shape[0]
    if rounds <= MAX_ROUNDS:
        return c, ""
    m = -(-rounds // MAX_ROUNDS)
    piece = np.arange(rounds) // PIECE
    keep = np.flatnonzero(piece % m == 0)
    block = np.unique(c.block[keep] * (int(piece.max()) + 1) + piece[keep], return_inverse=True)
    out = Contrasts(c.values[keep], c.time[keep], block[1].ravel(), c.left_out)
    return out, f", on {keep.size} of {rounds} rounds (every {m}th piece of {PIECE})"


def contrast_independence(
    metric: str,
    values: np.ndarray,
    configuration: np.ndarray,
    rounds: np.ndarray,
    block: np.ndarray,
    time: np.ndarray,
    *,
    alpha: float = ALPHA,
    seed: int = 0,
) -> ContrastIndependence:
    """The within-round contrasts of ``values`` (one per trial; see
    :func:`within_round_contrasts`) tested for a trend of their own and for autocorrelation,
    Holm at ``alpha``: the check an answer under drift rests on."""
    c = within_round_contrasts(values, configuration, rounds, block, time)
    rounds_n, k = c.values.shape
    if k < 2 or rounds_n < MIN_ROUNDS:
        why = (
            "fewer than two configurations"
            if k < 2
            else f"{rounds_n} complete rounds, fewer than {MIN_ROUNDS}"
        )
        return ContrastIndependence(metric, alpha, (), k, rounds_n, c.left_out, why)
    tested, subsample = _pieces(c)
    res = contrast_tests(tested, seed=seed)
    method = (
        f"joint permutation of rounds ({res['permutations']} permutations; over the run for the "
        f"trend, within series for the autocorrelation){subsample}"
    )
    p = np.array([res["trend_p"], res["serial_p"]], dtype=float)
    rejected, levels = holm(p, alpha)
    notes = (
        f"quadratic form of {k} configurations' rank trends",
        f"lag-1 rank serial covariance, z = {res['serial_z']:.2f}",
    )
    tests = tuple(
        IndependenceTest(
            name,
            metric,
            float(p[i]),
            None if i == 0 else float(res["serial_z"]),
            method,
            k,
            int(res["rounds"]),
            level=float(levels[0, i]),
            rejected=bool(rejected[0, i]),
            note=notes[i],
        )
        for i, name in enumerate((TREND, AUTOCORRELATION))
    )
    return ContrastIndependence(metric, alpha, tests, k, rounds_n, c.left_out)
