"""Optional integrations, each in its own subpackage with its own extra.

Like ``hypothesis.extra``: importing ``dsh_user_interaction`` never imports
these, and each raises one clear :class:`ImportError` naming its extra when
that extra is not installed.
"""
