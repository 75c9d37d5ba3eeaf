"""A griffe extension for the API reference (mkdocs.yml): icepark's docstrings use Sphinx's
roles (``:class:`~icepark.errors.ValidationError```) and ``::`` before literal blocks, which
mkdocstrings would show as typed; this turns a role into inline code of the name (the last
part after ``~``, as Sphinx shows it) and ``::`` into ``:``."""

from __future__ import annotations

import re
from typing import Any

import griffe

__all__ = ["SphinxRoles", "plain_roles"]

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):`(~?)([^`]+)`")
_LITERAL = re.compile(r"(\S)::[ \t]*$", re.M)


def plain_roles(text: str) -> str:
    """``text`` with every Sphinx role as inline code and ``word::`` as ``word:``."""

    def _name(match: re.Match[str]) -> str:
        target = match.group(2)
        return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"

    return _LITERAL.sub(r"\1:", _ROLE.sub(_name, text))


class SphinxRoles(griffe.Extension):
    """Rewrite the docstring of every object griffe loads."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(obj.docstring.value)
