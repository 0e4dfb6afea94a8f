"""The history of a project's performance: a database of each run's KPIs with their intervals
per commit (SQLite or PostgreSQL), its change points, the CI gate and the dashboard
(docs/history.md). Fed by stores; it never holds a trial. Sits between ``app`` and ``report``.
"""
