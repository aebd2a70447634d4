"""``python -m dsh_user_interaction demo``: ask a sample batch in this terminal.

The terminal extra is imported only here, inside the command, so importing
the core stays light.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run the command named in *argv* (``demo``); return the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if args != ["demo"]:
        print("usage: python -m dsh_user_interaction demo", file=sys.stderr)
        return 2
    try:
        from .extra.terminal._demo import run_demo  # noqa: PLC0415 - the extra is optional
    except ImportError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return run_demo()


if __name__ == "__main__":
    sys.exit(main())
