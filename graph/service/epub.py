"""EPUB 3 exports (``fabula export --format epub``), written with ebooklib: a book of
chapters, each a heading and its paragraphs, with a table of contents. All story text is
escaped: a passage is prose, never markup.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from ebooklib import epub

__all__ = ["Chapter", "epub_book"]


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


def epub_book(identifier: str, title: str, chapters: Sequence[Chapter], *,
              author: str = "Fabula", language: str = "en") -> bytes:  # fmt: skip
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
