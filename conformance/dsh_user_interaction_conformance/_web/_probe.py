"""What the suite needs of a driver whose UI serves a browser over HTTP: a hostile sender.

A browser-facing UI is a door into an agent. Any page the human opens in the
same browser, and any program on the machine, can send its server requests;
the web profile of the spec (``WEB-*``) says which ones it refuses. To judge
that, the suite sends such requests itself, through the driver: a driver that
declares ``serves_http`` also implements :class:`HttpProbe`, in the wire
format of its own UI. The suite chooses what is wrong with each request (no
secret, a foreign ``Origin``, a form's body, a secret in a cookie), and the
driver builds and sends it, and says what status came back.
"""

from __future__ import annotations

from typing import Final, Literal, Protocol, TypeAlias, runtime_checkable

from dsh_user_interaction import AskUserQuestionAnswer, AskUserQuestionRequest

from .._behaviour import Dismiss

__all__ = ["CONTROL", "PROBE_ATTRIBUTE", "PROFILE", "HttpProbe", "SecretOffer"]

#: How a request offers the server's secret. ``"page"``, as the UI's own page
#: sends it (a header, say); ``"none"``, not at all; ``"wrong"``, as the page
#: does, but a near miss of it (the same length and alphabet, one character
#: changed: the reference changes the last one); ``"cookie"``, the right secret,
#: only in a ``Cookie`` header, under the name a server reading one would use.
SecretOffer: TypeAlias = Literal["page", "none", "wrong", "cookie"]

#: The attribute every piece of markup the suite writes into model text carries.
#: A page that shows model text as text never has an element with it.
PROBE_ATTRIBUTE: Final = "data-dsh-probe"

#: The content type of the requests the page itself sends.
CONTROL: Final = "application/json"

#: The requirements of the profile, in the spec's order.
PROFILE: Final = ("WEB-SECRET-1", "WEB-ORIGIN-1", "WEB-BODY-1", "WEB-COOKIE-1", "WEB-MARKUP-1")


@runtime_checkable
class HttpProbe(Protocol):
    """A driver's second role, for a UI that serves a browser: it sends what a hostile page would.

    The suite calls it only for a request that is pending and shown (after
    the driver's ``perform(request, Nothing())`` returned). Each method may
    wait; the suite bounds every wait.

    A driver of the reference's web page sends raw HTTP to its server
    (``dsh_user_interaction.extra.web.testing.WebDriver``); a UI with another
    wire format (a form field for the secret, another path, a socket message)
    builds its own requests the same way: everything right but the one thing
    the suite names.
    """

    @property
    def origin(self) -> str:
        """The page's own origin as its browser sends it, such as ``http://127.0.0.1:8123``."""
        ...

    async def send(
        self,
        request: AskUserQuestionRequest,
        outcome: AskUserQuestionAnswer | Dismiss,
        *,
        secret: SecretOffer,
        origin: str,
        content_type: str,
    ) -> int:
        """Send the server what would settle *request* with *outcome*; its HTTP status.

        *outcome* is an answer the answer rules accept, or ``Dismiss()`` for
        a dismissal. The request is the one the page itself would send, but
        for what the keywords say: the secret offered as *secret* says, the
        ``Origin`` header *origin*, and the body encoded as *content_type*
        says (``application/json``, the page's own JSON; a form type, the
        same JSON as the value of one form field; ``text/plain``, the JSON
        text), with that ``Content-Type`` header, its parameters included.
        With ``secret="page"``, ``origin=self.origin`` and ``application/json``
        it is the page's own request, which the server must take.
        """
        ...

    async def markup_from_model(self, request: AskUserQuestionRequest) -> bool:
        """Whether any element of the page showing *request* has ``PROBE_ATTRIBUTE``.

        The suite writes markup carrying that attribute into the request's
        text; ``True`` means some of it became an element of the page.
        """
        ...
