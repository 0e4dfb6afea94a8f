"""Other tools' results into a store (``benchlang import``); see base.py for the contract."""
