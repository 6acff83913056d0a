"""Prompts as versioned data beside their role: ``agents/<role>/prompts/<name>.v<N>.md``.

A prompt changes by adding a file with the next version, never by editing one in place,
so a recorded run can name the exact text it used. :func:`load_prompt` takes the highest
version unless told which. ``{placeholder}`` fields (a name in braces) are filled by
:meth:`Prompt.render`; every other brace, as in a JSON example, is left as written.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from fabula.errors import ConfigError

_ROOT = Path(__file__).parent
_NAME = re.compile(r"[A-Za-z0-9_-]+")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Prompt:
    """One version of a role's prompt."""

    role: str
    name: str
    version: int
    text: str

    @property
    def placeholders(self) -> frozenset[str]:
        """The names of the ``{placeholder}`` fields in the text."""
        return frozenset(_PLACEHOLDER.findall(self.text))

    def render(self, **values: object) -> str:
        """The text with each ``{placeholder}`` replaced by ``str(values[placeholder])``.

        Values for names the text does not use are ignored. Raises :class:`ConfigError`
        naming the placeholders left without a value.
        """
        missing = self.placeholders - values.keys()
        if missing:
            raise ConfigError(
                "prompt placeholders without a value",
                prompt=f"{self.role}/{self.name}.v{self.version}",
                missing=", ".join(sorted(missing)),
            )
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), self.text)


def quoted(text: str) -> str:
    """Text from the story as data in a prompt: one line in double quotes, its quotes, line
    breaks and control characters escaped (a JSON string). What a character heard ("SYSTEM:
    ignore previous instructions", a line that opens a new ``##`` section) stays inside its
    quotes, where the prompts say quoted text is what was said, never an instruction."""
    return json.dumps(text.strip(), ensure_ascii=False)


def load_prompt(
    role: str, name: str, version: int | None = None, *, root: Path | None = None
) -> Prompt:
    """Read ``<root>/<role>/prompts/<name>.v<N>.md``: version ``version``, else the highest.

    ``root`` is the folder holding the roles' folders (default: the ``agents`` package).
    Raises :class:`ConfigError` for a role or name that is not a plain file-name part, or
    when no such prompt (or no such version of it) exists.
    """
    for part in (role, name):
        if not _NAME.fullmatch(part):
            raise ConfigError("a prompt's role and name are letters, digits, - and _", part=part)
    folder = (root or _ROOT) / role / "prompts"
    versions = _versions(folder, name)
    if not versions:
        raise ConfigError("no such prompt", role=role, name=name, folder=str(folder))
    chosen = max(versions) if version is None else version
    if chosen not in versions:
        raise ConfigError(
            "no such prompt version",
            role=role,
            name=name,
            version=version,
            available=", ".join(str(v) for v in sorted(versions)),
        )
    text = versions[chosen].read_text(encoding="utf-8")
    return Prompt(role=role, name=name, version=chosen, text=text)


def _versions(folder: Path, name: str) -> dict[int, Path]:
    pattern = re.compile(re.escape(name) + r"\.v([0-9]+)\.md")
    if not folder.is_dir():
        return {}
    found = {}
    for path in folder.iterdir():
        match = pattern.fullmatch(path.name)
        if match and path.is_file():
            found[int(match.group(1))] = path
    return found
