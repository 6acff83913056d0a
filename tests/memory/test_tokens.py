"""Offline token counting and budgets: memory.tokens."""

from __future__ import annotations

import gzip
import hashlib
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tiktoken.load
from hypothesis import given, settings
from hypothesis import strategies as st
from tiktoken_ext import openai_public  # type: ignore[import-untyped]

from fabula.memory import tokens
from fabula.memory.tokens import (
    ApproximateCounter,
    TiktokenCounter,
    TokenCounter,
    default_counter,
    fit,
    shipped_encoding,
    truncate_to_budget,
)

COUNTER = ApproximateCounter()

# max(o200k_base, cl100k_base) for each sample, measured with the real encodings.
SAMPLES = {
    "english": (
        100,
        "Mirela Vasquez-Thornbury had never trusted the lighthouse keeper. He spoke too softly, "
        "as if every word cost him a coin, and he watched the harbour the way a cat watches a "
        "mousehole. When the Kestrel's Wake limped into Port Aldhaven three days late, its "
        "mainsail torn and its captain missing, it was the keeper who first rowed out to meet "
        'it.\n\n"You\'ll want to see this," he said, handing her a waterlogged journal.',
    ),
    "french": (
        43,
        "Le vieux marin regardait la mer depuis la falaise, et il se souvenait des tempêtes "
        "qu'il avait traversées. « Où sont passés mes compagnons ? » murmura-t-il.",
    ),
    "russian": (
        65,
        "Старый капитан долго смотрел на горизонт, где тучи собирались в грозовой фронт. "
        "«Мы не успеем вернуться до заката», — сказал он тихо.",
    ),
    "chinese": (
        55,
        "老船长站在悬崖上，望着远方的大海，回忆起他年轻时经历过的风暴。他的同伴们都去哪里了？",
    ),
    "json": (
        68,
        '{"story": "harbour", "turn": 14, "beliefs": [{"holder": "Mirela", "about": "Ansel", '
        '"claim": "hides the journal", "confidence": 0.7}], "valid_at": "2024-05-01T06:45:00Z"}',
    ),
    "code": (
        49,
        "def project_beliefs(story: str, character: str, as_of: int) -> list[Belief]:\n"
        "    return [b for b in load(story) if b.holder == character and b.turn <= as_of]\n",
    ),
}


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to resolve or connect fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(tiktoken.load, "read_file", refuse)


