"""The settings of ``hosts libcloud { ... }``: their names, the checks that need no driver,
and the ``driver { ... }`` block's options (judged against the driver class's constructors)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from benchlang.backends.base import SettingError
from benchlang.lang.credentials import looks_like_credential

SSH_KEYS = (
    "user",
    "port",
    "identity",
    "known_hosts",
    "insecure_accept_new_host_keys",
    "workdir",
    "python",
    "connect_timeout",
)
KEYS = (
    "provider",
    "key",
    "secret",
    "region",
    "size",
    "image",
    "location",
    "count",
    "key_pair",
    "tags",
    "name",
    "duration",
    "budget",
    "wait",
    "driver",
    *SSH_KEYS,
)
TAG = "benchlang-lease"


def is_credential(name: str) -> bool:
    """Driver options that are credentials (OpenStack's ex_force_auth_token, a password):
    refused in ``driver { }``, whose values are stored with the spec; the credentials are
    ``key``/``secret`` from env. benchlang's one rule (``benchlang.lang.credentials``), which
    refuses them already when the spec is checked; here for settings given as a dict."""
    return looks_like_credential(name)


def driver_options(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not value:
        raise SettingError("driver", "driver takes a block of options: driver { host ... }")
    for name, option in value.items():
        if is_credential(name):
            raise SettingError(
                "driver",
                f"driver {name} is a credential: written in the spec it would be stored with it",
                'give credentials as key from env "NAME" and secret from env "NAME"',
            )
        if isinstance(option, tuple) or option is None:
            raise SettingError("driver", f"driver {name} takes a string, number or true/false")
    return {
        name: {"true": True, "false": False}.get(option, option)
        if isinstance(option, str)
        else option
        for name, option in value.items()
    }


CONNECTION_OPTIONS = frozenset({"timeout", "retry_delay", "backoff", "proxy_url"})
"""Read from ``**kwargs`` by Libcloud's ``BaseDriver.__init__`` for every driver."""


def constructor_names(driver_class: type) -> frozenset[str] | None:
    """The keyword names a driver class's constructors take along its MRO (Libcloud's
    drivers pass ``**kwargs`` on to their base and mixins, e.g. OpenStack's ex_force_*)."""
    names: set[str] = set(CONNECTION_OPTIONS)
    for klass in driver_class.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        try:
            parameters = inspect.signature(init).parameters.values()
        except (TypeError, ValueError):
            return None
        names.update(
            p.name
            for p in parameters
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"
        )
    return frozenset(names)


def text_setting(settings: Mapping[str, Any], key: str, required: bool = False) -> str | None:
    value = settings.get(key)
    if value is None:
        if required:
            raise SettingError(None, f"hosts libcloud needs '{key}'")
        return None
    if not isinstance(value, str) or not value:
        raise SettingError(key, f"{key} takes a non-empty string in double quotes")
    return value


def tag_pairs(value: Any) -> dict[str, str]:
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, tuple) or not all(isinstance(t, str) and "=" in t for t in items):
        raise SettingError("tags", 'tags takes a list of "key=value" strings')
    return dict(t.split("=", 1) for t in items)
