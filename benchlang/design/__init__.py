"""Pure design arithmetic: seeded streams, layout combinatorics, counting.

No I/O and no knowledge of specs' text or hosts; ``stats``, ``lang`` and ``plan`` build on it.
"""
