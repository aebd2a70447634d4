"""Versions of the package and of the spec it implements."""

from typing import Final

__all__ = ["SPEC_VERSION", "__version__"]

#: The package version.
__version__: Final[str] = "0.3.0"
#: The version of ``spec/user-interaction.md`` this package implements.
SPEC_VERSION: Final = "1.7.0"
