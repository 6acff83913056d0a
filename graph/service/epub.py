"""EPUB 3 exports (``fabula export --format epub``, the studio's "Export .epub"), written
with ebooklib: a book of chapters, each a heading and its paragraphs, with a table of
contents. All story text is escaped: a passage is prose, never markup.

:func:`story_epub` is a branch's story; :func:`lived_epub` the story as one character
lived it (``--as C``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from ebooklib import epub

from fabula.graph.service import reading
from fabula.graph.service.responses.stories import LivedOut
from fabula.memory.store.view import StoryReads


@dataclass(frozen=True)
class Chapter:
    """One chapter: its heading, its paragraphs, and optional subheadings before some."""

    title: str
    paragraphs: Sequence[str]
    headings: dict[int, str] | None = None  # paragraph index -> a subheading before it


def _xhtml(chapter: Chapter) -> str:
    body = [f"<h1>{escape(chapter.title)}</h1>"]
    for i, paragraph in enumerate(chapter.paragraphs):
        if chapter.headings and i in chapter.headings:
            body.append(f"<h2>{escape(chapter.headings[i])}</h2>")
        body.append(f"<p>{escape(paragraph)}</p>")
    return "\n".join(body)


def epub_book(
    identifier: str,
    title: str,
    chapters: Sequence[Chapter],
    *,
    author: str = "Fabula",
    language: str = "en",
) -> bytes:
    """The EPUB file of a book ``title`` (``identifier``: its unique id) of ``chapters``."""
    book = epub.EpubBook()
    book.set_identifier(identifier)
    book.set_title(title)
    book.set_language(language)
    book.add_author(author)
    items = []
    for n, chapter in enumerate(chapters, start=1):
        item = epub.EpubHtml(title=chapter.title, file_name=f"chapter{n}.xhtml", lang=language)
        item.content = _xhtml(chapter)
        book.add_item(item)
        items.append(item)
    book.toc = items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    buffer = io.BytesIO()
    epub.write_epub(buffer, book)
    return buffer.getvalue()


async def story_epub(store: StoryReads, as_of: int | None = None) -> bytes:
    """The branch's text (to turn ``as_of``) as an EPUB book: the premise, then the story,
    a paragraph a turn."""
    text = await reading.text(store, as_of)
    document = await store.pack_document()
    premise = json.loads(document).get("premise") if document else None
    chapters = [Chapter("Premise", [premise])] if isinstance(premise, str) and premise else []
    chapters.append(Chapter(text.title, [t.text for t in text.turns]))
    ident = f"fabula:{store.story}:{store.branch}"
    return epub_book(ident, text.title, chapters)


def lived_epub(found: LivedOut) -> bytes:
    """A character's story as an EPUB book: what it lived, a section a turn, then what it
    believes."""
    lines: list[str] = []
    headings: dict[int, str] = {}
    for turn in found.turns:
        headings[len(lines)] = f"Turn {turn.turn}"
        lines.extend(turn.lines)
    chapters = [Chapter(f"As {found.name} lived it", lines, headings)]
    if found.beliefs:
        chapters.append(Chapter(f"What {found.name} believes", [b.sentence for b in found.beliefs]))
    ident = f"fabula:{found.story}:{found.branch}:as:{found.character}"
    return epub_book(ident, f"{found.title}: as {found.name} lived it", chapters)
