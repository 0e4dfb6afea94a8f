"""Settings of ``hosts ssh``: validated without I/O, nodes parsed, nodes read from a file."""

from __future__ import annotations

import pytest

from benchlang.backends.base import SettingError
from benchlang.backends.ssh import SshBackend, nodes_from_text, parse_node


@pytest.mark.parametrize(
    ("settings", "key", "fragment"),
    [
        ({}, None, "needs 'nodes'"),
        ({"nodes": ("a",), "colour": "red"}, "colour", "unknown setting"),
        ({"nodes": ("a", "a")}, "nodes", "listed twice"),
        ({"nodes": ("a b",)}, "nodes", "is not a host"),
        ({"nodes": ("a:70000",)}, "nodes", "outside 1-65535"),
        ({"nodes": ("a",), "port": 0}, "port", "1-65535"),
        ({"nodes": ("a",), "concurrency": 2}, "concurrency", "not supported"),
        ({"nodes": ("a",), "concurrency": 0}, "concurrency", "at least 1"),
        ({"nodes": ("a",), "identity": 3}, "identity", "path"),
        (
            {"nodes": ("a",), "insecure_accept_new_host_keys": "maybe"},
            "insecure_accept_new_host_keys",
            "true or false",
        ),
        ({"nodes": {"file": 3}}, "nodes", "file name"),
    ],
)
def test_bad_settings_name_their_key(settings, key, fragment):
    with pytest.raises(SettingError) as err:
        SshBackend.check_settings(settings)
    assert err.value.key == key
    assert fragment in err.value.message


def test_good_settings_pass():
    SshBackend.check_settings(
        {
            "nodes": ("alice@10.0.0.1:2222", "[::1]:22", "host"),
            "user": "bench",
            "port": 22,
            "identity": "id_ed25519",
            "known_hosts": "kh",
            "workdir": "/tmp/w",
            "concurrency": 1,
            "sync": ("bench",),
            "insecure_accept_new_host_keys": "false",
            "connect_timeout": 10.0,
        }
    )


def test_parse_node_forms():
    node = parse_node("alice@10.0.0.1:2222")
    assert (node.user, node.address, node.port, node.name) == (
        "alice",
        "10.0.0.1",
        2222,
        "alice@10.0.0.1:2222",
    )
    node = parse_node("[fe80::1]:22")
    assert (node.user, node.address, node.port) == (None, "fe80::1", 22)
    node = parse_node("server.example.org")
    assert (node.user, node.address, node.port) == (None, "server.example.org", None)


def test_nodes_file_text_skips_blanks_and_comments():
    assert nodes_from_text("# rack 1\na:22\n\n  b  # spare\n") == ("a:22", "b")


def test_nodes_from_file_resolved_in_from_settings(tmp_path):
    (tmp_path / "hosts.txt").write_text("127.0.0.1:2201\n# off\n127.0.0.1:2202\n")
    backend = SshBackend.from_settings({"nodes": {"file": str(tmp_path / "hosts.txt")}}, tmp_path)
    assert backend.hosts() == ("127.0.0.1:2201", "127.0.0.1:2202")
    with pytest.raises(SettingError, match="cannot read the nodes file"):
        SshBackend.from_settings({"nodes": {"file": str(tmp_path / "missing.txt")}}, tmp_path)
    (tmp_path / "empty.txt").write_text("# nobody\n")
    with pytest.raises(SettingError, match="lists no host"):
        SshBackend.from_settings({"nodes": {"file": str(tmp_path / "empty.txt")}}, tmp_path)


def test_sync_must_be_a_directory(tmp_path):
    with pytest.raises(SettingError, match="not a directory"):
        SshBackend.from_settings({"nodes": ("a",), "sync": "nothere"}, tmp_path)


def test_checker_points_at_the_bad_hosts_setting(ssh_env, tmp_path):
    from benchlang.backends.registry import backend_kinds
    from benchlang.lang.check import load
    from benchlang.lang.diagnostics import SpecError

    spec = tmp_path / "bad.bench"
    spec.write_text(
        'benchlang 1\nexperiment e {\n  hosts ssh {\n    nodes ["a", "b"]\n    concurrency 4\n  }\n'
        '  benchmark b { run "true" }\n}\n'
    )
    with pytest.raises(SpecError) as err:
        load(str(spec), backends=backend_kinds())
    text = str(err.value)
    assert "concurrency 4 is not supported" in text and ":5:" in text
    (tmp_path / "hosts.txt").write_text("n1\nn2:2200\n")
    spec.write_text(
        'benchlang 1\nexperiment e {\n  hosts ssh { nodes from file "hosts.txt" }\n  benchmark b { run "true" }\n}\n'
    )
    assert load(str(spec), backends=backend_kinds()).hosts.settings == {
        "nodes": {"file": str(tmp_path / "hosts.txt")}
    }
