"""The use cases the CLI calls: load a spec, open a backend, build a plan, open a store,
analyse, profile, advise. Each returns values; printing is the CLI's job (through report).

Heavy libraries are imported inside the functions that need them, so that importing any
module here costs no more than the lang/plan/run modules it names.
"""
