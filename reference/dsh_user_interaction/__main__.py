"""``python -m dsh_user_interaction demo`` (or ``web-demo``): ask a sample batch.

``demo`` asks it in this terminal, ``web-demo`` through the web page, and
``serve STORE`` shows a durable store's pending asks on either. Each extra
is imported only here, inside its command, so importing the core stays
light.
"""

from __future__ import annotations

import argparse
import sys

_DESCRIPTION = "Try the terminal provider of dsh_user_interaction here, or its web page."
_DEMO = (
    "demo: ask a sample batch of four questions (a single choice with hostile text"
    " drawn as escapes, a multiple choice, free text and a plan review) as a"
    " form filling the screen, then print the answer as compact JSON on standard output."
    " It needs the terminal extra (pip install 'dsh-user-interaction[terminal]')"
    " and an interactive terminal. Exit status: 0 answered, 1 dismissed (Esc or"
    " Ctrl-C) or the extra missing, 2 a wrong command line or no terminal."
    " web-demo: ask the same batch through the web page (pip install"
    " 'dsh-user-interaction[web]'): it prints the page's address, secret included, on"
    " standard error, and the answer as compact JSON on standard output. Exit status:"
    " 0 answered, 1 dismissed, stopped or the extra missing, 2 a wrong command line"
    " (a --port out of range, taken or not allowed among them)."
    " serve STORE: show the pending asks of a durable store (a SQLite file, or a"
    " postgresql:// address with the postgres extra) on the web page (--ui web, the"
    " default) or this terminal (--ui terminal), and write each outcome back, until"
    " Ctrl-C. Exit status: 0 stopped, 1 the store or the UI could not start."
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dsh_user_interaction",
        usage="%(prog)s {demo,web-demo,serve} [STORE] [--port PORT] [--ui {web,terminal}]",
        description=_DESCRIPTION,
        epilog=_DEMO,
    )
    parser.add_argument("command", choices=["demo", "web-demo", "serve"], help="the command to run")
    parser.add_argument("store", nargs="?", help="serve: a SQLite file or a postgresql:// address")
    parser.add_argument(
        "--port", type=int, default=0, help="web-demo, serve: the port (default: a free one)"
    )
    parser.add_argument("--ui", choices=["web", "terminal"], default="web", help="serve: the UI")
    parser.add_argument("--schema", help="serve: the PostgreSQL schema of the asks")
    parser.add_argument("--via", help="serve: this UI's name in the audit record")
    parser.add_argument("--principal", help="serve: who answers here (default: the login name)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command named in *argv*; return the exit status."""
    args = sys.argv[1:] if argv is None else argv
    try:
        parsed = _parser().parse_args(args)
    except SystemExit as stop:  # argparse has printed the help or the usage error
        return stop.code if isinstance(stop.code, int) else 2
    if parsed.port not in range(65536):
        print(
            f"error: --port {parsed.port} is not a TCP port: 1 to 65535, or 0 for a free one",
            file=sys.stderr,
        )
        return 2
    if parsed.command == "serve":
        if parsed.store is None:
            print(
                "error: serve needs a STORE: a SQLite file or a postgresql:// address",
                file=sys.stderr,
            )
            return 2
        from ._durable._serve_command import run_serve  # noqa: PLC0415 - imported when used

        return run_serve(
            parsed.store,
            ui=parsed.ui,
            port=parsed.port,
            schema=parsed.schema,
            via=parsed.via,
            principal=parsed.principal,
        )
    if parsed.store is not None:
        print(f"error: {parsed.command} takes no STORE", file=sys.stderr)
        return 2
    if parsed.command == "web-demo":
        try:
            from .extra.web._demo import run_web_demo  # noqa: PLC0415 - the extra is optional
        except ImportError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return run_web_demo(parsed.port)
    try:
        from .extra.terminal._demo import run_demo  # noqa: PLC0415 - the extra is optional
    except ImportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return run_demo()


if __name__ == "__main__":
    sys.exit(main())
