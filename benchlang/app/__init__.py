"""The use cases the CLI calls: load a spec, open a backend, build a plan, open a store, analyse."""
