"""Where a table or view may keep its files: only at absolute locations.

A relative location would be resolved against whatever directory the writing process runs in
(a REST server, a notebook kernel), so two processes would write one table to two places.
Java leaves this to the file system; icepark refuses it when metadata is created or updated
(metadata read from files is taken as it is).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from icepark.errors import ValidationError

__all__ = ["LOCATION_PROPERTIES", "check_location", "check_location_properties", "is_absolute"]

LOCATION_PROPERTIES = ("write.data.path", "write.metadata.path", "write.folder-storage.path")
"""Table properties naming a folder the table writes to."""

_ABSOLUTE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|/)")  # a scheme (s3:, file:, C:), or a root


def is_absolute(location: str) -> bool:
    """Whether ``location`` is a URI with a scheme or an absolute path."""
    return bool(_ABSOLUTE.match(location))


def check_location(location: str, what: str) -> None:
    """Raise ValidationError naming ``what`` (e.g. ``"Table db.t: location"``) unless
    ``location`` is absolute."""
    if not is_absolute(location):
        raise ValidationError(
            f"{what} {location!r} is not absolute "
            "(a URI such as s3://bucket/path or file:/path, or an absolute path)"
        )


def check_location_properties(properties: Mapping[str, str], what: str) -> None:
    """Raise ValidationError unless every folder property among ``properties`` is absolute
    (an empty value means the default folder and is allowed)."""
    for key in LOCATION_PROPERTIES:
        value = properties.get(key)
        if value:
            check_location(value, f"{what} property {key}:")
