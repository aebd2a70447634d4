"""A throwaway PostgreSQL server, and the store suite's subject for :class:`PostgresStore`.

Needs the conformance suite and PostgreSQL's own binaries (``initdb`` and
``pg_ctl``; on Debian, ``apt-get install postgresql``), or an existing server
named by ``DSH_POSTGRES_DSN`` (``pip install
'dsh-user-interaction[postgres-testing]'``). :func:`store_subject` gives each
test case a fresh schema on a server that the process starts once, on first
use, and stops when it exits.
"""

from ._server import DSN_VARIABLE as DSN_VARIABLE
from ._server import PostgresServer as PostgresServer
from ._server import ServerUnavailable as ServerUnavailable
from ._server import postgres_bindir as postgres_bindir
from ._server import postgres_server as postgres_server
from ._server import shared_server as shared_server
from ._subject import PostgresStoreSubject as PostgresStoreSubject
from ._subject import store_subject as store_subject

__all__ = [
    "DSN_VARIABLE",
    "PostgresServer",
    "PostgresStoreSubject",
    "ServerUnavailable",
    "postgres_bindir",
    "postgres_server",
    "shared_server",
    "store_subject",
]
