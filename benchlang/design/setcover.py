"""The hosts of an experiment as a minimum set cover of its required hardware levels.

DataMill (de Oliveira et al., ICPE 2013, §4.1, Eq. 1a-1f) chooses the machines of an
experiment by integer linear programming: one binary variable per eligible machine, the number
of machines minimised, and for every level of every hardware factor that must be covered at
least ``r`` chosen machines that have it. benchlang solves exactly that program with
``scipy.optimize.milp`` (HiGHS' branch and bound: exact, not a greedy approximation):

    minimise    sum_h x_h                                  (1a)
    subject to  sum_{h has level l} x_h >= r   for each required level l
                x_h in {0, 1}                  for each eligible host h

A plan must not depend on which of several optimal covers a solver returns, so among the
minimum covers the one whose hosts come first in the backend's order (the lexicographically
smallest sorted index tuple) is taken: with the optimum k known, host i is kept if a cover of
k hosts still exists with the hosts kept so far and i, else it is left out.
"""

from __future__ import annotations

from collections.abc import Sequence


def minimum_cover(
    covers: Sequence[frozenset[int]], required: frozenset[int], at_least: int = 1
) -> tuple[int, ...] | None:
    """Indices of the hosts chosen: ``covers[h]`` is the set of level ids host h has; every
    level of ``required`` must be had by ``at_least`` chosen hosts. None: no cover exists."""
    if not required:
        return ()
    if any(sum(level in c for c in covers) < at_least for level in required):
        return None
    n = len(covers)
    levels = sorted(required)
    matrix = [[1.0 if level in covers[h] else 0.0 for h in range(n)] for level in levels]
    k = _solve(matrix, n, at_least, fixed={})
    if k is None:
        return None
    fixed: dict[int, int] = {}
    chosen = 0
    for h in range(n):
        if chosen == k:
            fixed[h] = 0
            continue
        trial = {**fixed, h: 1}
        if _solve(matrix, n, at_least, trial, exactly=k) is not None:
            fixed[h] = 1
            chosen += 1
        else:
            fixed[h] = 0
    return tuple(h for h in range(n) if fixed.get(h) == 1)


def _solve(
    matrix: list[list[float]],
    n: int,
    at_least: int,
    fixed: dict[int, int],
    exactly: int | None = None,
) -> int | None:
    """The minimum number of hosts covering every row ``at_least`` times with the hosts of
    ``fixed`` forced in (1) or out (0), optionally with exactly ``exactly`` hosts; None when
    infeasible."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    lower = np.zeros(n)
    upper = np.ones(n)
    for h, value in fixed.items():
        lower[h] = upper[h] = value
    constraints = [LinearConstraint(np.array(matrix), lb=at_least, ub=np.inf)]
    if exactly is not None:
        constraints.append(LinearConstraint(np.ones((1, n)), lb=exactly, ub=exactly))
    result = milp(
        c=np.ones(n),
        constraints=constraints,
        integrality=np.ones(n),
        bounds=Bounds(lower, upper),
    )
    if result.status != 0 or result.x is None:
        return None
    return round(float(result.fun))
