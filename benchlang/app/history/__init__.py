"""The history use cases (docs/history.md), one module a feature: ``runs`` (add stores, list,
change points, the CI gate, the dashboard), ``imports`` (Otava's CSVs), ``acks`` (acknowledged
regressions), ``bisect`` (``git bisect run``, one session a step) and ``worktrees`` (builds of
several revisions run interleaved in one session, shared with ``compare SPEC --base REF``).
Nothing is re-exported: import from the module."""
