"""Presentation: terminal tables, JSON, the reproducibility record. No statistics here."""
