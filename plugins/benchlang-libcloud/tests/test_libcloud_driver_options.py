"""``driver { ... }``: the driver constructor's options (an EC2-compatible endpoint, OpenStack
as on Chameleon), checked against what Libcloud's driver classes take, credentials kept out of
the block, and the block as the spec checker reads it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from benchlang_libcloud import LibcloudBackend

from benchlang.backends.base import Secret, SettingError

CHAMELEON = {
    "ex_force_auth_url": "https://chi.uc.chameleoncloud.org:5000",
    "ex_force_auth_version": "3.x_password",
    "ex_tenant_name": "CHI-123456",
    "ex_domain_name": "chameleon",
    "ex_force_service_region": "CHI@UC",
}


def settings(provider: str, driver: dict, **extra) -> dict:
    return {
        "provider": provider,
        "key": Secret("CLOUD_KEY", "user-or-key-id"),
        "secret": Secret("CLOUD_SECRET", "pw-9c2e"),
        "size": "m1.small",
        "image": "CC-Ubuntu22.04",
        "driver": driver,
        **extra,
    }


def test_an_ec2_compatible_endpoint_reaches_the_driver(tmp_path):
    given = settings(
        "ec2", {"host": "127.0.0.1", "port": 5000, "secure": "false", "region": "eu-west-1"}
    )
    driver = LibcloudBackend.from_settings(given, tmp_path).driver
    connection = driver.connection
    assert (connection.host, connection.port, connection.secure) == ("127.0.0.1", 5000, 0)
    assert driver.region_name == "eu-west-1"


def test_openstack_options_reach_the_driver_as_on_chameleon(tmp_path):
    driver = LibcloudBackend.from_settings(settings("openstack", CHAMELEON), tmp_path).driver
    assert {k: getattr(driver, f"_{k}") for k in CHAMELEON} == CHAMELEON


@pytest.mark.parametrize(
    ("provider", "driver", "message"),
    [
        ("ec2", {"hots": "x"}, "the ec2 driver's constructor takes no hots"),
        ("openstack", {"ex_tenant": "x"}, "the openstack driver's constructor takes no ex_tenant"),
        ("openstack", {"ex_force_auth_token": "t"}, "is a credential"),
        ("ec2", {"host": ("a", "b")}, "takes a string, number or true/false"),
    ],
)
def test_a_driver_option_the_driver_does_not_take_is_refused(tmp_path, provider, driver, message):
    with pytest.raises(SettingError, match=message) as err:
        LibcloudBackend.from_settings(settings(provider, driver), tmp_path)
    assert err.value.key == "driver"


def test_the_spec_reads_the_driver_block_and_refuses_a_secret_in_it(tmp_path: Path):
    spec = tmp_path / "s.bench"
    text = """benchlang 1
experiment e {
  hosts libcloud {
    provider "openstack"  key from env "OS_USERNAME"  secret from env "OS_PASSWORD"
    driver { ex_force_auth_url "https://chi.uc.chameleoncloud.org:5000"  ex_tenant_name "CHI-1"
             DRIVER_LINE }
    size "m1.small"  image "CC-Ubuntu22.04"
  }
  benchmark b { run "true" }
}
"""
    spec.write_text(text.replace("DRIVER_LINE", 'ex_domain_name "chameleon"'))
    ok = subprocess.run(
        [sys.executable, "-m", "benchlang", "check", str(spec)], capture_output=True, timeout=60
    )
    assert ok.returncode == 0, ok.stderr.decode()
    spec.write_text(text.replace("DRIVER_LINE", 'ex_force_auth_token from env "OS_TOKEN"'))
    bad = subprocess.run(
        [sys.executable, "-m", "benchlang", "check", str(spec)], capture_output=True, timeout=60
    )
    err = bad.stderr.decode() + bad.stdout.decode()
    assert bad.returncode != 0 and "'driver { ex_force_auth_token }'" in err
    assert ":6:" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "extra",
    [
        {"tags": {"benchlang-lease": "L1", "Name": "n"}},  # EC2
        {"metadata": {"benchlang-lease": "L1"}},  # OpenStack
        {"metadata": {"items": [{"key": "benchlang-lease", "value": "L1"}], "fingerprint": "f"}},
    ],
    ids=["ec2", "openstack", "gce"],
)
def test_the_lease_tag_is_read_as_each_provider_lists_it(extra):
    from types import SimpleNamespace

    from benchlang_libcloud import _lease_tag

    assert _lease_tag(SimpleNamespace(extra=extra)) == "L1"
    assert _lease_tag(SimpleNamespace(extra={"metadata": {"items": []}})) is None
