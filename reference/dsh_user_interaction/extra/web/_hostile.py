"""Requests to the web provider's server as a hostile page or program would send them.

The web driver's half of the suite's web profile (``WEB-*``, the
``HttpProbe`` protocol): each request is the page's own POST, but for the
one thing the suite names (how the secret is offered, the ``Origin``, the
body's type). It is raw HTTP/1.1 over a connection of its own, so nothing
(no browser, no client library) adds or fixes a header on the way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from typing import Final
from urllib.parse import urlencode, urlsplit

from dsh_user_interaction import AskUserQuestionAnswer
from dsh_user_interaction_conformance import Dismiss, SecretOffer

__all__ = ["COOKIE", "page_origin", "send"]

#: The cookie a server that read its secret from one would read: the page never sets it.
COOKIE: Final = "dsh-secret"
#: The form field that carries the page's JSON in a form's body.
FIELD: Final = "answer"


def page_origin(url: str) -> str:
    """The origin of the page at *url*: ``http://127.0.0.1:8123`` for its address."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _secret_of(url: str) -> str:
    """The secret in the fragment of the address the provider prints (``#secret=...``)."""
    fragment = urlsplit(url).fragment
    return fragment.removeprefix("secret=")


def _near_miss(secret: str) -> str:
    """*secret* with its last character changed: the same length and alphabet."""
    last = "A" if secret[-1:] != "A" else "B"
    return secret[:-1] + last


def _body(data: str, content_type: str) -> tuple[bytes, str]:
    """The page's JSON *data* as a body of *content_type*, and the header that names it.

    A form's body holds the JSON as the field ``answer``; a multipart body
    gets the boundary it needs when the type names none.
    """
    media = content_type.split(";", maxsplit=1)[0].strip().lower()
    if media == "application/x-www-form-urlencoded":
        return urlencode({FIELD: data}).encode("ascii"), content_type
    if media == "multipart/form-data":
        boundary = "dsh" + secrets.token_hex(8)
        if "boundary=" not in content_type:
            content_type += f"; boundary={boundary}"
        else:
            boundary = content_type.split("boundary=", 1)[1].split(";")[0].strip()
        body = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{FIELD}"\r\n\r\n'
            f"{data}\r\n--{boundary}--\r\n"
        )
        return body.encode("ascii"), content_type
    return data.encode("ascii"), content_type


async def send(
    url: str,
    ask_id: str,
    outcome: AskUserQuestionAnswer | Dismiss,
    *,
    offer: SecretOffer,
    origin: str,
    content_type: str,
) -> int:
    """POST *outcome* for *ask_id* to the server of the page at *url*; the response's status.

    The body is the page's own (the answer's JSON, or ``{}`` for a dismissal),
    encoded as *content_type*; ``Origin`` is *origin*; the secret goes as
    *offer* says: as the page sends it (the header ``X-Dsh-Secret``), not at
    all, one character off, or only as the cookie ``COOKIE`` names.
    """
    parts = urlsplit(url)
    if parts.hostname is None or parts.port is None:
        msg = f"the page's address {url!r} names no host and port"
        raise ValueError(msg)
    kind = "dismiss" if isinstance(outcome, Dismiss) else "answer"
    data = json.dumps({} if isinstance(outcome, Dismiss) else outcome, ensure_ascii=True)
    body, named = _body(data, content_type)
    given = _secret_of(url)
    headers = [
        ("Host", parts.netloc),
        ("Origin", origin),
        ("Content-Type", named),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
    ]
    if offer == "page":
        headers.append(("X-Dsh-Secret", given))
    elif offer == "wrong":
        headers.append(("X-Dsh-Secret", _near_miss(given)))
    elif offer == "cookie":
        headers.append(("Cookie", f"{COOKIE}={given}"))
    head = f"POST /asks/{ask_id}/{kind} HTTP/1.1\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers
    )
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(head.encode("latin-1") + b"\r\n" + body)
        await writer.drain()
        status = (await reader.readline()).split()
        await reader.read()  # the rest, until the server closes: it has finished with it
    finally:
        writer.close()
        with contextlib.suppress(OSError):  # the server may have closed first
            await writer.wait_closed()
    if len(status) < 2 or not status[1].isdigit():
        msg = f"the server answered {b' '.join(status)!r}, no HTTP status line"
        raise ValueError(msg)
    return int(status[1])
