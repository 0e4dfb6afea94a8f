"""What is bisect's own in its sessions: the slots. The worktrees, the session and its seed
are shared with ``compare SPEC --base REF`` (benchlang.app.worktrees)."""

SLOTS = ("old", "mid", "new")
"""The good endpoint, the commit under test, the bad endpoint: names of one length."""
