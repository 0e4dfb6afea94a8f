"""Test support shipped with benchlang: loopback sshd testbeds and kits for plugin authors.

Nothing here is used by a benchlang run; tests, benchmarks and third-party plugins import it.
"""
