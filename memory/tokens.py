"""Offline token counting, and fitting text into a token budget.

:func:`default_counter` gives the best counter this machine can offer without the
network: tiktoken's ``o200k_base`` (the encoding of OpenAI's current models), read from
tiktoken's local cache when it holds the file, otherwise from the copy shipped with
Fabula (``memory/data/o200k_base.tiktoken.gz``), each checked against the hash tiktoken
pins for it; ``cl100k_base`` when only that one is cached. :class:`ApproximateCounter`
is a deterministic estimate, calibrated to count a little more than either encoding, for
when no encoding can be read or the ``token_counter`` setting
(``FABULA_TOKEN_COUNTER=approximate``) asks for it (say, for a model whose tokenizer
splits text finer than OpenAI's).

:func:`truncate_to_budget` and :func:`fit` never return text that counts more than
the budget under the counter they are given.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import Protocol, runtime_checkable

import tiktoken

from fabula.settings import CounterName


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens a model would see for a text."""

    def count(self, text: str) -> int:
        """The number of tokens in ``text``; 0 for the empty string."""
        ...


class TiktokenCounter:
    """Exact counts with a tiktoken encoding; special tokens are counted as plain text."""

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self.encoding = encoding

    @property
    def name(self) -> str:
        return self.encoding.name

    def count(self, text: str) -> int:
        return len(self.encoding.encode_ordinary(text))


# --- the approximate counter ------------------------------------------------------------

# Pieces much like BPE pre-tokenizers cut: letter runs, digit runs, whitespace runs and
# runs of everything else (punctuation, symbols, emoji, combining marks, underscores).
_PIECES = re.compile(r"(?P<word>[^\W\d_]+)|(?P<digits>\d+)|(?P<space>\s+)|(?P<other>[^\w\s]+|_+)")

# The 275 letter pairs that make up 95% of pairs in English prose. BPE vocabularies hold
# long merges of common pairs, so a word made of them costs about one token; a rare pair
# (invented names, identifiers, random strings) usually marks a token boundary.
_COMMON_PAIRS = frozenset(
    re.findall(
        r"[a-z]{2}",
        """ab ac ad ae af ag ai ak al am an ap ar as at au av ay ba be bi bl bo br bs bu by ca cc
    cd ce ch ci ck cl co cp cr cs ct cu cy da db dd de di dl do dr ds du ea eb ec ed ee ef
    eg eh ei el em en ep eq er es et ev ew ex ey fa fc fe ff fi fl fo fr fs ft fu ga gc ge
    gh gi gl gm gn go gp gr gs gu ha hd he hi ho hp hr ht hu ia ib ic id ie if ig ik il im
    in io ip ir is it iv ix iz ja ju ka ke ki ko ks la ld le li ll lo ls lt lu ly ma mb me
    mi ml mm mo mp ms mu na nc nd ne nf ng ni nk nl nm nn no ns nt nu nv ny ob oc od of og
    oi ok ol om on oo op or os ot ou ov ow pa pd pe pg ph pi pl po pp pr ps pt pu py qu ra
    rc rd re rg ri rk rl rm rn ro rr rs rt ru ry sa sc se sh si sl sm so sp sr ss st su sy
    ta tc te th ti tl to tp tr ts tt tu tw ty ua ub uc ud ue ug ui ul um un up ur us ut va
    ve vi wa we wh wi wo wr xe xp xt yp ys ze""",
    )
)

# Costs in thousandths of a token, fitted against max(o200k_base, cl100k_base) so that
# whole documents count 1.1-1.25 times as many on English prose and fiction, 1.3-1.4 on
# JSON and code, 1.07-2 on prose in a dozen other scripts, 0.95 or more on random
# strings. Short pieces can still come out a token or two under: ten-line chunks of
# prose were under in 0.06% of cases, by 10% at worst (lists of names).
_MILLI = 1000
_PER_ASCII_LETTER = 160
_PER_INITIAL_CAPITAL = 400  # names: capitalised words are rarer, so split more
_PER_INNER_CAPITAL = 150  # BPE splits words in capitals into short pieces
_PER_RARE_PAIR = 1600
_PER_NON_ASCII_LETTER = {2: 1100, 3: 1600, 4: 2000}  # by UTF-8 length
_PER_CYRILLIC_LETTER = 700  # both vocabularies hold far more Cyrillic than Greek or Arabic
_PER_SYMBOL = {1: 700, 2: 1400, 3: 2100, 4: 2800}  # by UTF-8 length
_PER_SPACE = 250


def _utf8_length(char: str) -> int:
    code = ord(char)
    return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4


