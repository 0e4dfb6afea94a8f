"""The one rule for credentials in a spec: a setting whose name says it holds one (``api_key``,
``token_x``, ``password``, ...) never takes a value written in the spec, for every plugin's
settings (a backend's, nested blocks such as ``driver { }``, any schema-checked block).

The spec text is stored in every store, plan document, record and bundle, and bundles are
published: a literal credential would be published with them (CWE-798, "use of hard-coded
credentials"). ``key from env "NAME"`` (and ``key from file "path"``, which stores the path
only) stays allowed. A backend's ``secret_settings`` names keys the rule cannot guess (e.g.
libcloud's ``key``); they are refused here by the same diagnostic.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection

from benchlang.lang.diagnostics import Diagnostic, Span

WORDS = frozenset(
    {"token", "secret", "password", "passwd", "passphrase", "credential", "credentials", "apikey"}
)
"""A name holding one of these words (split at ``_``, ``-``, ``.`` and camelCase) is a credential."""
PAIRS = frozenset({("api", "key"), ("private", "key"), ("access", "key"), ("secret", "key")})
"""Two adjacent words that together name a credential (``api_key``, ``privateKey``)."""
INSIDE = ("password", "passwd", "passphrase", "apikey", "credential")


def words_of(name: str) -> list[str]:
    """``name``'s words, lower case: ``ex_force_authToken`` -> ex, force, auth, token."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def looks_like_credential(name: str) -> bool:
    """Whether a setting named ``name`` holds a credential: by its words, or, written as one
    word, ending in ``token`` or ``secret`` or holding ``password``, ``passwd``, ``apikey`` or
    ``credential`` (``authtoken``, ``clientsecret``, ``dbpassword``)."""
    words = words_of(name)
    if WORDS.intersection(words) or any(p in PAIRS for p in itertools.pairwise(words)):
        return True
    joined = "".join(words)
    return joined.endswith(("token", "secret")) or any(w in joined for w in INSIDE)


def credential_refusal(
    key: str,
    value_span: Span,
    where: str,
    env_name: str | None,
    secret: Collection[str] = (),
) -> Diagnostic | None:
    """The error for ``key`` set to a literal in ``where`` when it is a credential (by name or
    listed in ``secret``), else None. ``env_name``: the variable the hint suggests reading
    it from (None for a nested block, which cannot read the environment)."""
    if key not in secret and not looks_like_credential(key):
        return None
    hint = (
        f'read it from the environment: {key} from env "{env_name}"'
        if env_name
        else f"{where} cannot read the environment: give the credential to the plugin "
        "through the environment (a setting read 'from env'), as its documentation says"
    )
    return Diagnostic(
        f"{where}: '{key}' is a secret: a value written in the spec would be stored "
        "with it (store, plan, bundle)",
        value_span,
        hint,
    )
