"""A setting that looks like a credential is refused in a spec: by its name
(benchlang.lang.credentials), for every plugin's settings (a backend's, a nested block such
as ``driver { }``, a schema-checked block), as a positioned error with a caret and the hint
to read it from the environment; ``from env`` passes."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from benchlang.app.spec import backend_kinds
from benchlang.cli import main
from benchlang.lang.credentials import looks_like_credential


class VaultBackend:
    """A backend that takes any settings, a nested ``driver { }`` block among them."""

    protocol: ClassVar[int] = 1
    secret_settings: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        return None


@pytest.fixture
def vault():
    kinds = backend_kinds()
    kinds["vault"] = VaultBackend
    yield
    del kinds["vault"]


def spec(tmp_path, hosts: str, extra: str = "") -> str:
    path = tmp_path / "s.bench"
    path.write_text(
        f"benchlang 1\nexperiment s {{\n  hosts vault {{ {hosts} }}\n{extra}"
        '  benchmark b { run "true" }\n}\n'
    )
    return str(path)


def test_a_credential_in_a_nested_block_and_a_token_x_are_positioned_errors(
    vault, tmp_path, capsys
):
    path = spec(tmp_path, 'driver { region "eu" api_key "abc" } token_x "zz"')
    line = Path(path).read_text().splitlines()[2]
    api, token = line.index('"abc"') + 1, line.index('"zz"') + 1
    assert main(["check", path]) == 2
    err = capsys.readouterr().err
    assert (
        f"{path}:3:{api}: error: hosts vault: driver {{ }}: 'api_key' is a secret: a value "
        "written in the spec would be stored with it (store, plan, bundle)"
    ) in err, err
    assert f"{path}:3:{token}: error: hosts vault: 'token_x' is a secret" in err, err
    assert '  hint: read it from the environment: token_x from env "VAULT_TOKEN_X"' in err
    assert "driver { } cannot read the environment" in err
    quoted = [x for x in err.splitlines() if x.strip() == line.strip()]
    carets = [x for x in err.splitlines() if x.strip().startswith("^")]
    shift = quoted[0].index(line.strip()) - line.index(line.strip())
    assert [c.index("^") - shift + 1 for c in carets] == [api, token], err
    assert err.rstrip().endswith("2 errors")


def test_from_env_passes_and_a_plain_setting_is_not_a_credential(vault, tmp_path, capsys):
    path = spec(tmp_path, 'driver { region "eu" key_pair "kp" } token_x from env "T"')
    assert main(["check", path]) == 0, capsys.readouterr().err


def test_a_schema_checked_block_refuses_a_credential_too(vault, tmp_path, capsys):
    path = spec(tmp_path, "", extra='  design { runs 3 password "hunter2" }\n')
    assert main(["check", path]) == 2
    err = capsys.readouterr().err
    assert f"{path}:4:28: error: design: 'password' is a secret" in err, err


@pytest.mark.parametrize(
    "name",
    ["api_key", "apikey", "apiKey", "token", "token_x", "ex_force_auth_token", "secret",
     "client_secret", "password", "db_passwd", "private_key", "privateKey", "access_key",
     "aws_secret_access_key", "credential", "credentials", "passphrase", "authtoken",
     "clientsecret", "dbpassword", "OS_PASSWORD"],
)  # fmt: skip
def test_credential_names(name):
    assert looks_like_credential(name)


@pytest.mark.parametrize(
    "name", ["key", "key_pair", "region", "image", "size", "host", "port", "keyboard", "tokens",
             "secretary", "passes", "ledger", "count"],
)  # fmt: skip
def test_names_that_are_not_credentials(name):
    assert not looks_like_credential(name)