def _word_cost(word: str) -> int:
    """A letter run without a lower-to-upper case change (``camelCase`` is two runs)."""
    cost = _PER_INNER_CAPITAL * sum(1 for char in word[1:] if char.isupper())
    if word[0].isupper():
        cost += _PER_INITIAL_CAPITAL
    previous = ""  # "" at the start, "~" after a non-ASCII letter
    for char in word:
        if char.isascii():
            cost += _PER_ASCII_LETTER
            lower = char.lower()
            if previous == "~" or (previous and previous + lower not in _COMMON_PAIRS):
                cost += _PER_RARE_PAIR
            previous = lower
        else:
            if previous and previous != "~":
                cost += _PER_RARE_PAIR
            is_cyrillic = "\u0400" <= char <= "\u04ff"
            cost += (
                _PER_CYRILLIC_LETTER if is_cyrillic else _PER_NON_ASCII_LETTER[_utf8_length(char)]
            )
            previous = "~"
    return max(_MILLI, cost)


@lru_cache(maxsize=65536)  # a pure function of the run; prose repeats its words a lot
def _letters_cost(run: str) -> int:
    cost, start = 0, 0
    for i in range(1, len(run)):
        if run[i - 1].islower() and run[i].isupper():
            cost += _word_cost(run[start:i])
            start = i
    return cost + _word_cost(run[start:])


def _space_cost(run: str) -> int:
    """A token per stretch of line breaks and per stretch of other space (BPE keeps them
    apart), or a quarter token per character when that is more."""
    breaks = [char in "\r\n" for char in run]
    stretches = 1 + sum(1 for i in range(1, len(run)) if breaks[i] != breaks[i - 1])
    return max(_MILLI * stretches, _PER_SPACE * len(run))


