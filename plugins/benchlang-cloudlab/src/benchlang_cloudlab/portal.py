"""The CloudLab portal's XML-RPC API, as the portal's own command-line tools (portal-tools)
call it: ``https://boss.emulab.net:3069/usr/testbed``, TLS with the user's certificate
(``cloudlab.pem``, downloaded from the portal; its key may be encrypted with a passphrase),
the server's certificate verified, each method called as ``portal.NAME(0.1, {args})`` and
answering ``{"code": int, "value": ..., "output": str}``.

Where each rule comes from (docs/cloud.md lists them all):

- success is code 0 (RESPONSE_SUCCESS); on failure the code is the XML-RPC layer's
  (RESPONSE_ERROR 2 when the portal's script failed) and ``value`` carries the script's exit
  status, a GENI response code such as 12 SEARCHFAILED for an unknown experiment: the server
  answers ``EmulabResponse(RESPONSE_ERROR, exitval >> 8, output=output)``
  (emulab-devel ``xmlrpc/emulabserver.py.in``, class ``portal``), and portal-tools'
  ``EmulabXMLRPC.do_method`` (``emulab_sslxmlrpc/xmlrpc.py``) returns that ``value`` instead of
  the code when it is set; fabfed's CloudLab provider compares it with SEARCHFAILED.
- the JSON of ``experimentStatus`` (with ``asjson``) and ``experimentManifests`` is read from
  ``value`` by portal-tools' API.md and by fabfed (``cloudlab_network.py``: ``json.loads(
  response.value)``), but emulabserver.py.in answers ``EmulabResponse(RESPONSE_SUCCESS,
  output=output)`` for both: :meth:`Answer.json` takes whichever holds JSON.
"""

from __future__ import annotations

import json
import ssl
import xmlrpc.client
from typing import Any

import attrs

from benchlang.backends.base import HostDown, Secret

DEFAULT_URL = "https://boss.emulab.net:3069/usr/testbed"
API_VERSION = 0.1
RESPONSE_ERROR = 2
RESPONSE_REFUSED = 7
"""Emulab refuses logins for now (``checknologins``) or an extension is refused."""
SEARCH_FAILED = 12
"""GENIRESPONSE_SEARCHFAILED: the portal does not know the experiment (already terminated)."""
BUSY = 14
"""GENIRESPONSE_BUSY: the experiment is locked by another operation; ask again later."""
TRANSIENT = frozenset({RESPONSE_REFUSED, BUSY})
"""Codes after which fabfed's ``wait_for_create`` keeps polling instead of giving up."""


@attrs.frozen
class Answer:
    code: int
    value: Any
    output: str

    def json(self, method: str = "answer") -> Any:
        """The answer's JSON document, from ``value`` or ``output`` (module docstring)."""
        for part in (self.value, self.output):
            if isinstance(part, dict):
                return part
            if isinstance(part, str) and part.strip():
                try:
                    return json.loads(part)
                except ValueError:
                    continue
        raise PortalError(
            method,
            f"the portal's answer holds no JSON (value {str(self.value)[:80]!r}, "
            f"output {self.output[:80]!r})",
        )


class PortalError(HostDown):
    """The portal refused a call or could not be reached; ``code`` is the specific code
    (the answer's ``value`` when set, else its ``code``), as portal-tools reports it."""

    def __init__(self, method: str, message: str, code: int | None = None) -> None:
        super().__init__("cloudlab", f"{method}: {message}")
        self.code = code


def failure_code(code: int, value: Any) -> int:
    """The code a failed answer means: its ``value`` when that is a non-zero whole number
    (the portal script's GENI code), else the XML-RPC layer's ``code``."""
    if isinstance(value, int) and not isinstance(value, bool) and value:
        return value
    return code


def _message(output: str, code: int) -> str:
    """The portal script's own message, without its ``*** script:`` banner."""
    lines = [ln.strip() for ln in output.strip().splitlines()]
    lines = [ln for ln in lines if ln and not (ln.startswith("***") and ln.endswith(":"))]
    return " ".join(lines) or f"code {code}"


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
        except xmlrpc.client.Fault as err:
            # EmulabServer.__getattr__ raises "unknown method" for a method it lacks
            raise PortalError(
                method, f"the portal has no method {method} ({err.faultString})"
            ) from None
        except (OSError, xmlrpc.client.Error) as err:
            raise PortalError(method, f"cannot reach {self.url}: {err}") from None
        finally:
            proxy("close")()
        if not isinstance(raw, dict):
            raise PortalError(method, f"the portal answered {str(raw)[:80]!r}, not a response")
        code = int(raw.get("code", -1))
        answer = Answer(code, raw.get("value"), str(raw.get("output") or ""))
        if answer.code != 0:
            failed = failure_code(answer.code, answer.value)
            raise PortalError(method, _message(answer.output, failed), failed)
        return answer