@pytest.fixture()
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """tiktoken's cache pointed at an empty folder, in ``os.environ`` as tiktoken reads it."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    yield tmp_path


text = st.text(max_size=300)


class TestApproximateCounter:
    def test_empty_text_has_no_tokens(self) -> None:
        """The empty string counts 0; anything else at least 1."""
        assert COUNTER.count("") == 0
        assert COUNTER.count(" ") == 1
        assert COUNTER.count("a") == 1

    def test_common_words_cost_one_token_each(self) -> None:
        """A space before a word is free; short common words are one token."""
        assert COUNTER.count("the cat sat on the mat") == 6

    def test_digits_count_in_groups_of_three(self) -> None:
        """As tiktoken splits them."""
        assert COUNTER.count("1234567") == 3

    def test_rare_letter_pairs_cost_more(self) -> None:
        """An invented string counts more than a common word of the same length."""
        assert COUNTER.count("xqzvkwpj") > COUNTER.count("absolute")

    @pytest.mark.parametrize("name", sorted(SAMPLES))
    def test_over_counts_real_encodings(self, name: str) -> None:
        """At least max(o200k_base, cl100k_base), within a factor of 1.5 (2 for Chinese)."""
        exact, sample = SAMPLES[name]
        estimate = COUNTER.count(sample)
        assert exact <= estimate <= exact * (2 if name == "chinese" else 1.5)

    @given(text, text)
    def test_monotone_under_concatenation(self, a: str, b: str) -> None:
        """Appending or prepending text never lowers the count."""
        joined = COUNTER.count(a + b)
        assert joined >= COUNTER.count(a)
        assert joined >= COUNTER.count(b)

    @given(text)
    def test_deterministic(self, sample: str) -> None:
        """The same text always counts the same."""
        assert COUNTER.count(sample) == ApproximateCounter().count(sample)

    def test_is_a_token_counter(self) -> None:
        """It satisfies the protocol."""
        assert isinstance(COUNTER, TokenCounter)


class TestDefaultCounter:
    def test_empty_cache_gives_the_shipped_encoding(self, empty_cache: Path) -> None:
        """Without a cached encoding file nothing is downloaded (the fixture refuses it):
        o200k_base comes from the copy shipped with Fabula."""
        counter = default_counter()
        assert isinstance(counter, TiktokenCounter)
        assert counter.name == "o200k_base"
        assert counter.count("hello world") == 2

    def test_disabled_cache_gives_the_shipped_encoding(self) -> None:
        """An empty TIKTOKEN_CACHE_DIR disables tiktoken's cache: it would always download."""
        counter = default_counter(env={"TIKTOKEN_CACHE_DIR": ""})
        assert isinstance(counter, TiktokenCounter)
        assert counter.encoding is shipped_encoding()

    def test_approximate_on_request(self, empty_cache: Path) -> None:
        """FABULA_TOKEN_COUNTER=approximate gives the estimate, whatever is cached."""
        counter = default_counter("approximate", {"TIKTOKEN_CACHE_DIR": ""})
        assert isinstance(counter, ApproximateCounter)

    def test_an_encoding_not_offline_falls_through(self, empty_cache: Path) -> None:
        """cl100k_base asked for but not cached: the shipped o200k_base counts instead."""
        counter = default_counter("cl100k_base", {"TIKTOKEN_CACHE_DIR": ""})
        assert isinstance(counter, TiktokenCounter)
        assert counter.name == "o200k_base"

    def test_corrupt_cached_file_is_not_used_nor_removed(self, empty_cache: Path) -> None:
        """tiktoken deletes a file with the wrong hash and downloads again; we never let it."""
        url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
        cached = empty_cache / hashlib.sha1(url.encode()).hexdigest()
        cached.write_bytes(b"not an encoding\n")
        counter = default_counter()
        assert isinstance(counter, TiktokenCounter)
        assert counter.encoding is shipped_encoding()
        assert cached.read_bytes() == b"not an encoding\n"

    def test_a_cached_copy_is_read_by_tiktoken(self, empty_cache: Path) -> None:
        """A verified file in tiktoken's cache is used through tiktoken itself, and the
        shipped copy builds exactly what tiktoken's own constructor builds from it."""
        url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
        packed = Path(tokens.__file__).parent / "data" / "o200k_base.tiktoken.gz"
        cached = empty_cache / hashlib.sha1(url.encode()).hexdigest()
        cached.write_bytes(gzip.decompress(packed.read_bytes()))
        counter = default_counter()
        assert isinstance(counter, TiktokenCounter)
        assert counter.encoding is not shipped_encoding()
        made = openai_public.o200k_base()  # reads the cached file, as tiktoken would
        shipped = shipped_encoding()
        assert shipped is not None
        assert made["pat_str"] == shipped._pat_str
        assert made["special_tokens"] == shipped._special_tokens
        assert made["mergeable_ranks"] == shipped._mergeable_ranks
        for _, sample in SAMPLES.values():
            assert counter.count(sample) == TiktokenCounter(shipped).count(sample)

    def test_data_gym_cache_dir_is_honoured(self, tmp_path: Path) -> None:
        """DATA_GYM_CACHE_DIR is read when TIKTOKEN_CACHE_DIR is absent, as tiktoken does."""
        url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
        (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(b"corrupt\n")
        counter = default_counter(env={"DATA_GYM_CACHE_DIR": str(tmp_path)})
        assert isinstance(counter, TiktokenCounter)  # the corrupt file there is skipped

    def test_machine_default_counts(self) -> None:
        """Whatever this machine offers counts text, with or without a cached encoding."""
        counter = default_counter()
        assert isinstance(counter, ApproximateCounter | TiktokenCounter)
        assert counter.count("hello world") >= 2


class TestTruncateToBudget:
    def test_text_that_fits_is_returned_whole(self) -> None:
        assert truncate_to_budget("the cat sat", 10, COUNTER) == "the cat sat"

    def test_cut_falls_after_a_word(self) -> None:
        """The longest run of whole words that fits."""
        assert truncate_to_budget("the cat sat on the mat", 3, COUNTER) == "the cat sat"

    def test_a_word_longer_than_the_budget_is_cut_inside(self) -> None:
        """Only when not even the first word fits."""
        cut = truncate_to_budget("xqzvkwpjxqzvkwpj and more", 2, COUNTER)
        assert cut and "xqzvkwpjxqzvkwpj".startswith(cut)
        assert COUNTER.count(cut) <= 2

    def test_budget_below_one_gives_nothing(self) -> None:
        assert truncate_to_budget("the cat", 0, COUNTER) == ""
        assert truncate_to_budget("the cat", -5, COUNTER) == ""

    @given(text, st.integers(min_value=-1, max_value=60))
    def test_never_exceeds_the_budget(self, sample: str, budget: int) -> None:
        """The result is a prefix counting at most the budget."""
        cut = truncate_to_budget(sample, budget, COUNTER)
        assert sample.startswith(cut)
        assert COUNTER.count(cut) <= max(budget, 0)

    @given(text, st.integers(min_value=0, max_value=30))
    def test_holds_for_a_counter_not_monotone_on_prefixes(self, sample: str, budget: int) -> None:
        """BPE can count a prefix higher than the whole; the budget still holds."""
        counter = _Jumpy()
        assert counter.count(truncate_to_budget(sample, budget, counter)) <= max(budget, 0)


class _Jumpy:
    """Counts characters, but a text ending in a vowel costs ten more."""

    def count(self, text: str) -> int:
        return len(text) + (10 if text[-1:] in ("a", "e", "i", "o", "u") else 0)


class TestFit:
    def test_sections_in_order_with_headings(self) -> None:
        """Each section under ``## label``, separated by a blank line."""
        out = fit([("Plan", "go north"), ("Recent", "they left")], 100, COUNTER)
        assert out == "## Plan\ngo north\n\n## Recent\nthey left"

    def test_empty_label_has_no_heading_and_empty_body_is_skipped(self) -> None:
        out = fit([("", "preamble"), ("Nothing", ""), ("Plan", "go")], 100, COUNTER)
        assert out == "preamble\n\n## Plan\ngo"

    def test_section_that_does_not_fit_is_cut_at_a_line(self) -> None:
        """Whole lines only; every later section is left out, even one that would fit."""
        body = "\n".join(f"line {i} of the story" for i in range(40))
        out = fit([("Plan", "go"), ("Story", body), ("Tiny", "x")], 40, COUNTER)
        assert out.startswith("## Plan\ngo\n\n## Story\nline 0 of the story\n")
        kept = out.split("## Story\n", 1)[1].split("\n")
        assert kept == body.split("\n")[: len(kept)]
        assert "Tiny" not in out
        assert COUNTER.count(out) <= 40

    def test_section_without_a_fitting_line_is_dropped(self) -> None:
        """No heading is left standing alone."""
        out = fit([("Plan", "go"), ("Story", "a very long first line " * 20)], 12, COUNTER)
        assert out == "## Plan\ngo"

    def test_nothing_fits(self) -> None:
        assert fit([("Plan", "go north now")], 0, COUNTER) == ""

    @settings(max_examples=200)
    @given(
        st.lists(st.tuples(st.text(max_size=20), st.text(max_size=200)), max_size=6),
        st.integers(min_value=0, max_value=120),
    )
    def test_never_exceeds_the_budget(self, sections: list[tuple[str, str]], budget: int) -> None:
        """Whatever the sections and the budget."""
        assert COUNTER.count(fit(sections, budget, COUNTER)) <= budget