class ApproximateCounter:
    """A deterministic token estimate that needs no vocabulary, calibrated to over-count.

    Every piece costs at least one token; a space before a word or a symbol is free (BPE
    merges it into the next token); digits count in groups of three, as tiktoken splits
    them. The count never decreases when text is appended or prepended.
    """

    name = "approximate"

    def count(self, text: str) -> int:
        milli = 0
        for piece in _PIECES.finditer(text):
            run = piece.group()
            kind = piece.lastgroup
            if kind == "word":
                milli += _letters_cost(run)
            elif kind == "digits":
                ascii_digits = sum(1 for c in run if c.isascii())
                milli += _MILLI * (-(-ascii_digits // 3) + len(run) - ascii_digits)
            elif kind == "space":
                end = piece.end()
                if run == " " and end < len(text) and not text[end].isdigit():
                    continue
                milli += _space_cost(run)
            else:
                symbols = sum(_PER_SYMBOL[_utf8_length(c)] for c in run)
                milli += max(_MILLI, symbols)
        return -(-milli // _MILLI)


# --- tiktoken, from the local cache only --------------------------------------------------

_ENCODINGS = {
    # name: (the URL tiktoken caches it under, the sha256 tiktoken checks it against)
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}


def _tiktoken_cache_dir(env: Mapping[str, str]) -> Path | None:
    """Where tiktoken looks for its files (tiktoken.load.read_file_cached); None: no cache."""
    if "TIKTOKEN_CACHE_DIR" in env:
        directory = env["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in env:
        directory = env["DATA_GYM_CACHE_DIR"]
    else:
        directory = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return Path(directory) if directory else None


def _cached_file(name: str, env: Mapping[str, str]) -> Path | None:
    """The cached encoding file, only if tiktoken would use it without downloading."""
    directory = _tiktoken_cache_dir(env)
    if directory is None:
        return None
    url, sha256 = _ENCODINGS[name]
    path = directory / hashlib.sha1(url.encode()).hexdigest()
    try:
        data = path.read_bytes()
    except OSError:
        return None
    # On a hash mismatch tiktoken deletes the file and downloads it again.
    return path if hashlib.sha256(data).hexdigest() == sha256 else None


@lru_cache(maxsize=4)
def _load_encoding(name: str, path: Path) -> tiktoken.Encoding:
    del path  # part of the cache key only: a file that appears later is loaded then
    return tiktoken.get_encoding(name)


# What tiktoken_ext.openai_public builds o200k_base from, besides its ranks (tiktoken is
# MIT-licensed); tests/memory/test_tokens.py checks it against tiktoken's own constructor.
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_O200K_SPECIAL = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
SHIPPED = "o200k_base"  # the encoding whose file ships with Fabula


@lru_cache(maxsize=1)
def shipped_encoding() -> tiktoken.Encoding | None:
    """``o200k_base`` from the copy shipped with Fabula; None if that file is missing or
    does not match the hash tiktoken pins for it (it is never trusted otherwise)."""
    try:
        packed = resources.files("fabula.memory").joinpath("data", f"{SHIPPED}.tiktoken.gz")
        data = gzip.decompress(packed.read_bytes())
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    if hashlib.sha256(data).hexdigest() != _ENCODINGS[SHIPPED][1]:
        return None
    # binascii's decoder is what base64.b64decode calls, without its per-call wrapping
    decode = binascii.a2b_base64
    ranks = {
        decode(token): int(rank)
        for token, rank in map(bytes.split, filter(None, data.splitlines()))
    }
    return tiktoken.Encoding(
        SHIPPED, pat_str=_O200K_PATTERN, mergeable_ranks=ranks, special_tokens=_O200K_SPECIAL
    )


def default_counter(
    wanted: CounterName | None = None, env: Mapping[str, str] | None = None
) -> TokenCounter:
    """The best counter available offline; never touches the network.

    ``wanted`` (the ``token_counter`` setting, ``FABULA_TOKEN_COUNTER``): ``approximate``
    for :class:`ApproximateCounter`, or an encoding's name to prefer it (an encoding that
    cannot be read offline falls through to the next best); ``None``: the best there is.
    ``env`` (default ``os.environ``) is where ``TIKTOKEN_CACHE_DIR`` and
    ``DATA_GYM_CACHE_DIR`` are looked up, as tiktoken does (tiktoken reads ``os.environ``
    itself, so a different ``env`` must agree with it).
    """
    env = os.environ if env is None else env
    if wanted == "approximate":
        return ApproximateCounter()
    for name in sorted(_ENCODINGS, key=lambda n: n != wanted):  # the one asked for first
        path = _cached_file(name, env)
        if path is not None:
            return TiktokenCounter(_load_encoding(name, path))
        if name == SHIPPED and (shipped := shipped_encoding()) is not None:
            return TiktokenCounter(shipped)
    return ApproximateCounter()


class LazyCounter:
    """A counter made when it first counts (``make()``, e.g. :func:`default_counter`):
    loading an encoding costs a command that never counts a token most of its start (the
    shipped ``o200k_base`` is 200,000 ranks to decode). :attr:`counter` is the one made."""

    def __init__(self, make: Callable[[], TokenCounter]) -> None:
        self._make = make

    @cached_property
    def counter(self) -> TokenCounter:
        """The counter itself, made now if it has not been."""
        return self._make()

    def count(self, text: str) -> int:
        return self.counter.count(text)


# --- budgets -------------------------------------------------------------------------------


def _longest_prefix(text: str, cuts: Sequence[int], budget: int, counter: TokenCounter) -> int:
    """The largest cut in ``cuts`` (ascending) whose prefix fits; 0 when none does.

    Only cuts that were counted and found to fit are returned, so the result fits
    even for a counter that is not monotone on prefixes (BPE is not, quite).
    """
    lo, hi, best = 0, len(cuts), 0
    while lo < hi:
        mid = (lo + hi) // 2
        if counter.count(text[: cuts[mid]]) <= budget:
            best, lo = cuts[mid], mid + 1
        else:
            hi = mid
    return best


def truncate_to_budget(text: str, budget: int, counter: TokenCounter) -> str:
    """The longest prefix of ``text`` that counts at most ``budget`` tokens.

    The cut falls after a word; only when not even the first word fits is it cut
    inside that word. Returns ``text`` itself when it fits, ``""`` for a budget below 1.
    """
    if counter.count(text) <= budget:
        return text
    if budget < 1:
        return ""
    word_ends = [m.end() for m in re.finditer(r"\S+", text)]
    end = _longest_prefix(text, word_ends, budget, counter)
    if end == 0:
        end = _longest_prefix(text, range(1, len(text) + 1), budget, counter)
    return text[:end]


def fit(sections: Sequence[tuple[str, str]], budget: int, counter: TokenCounter) -> str:
    """Assemble ``(label, body)`` sections, most important first, within ``budget`` tokens.

    Each section is written as ``## label`` over its body (the body alone when the label
    is empty), sections separated by a blank line; sections with an empty body are
    skipped. The first section that does not fit whole is cut after its last line that
    fits (dropped when none does), and every section after it is left out. The whole
    result counts at most ``budget`` tokens.

    Lines are costed one by one (each counted once), and the assembled text is counted
    whole to confirm, dropping trailing lines in the rare case the estimate was short.
    """
    pieces = [(f"## {label}" if label else "", body) for label, body in sections if body]
    whole = "\n\n".join((head + "\n" if head else "") + body for head, body in pieces)
    if counter.count(whole) <= budget:
        return whole
    kept: list[list[str]] = []  # per section: header (if any) then body lines
    used = 0
    for head, body in pieces:
        lines = [head] if head else []
        cost = counter.count(head) + 1 if head else 0
        cost += 2 if kept else 0  # the blank line between sections
        body_lines = body.split("\n")
        costs = [counter.count(line) + 1 for line in body_lines]
        if used + cost + sum(costs) <= budget:
            kept.append(lines + body_lines)
            used += cost + sum(costs)
            continue
        taken = []
        for line, line_cost in zip(body_lines, costs, strict=True):
            if used + cost + line_cost > budget:
                break
            taken.append(line)
            cost += line_cost
        if taken:
            kept.append(lines + taken)
        break

    def render(parts: list[list[str]]) -> str:
        return "\n\n".join("\n".join(p) for p in parts)

    text = render(kept)
    while kept and counter.count(text) > budget:
        last = kept[-1]
        header = 1 if last and last[0].startswith("## ") else 0
        if len(last) - header > 1:
            last.pop()
        else:
            kept.pop()
        text = render(kept)
    return text
