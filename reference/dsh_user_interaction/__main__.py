"""``python -m dsh_user_interaction demo``: ask a sample batch in this terminal.

The terminal extra is imported only here, inside the command, so importing
the core stays light.
"""

from __future__ import annotations

import argparse
import sys

_DESCRIPTION = "Try the terminal provider of dsh_user_interaction in this terminal."
_DEMO = (
    "demo: ask a sample batch of four questions (a single choice with hostile text"
    " drawn as escapes, a multiple choice, free text and a plan review) as a"
    " form filling the screen, then print the answer as compact JSON on standard output."
    " It needs the terminal extra (pip install 'dsh-user-interaction[terminal]')"
    " and an interactive terminal. Exit status: 0 answered, 1 dismissed (Esc or"
    " Ctrl-C) or the extra missing, 2 a wrong command line or no terminal."
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dsh_user_interaction",
        usage="%(prog)s demo",
        description=_DESCRIPTION,
        epilog=_DEMO,
    )
    parser.add_argument("command", choices=["demo"], help="the command to run (only demo)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command named in *argv* (``demo``); return the exit status."""
    args = sys.argv[1:] if argv is None else argv
    try:
        _parser().parse_args(args)
    except SystemExit as stop:  # argparse has printed the help or the usage error
        return stop.code if isinstance(stop.code, int) else 2
    try:
        from .extra.terminal._demo import run_demo  # noqa: PLC0415 - the extra is optional
    except ImportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return run_demo()


if __name__ == "__main__":
    sys.exit(main())
