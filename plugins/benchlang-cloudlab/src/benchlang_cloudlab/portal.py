"""The CloudLab portal's XML-RPC API, as the portal's own command-line tools (portal-tools)
call it: ``https://boss.emulab.net:3069/usr/testbed``, TLS with the user's certificate
(``cloudlab.pem``, downloaded from the portal; its key may be encrypted with a passphrase),
the server's certificate verified, each method called as ``portal.NAME(0.1, {args})`` and
answering ``{"code": int, "value": ..., "output": str}`` (code 0 = success; with
``asjson 1`` the output is JSON)."""

from __future__ import annotations

import json
import ssl
import xmlrpc.client
from typing import Any

import attrs

from benchlang.backends.base import HostDown, Secret

DEFAULT_URL = "https://boss.emulab.net:3069/usr/testbed"
API_VERSION = 0.1
SEARCH_FAILED = 12
"""The code the portal answers for an experiment it does not know (already terminated)."""


@attrs.frozen
class Answer:
    code: int
    value: Any
    output: str

    def json(self) -> Any:
        return json.loads(self.output) if self.output else {}


class PortalError(HostDown):
    """The portal refused a call or could not be reached."""

    def __init__(self, method: str, message: str, code: int | None = None) -> None:
        super().__init__("cloudlab", f"{method}: {message}")
        self.code = code


class Portal:
    """One portal endpoint, reached with the user's certificate."""

    def __init__(
        self, url: str, certificate: str, passphrase: Secret | None, ca: str | None
    ) -> None:
        self.url = url
        self.certificate = certificate
        self._passphrase = passphrase
        self.ca = ca

    def __repr__(self) -> str:
        return f"Portal({self.url!r}, certificate={self.certificate!r})"

    def _context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        if self.ca:
            context.load_verify_locations(self.ca)
        password = self._passphrase.reveal() if self._passphrase is not None else None
        try:
            context.load_cert_chain(self.certificate, password=password)
        except ssl.SSLError as err:
            raise PortalError(
                "certificate",
                f"cannot use {self.certificate}: {err.reason or err} (a wrong passphrase?)",
            ) from None
        except OSError as err:
            raise PortalError(
                "certificate", f"cannot read {self.certificate}: {err.strerror or err}"
            ) from None
        return context

    def call(self, method: str, **args: Any) -> Answer:
        """Blocking: one call; an answer whose code is not 0 raises PortalError."""
        proxy = xmlrpc.client.ServerProxy(self.url, context=self._context(), allow_none=True)
        try:
            raw = getattr(proxy, f"portal.{method}")(API_VERSION, args)
        except ssl.SSLCertVerificationError as err:
            raise PortalError(
                method, f"the portal's certificate is not trusted: {err.verify_message}"
            ) from None
        except (OSError, xmlrpc.client.Error) as err:
            raise PortalError(method, f"cannot reach {self.url}: {err}") from None
        finally:
            proxy("close")()
        answer = Answer(int(raw.get("code", -1)), raw.get("value"), str(raw.get("output", "")))
        if answer.code != 0:
            raise PortalError(method, answer.output.strip() or f"code {answer.code}", answer.code)
        return answer
