"""Story-shaped schemas: built from what each role may see, strict, and compilable.

For views hypothesis generates (entities of every kind, with attributes; developments and
hypotheses, open or not; a text of controlled and free sentences), every role's schema

* keeps OpenAI's strict rules (:func:`strict_problems` is empty);
* compiles with xgrammar (vLLM, SGLang) and llguidance (llama.cpp), and the compiled grammar
  accepts a reply made of the view's own ids, and refuses one naming an id it does not have;
* names nothing outside the role's view: every ``enum`` and ``const`` value is an id (or a
  name, or a word of the text to read) the role was given, or the schema's own vocabulary
  (kinds of action, attribute names of the view, fixed words such as ``earliest``).

A character's schema is built from its own view only (what its mind returns); the leak
tests check it against what the character witnessed (tests/system/test_leak_property.py,
tests/system/test_leaks.py).
"""

from __future__ import annotations

import json
import re
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from fabula.agents.character.model import proposal_json_schema
from fabula.agents.contracts import INTENT_FIELDS, MAX_ACTIONS, MAX_FOCAL
from fabula.agents.memory_builder.referents import RefKind
from fabula.agents.memory_builder.request import may_tell, read_first
from fabula.agents.memory_builder.schema import (
    ACTION_TOKENS,
    MAX_READ,
    REPLY_TOKENS,
    actions_json_schema,
    actions_schema,
    most_actions,
)
from fabula.agents.planner.model import plan_json_schema
from fabula.agents.recall.model import reading_json_schema
from fabula.agents.schemas import (
    cache_counts,
    closed,
    expanded,
    line,
    named,
    strict_problems,
)
from fabula.agents.summariser.model import summary_json_schema
from fabula.agents.views import AuthorView
from fabula.memory.actions import STATE_ATTRIBUTES, ActionKind
from fabula.memory.projections import WorldView
from fabula.memory.records import Development, Entity, Hypothesis, StatusChange, slug

xgr = pytest.importorskip("xgrammar")
llg = pytest.importorskip("llguidance")

KINDS = ("character", "place", "object")
NAME = st.from_regex(r"[a-z]{3,8}( [a-z]{3,8})?", fullmatch=True)
ATTRIBUTES = st.dictionaries(
    st.sampled_from(["colour", "size", "mood", "aliases"]), st.just("x"), max_size=2
)
FILLER = ("She hummed by the glass.", "They waited by the rocks.")  # unread, may tell
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def rosters(draw: st.DrawFn) -> dict[str, Entity]:
    """Entities of every kind (a character first), with attributes."""
    names = draw(st.lists(NAME, min_size=2, max_size=10, unique_by=slug))
    kinds = ["character", *(draw(st.sampled_from(KINDS)) for _ in names[1:])]
    return {
        slug(n): Entity(id=slug(n), kind=k, name=n, attributes=draw(ATTRIBUTES))  # type: ignore[arg-type]
        for n, k in zip(names, kinds, strict=True)
    }


@st.composite
def views(draw: st.DrawFn) -> AuthorView:
    """An author's view: a roster, developments (open, resolved), hypotheses (open, not)."""
    entities = draw(rosters())
    characters = sorted(i for i, e in entities.items() if e.kind == "character")
    developments = {}
    for n in range(draw(st.integers(0, 3))):
        status = draw(st.sampled_from(["opened", "advanced", "resolved", "abandoned"]))
        history = (StatusChange(turn=0, status="opened"),) + (
            (StatusChange(turn=1, status=status),) if status != "opened" else ()
        )
        developments[f"d{n}"] = Development(
            id=f"d{n}",
            kind="goal",
            title=f"goal {n}",
            participants=tuple(characters[:1]),
            history=history,
        )
    hypotheses = {}
    for n, dev in enumerate(sorted(developments)):
        status = draw(st.sampled_from(["open", "realised", "discarded"]))
        hypotheses[f"h1.{n}"] = Hypothesis(
            id=f"h1.{n}", development=dev, premise="p", status=status, proposed=1
        )  # type: ignore[arg-type]
    return _view(entities, developments, hypotheses)


def _view(
    entities: dict[str, Entity],
    developments: dict[str, Development],
    hypotheses: dict[str, Hypothesis],
) -> AuthorView:
    """The author's view of story ``s`` after turn 1, with no beliefs."""
    return AuthorView(
        story="s",
        branch="main",
        turn=1,
        entities=entities,
        world=WorldView(story="s", branch="main", as_of=None),
        beliefs={},
        developments=developments,
        hypotheses=hypotheses,
    )


def check_grammars(schema: dict[str, Any], good: dict[str, Any], bad: dict[str, Any]) -> None:
    """Strict-valid, compiled by both engines; ``good`` accepted and ``bad`` refused."""
    assert strict_problems(schema) == []
    text = json.dumps(schema)
    grammar = xgr.Grammar.from_json_schema(text, strict_mode=True)
    assert xgr.testing._is_grammar_accept_string(grammar, json.dumps(good))
    assert not xgr.testing._is_grammar_accept_string(grammar, json.dumps(bad))
    assert llg.LLMatcher.validate_grammar(llg.grammar_from("json_schema", text)) == ""


class TestThePlanner:
    @SETTINGS
    @given(view=views())
    def test_the_plan_schema_is_the_views(self, view: AuthorView) -> None:
        """Focal among the view's characters (1 to MAX_FOCAL), the place among its places,
        developments and hypotheses only open ones; nothing else is named."""
        schema = plan_json_schema(view)
        shape = expanded(schema)
        places = sorted(i for i, e in view.entities.items() if e.kind == "place")
        opened = {d.id for d in view.open_developments()}
        hypotheses = {h.id for h in view.hypotheses.values() if h.status == "open"}
        assert named(schema) <= {*view.characters(), *places, *opened, *hypotheses}
        focal = shape["properties"]["focal"]
        assert (focal["minItems"], focal["maxItems"]) == (1, MAX_FOCAL)
        assert focal["items"]["enum"] == view.characters()
        good = {
            "scene_goal": "Leo comes back",
            "place": places[0] if places else None,
            "focal": view.characters()[:1],
            "beats": ["he returns"],
            "memory_needs": [],
            "developments": sorted(opened)[:1],
            "hypothesis": None,
        }
        check_grammars(schema, good, good | {"focal": ["nobody"]})

    def test_a_turn_does_not_rebuild_it(self) -> None:
        """Built once per (role, view digest): the same ids again are a cache hit, a new
        character a miss."""
        entities = {
            i: Entity(id=i, kind=k, name=i)
            for i, k in [("ada", "character"), ("cove", "place"), ("logbook", "object")]
        }
        view = _view(entities, {}, {})
        plan_json_schema(view)
        before = cache_counts()
        assert plan_json_schema(view) == plan_json_schema(view)
        after = cache_counts()
        assert after["hits"] == before["hits"] + 2 and after["misses"] == before["misses"]
        other = Entity(id="zed_new", kind="character", name="zed new")
        grown = AuthorView(**{**view.__dict__, "entities": {**view.entities, "zed_new": other}})
        focal = expanded(plan_json_schema(grown))["properties"]["focal"]
        assert "zed_new" in focal["items"]["enum"]
        assert cache_counts()["misses"] == after["misses"] + 1


class TestTheCharacter:
    @SETTINGS
    @given(entities=rosters(), data=st.data())
    def test_the_proposal_schema_is_its_own_view(
        self, entities: dict[str, Entity], data: st.DataObject
    ) -> None:
        """Ids only of the entities it knows of, of the kinds each field takes; a listener is
        never itself; attribute names only its own; a kind with no candidate is left out."""
        me = sorted(i for i, e in entities.items() if e.kind == "character")[0]
        attributes = [
            "location",
            *data.draw(st.lists(st.sampled_from(["colour", "mood"]), unique=True)),
        ]
        schema = proposal_json_schema(me, entities, attributes)
        assert named(schema) <= {*entities, *attributes, *INTENT_FIELDS}
        actions = expanded(schema)["properties"]["actions"]
        assert actions["maxItems"] == MAX_ACTIONS
        members = actions["items"]["anyOf"]
        for member in members:
            properties = member["properties"]
            kind = properties["kind"]["const"]
            assert set(properties) == {"kind", "reason", *(f.name for f in INTENT_FIELDS[kind])}
            listener = properties.get("listener", {})
            assert me not in named(listener)
            if kind == "go":
                assert set(properties["target"]["enum"]) == {
                    i for i, e in entities.items() if e.kind == "place"
                }
        has_objects = any(e.kind == "object" for e in entities.values())
        assert any(m["properties"]["kind"]["const"] == "take" for m in members) == has_objects
        wait = {"kind": "wait", "object": None, "line": None, "reason": "watching"}
        unknown = wait | {"object": "nothing_known"}
        check_grammars(
            schema, {"actions": [wait], "intent": "bide"}, {"actions": [unknown], "intent": "x"}
        )


class TestTheExtractor:
    @SETTINGS
    @given(entities=rosters(), data=st.data())
    def test_the_reading_schema_is_the_turns(
        self, entities: dict[str, Entity], data: st.DataObject
    ) -> None:
        """Spans inside the sentences to read; actors among the characters (a place is never
        one); names from the story's entities or the words of the sentences to read."""
        people = sorted(e.name for e in entities.values() if e.kind == "character")
        places = sorted(e.name for e in entities.values() if e.kind == "place")
        controlled = [f"{people[0].capitalize()} went to the {p}." for p in places[:1]]
        sentences = data.draw(st.permutations([*controlled, *FILLER]))
        text = " ".join(sentences)
        _, unread = read_first(text, entities)
        schema = actions_json_schema(text, entities, unread)
        words = {w.strip(".,") for s, e in unread for w in text[s:e].split()}
        vocabulary = {
            *get_args(ActionKind),
            *get_args(RefKind),
            *STATE_ATTRIBUTES,
            "colour",
            "size",
            "mood",
            "likes",
            "loves",
            "hates",
            "dislikes",
        }
        names = {e.name for e in entities.values()}
        assert all(n in names or n in vocabulary or set(n.split()) <= words for n in named(schema))
        members = expanded(schema)["properties"]["actions"]["items"]["anyOf"]
        lo, hi = min(s for s, _ in unread), max(e for _, e in unread)
        for member in members:
            properties = member["properties"]
            assert (
                properties["start"]
                == properties["end"]
                == {"type": "integer", "minimum": lo, "maximum": hi}
            )
            for names in ("actors", "seen_by", "unseen_by"):
                if names in properties:
                    listed = set(properties[names]["items"].get("enum", []))
                    assert not set(places) & listed
        assert "narration" not in {m["properties"]["kind"]["const"] for m in members}
        good = {"actions": [], "new_entities": []}
        bad = {"actions": [{"kind": "narration", "start": lo, "end": hi}], "new_entities": []}
        check_grammars(schema, good, bad)

    def test_a_state_says_its_condition_and_who_saw_it_whatever_the_pack_declares(
        self,
    ) -> None:
        """A pack that declares no attribute (BigToM's: a character and a thing) still lets
        the model say a thing's condition or contents; a state carries who saw it and who
        did not, characters only, empty when the text says nothing."""
        text = "Noor filled the pitcher. Her coworker swapped the milk while Noor was away."
        entities = {
            "noor": Entity(id="noor", kind="character", name="Noor"),
            "pitcher": Entity(id="pitcher", kind="object", name="pitcher"),
        }
        schema = expanded(actions_json_schema(text, entities))
        members = schema["properties"]["actions"]["items"]["anyOf"]
        (state,) = [m for m in members if m["properties"]["kind"]["const"] == "state"]
        properties = state["properties"]
        clause = properties["clause"]["anyOf"]
        attributes = {a for c in clause for a in named(c["properties"]["attribute"])}
        assert attributes == set(STATE_ATTRIBUTES)
        for field in ("seen_by", "unseen_by"):
            assert properties[field]["items"]["enum"] == ["Noor"]
            assert "minItems" not in properties[field]
        others = [m for m in members if m["properties"]["kind"]["const"] != "state"]
        assert not any("seen_by" in m["properties"] for m in others)
        bad = {"actions": [{**_state(text), "seen_by": ["pitcher"]}], "new_entities": []}
        check_grammars(schema, {"actions": [_state(text)], "new_entities": []}, bad)

    def test_an_inverted_span_is_read_as_its_sentence(self) -> None:
        """Gemma 3 270M on llama.cpp wrote ``"start": 1, "end": 0`` three times in a row
        (the grammar bounds each number, not their order): read as the sentence that holds
        the start, as an empty span is, not refused."""
        text = "Mara sang. Then she left the room."
        entities = {"mara": Entity(id="mara", kind="character", name="Mara")}
        reply = '{"actions": [{"kind": "feel", "start": 14, "end": 3, "actors": ["Mara"], '
        reply += '"obj": "Mara", "verb": "likes"}]}'
        (action,) = actions_schema(text, entities).model_validate_json(reply).actions
        assert text[action.start : action.end] == "Then she left the room."

    def test_an_empty_span_at_the_texts_end_is_its_last_sentence(self) -> None:
        """Gemma 3 270M wrote ``"start": 2, "end": 2`` for a text of two characters, three
        times: the end of the text is the end of its last sentence."""
        text = "Mara sang. Then she left."
        entities = {"mara": Entity(id="mara", kind="character", name="Mara")}
        reply = '{"actions": [{"kind": "feel", "start": 25, "end": 25, "actors": ["Mara"], '
        reply += '"obj": "Mara", "verb": "likes"}]}'
        (action,) = actions_schema(text, entities).model_validate_json(reply).actions
        assert text[action.start : action.end] == "Then she left."
        with pytest.raises(ValidationError, match="not inside the text"):
            actions_schema(text, entities).model_validate_json(reply.replace("25", "26"))

    def test_a_sentence_without_a_word_is_not_asked_about(self) -> None:
        text = "Mara went to the cottage.\n\n**\n\nShe gazed over the sea."
        entities = {
            "mara": Entity(id="mara", kind="character", name="Mara"),
            "cottage": Entity(id="cottage", kind="place", name="cottage"),
        }
        read, unread = read_first(text, entities)
        assert [a.kind for a in read] == ["go"]
        assert [text[s:e] for s, e in unread] == ["She gazed over the sea."]
        read, unread = read_first("Mara went to the cottage. **", entities)
        assert unread == []

    def test_a_sentence_that_names_nobody_is_not_asked_about(self) -> None:
        """Narration that names no entity, stands for none with a pronoun and brings in no
        name tells nobody anything: the model is not asked about it, so a turn of read
        sentences and such narration costs no model call."""
        entities = {
            "mara": Entity(id="mara", kind="character", name="Mara"),
            "bin": Entity(id="donation_bin", kind="object", name="donation bin"),
            "cottage": Entity(id="cottage", kind="place", name="cottage"),
        }
        text = (
            "Mara went to the cottage. The wind rose over the sea. *Night fell.* "
            '"Who is there?" asked a voice.'
        )
        _, unread = read_first(text, entities)
        assert unread == []
        for told in (
            "The bin stood empty.",  # a word of a known name
            "It rolled away.",  # a pronoun
            "Then the Baron arrived.",  # a name brought in
        ):
            assert may_tell(told, {"mara", "donation", "bin"}), told
        assert not may_tell("The wind rose over the sea.", {"mara", "donation", "bin"})


def _state(text: str) -> dict[str, Any]:
    """A state the coworker's swap tells, not seen by Noor."""
    start = text.index("Her")
    # in the order the grammar has its keys (a clause, defined once, has them sorted)
    clause = {"attribute": "contents", "subject": "pitcher", "value": "almond milk"}
    return {
        "kind": "state",
        "start": start,
        "end": len(text),
        "clause": clause,
        "seen_by": [],
        "unseen_by": ["Noor"],
    }


class TestLargeStories:
    def test_a_roster_too_large_to_list_still_makes_a_strict_schema(self) -> None:
        """An enum lists at most ENUM_LIMIT ids (beyond, the field is a short line), so
        even a story of 900 entities stays inside strict mode's limits (1000 enum values in
        all, none of more than 250 values over 15,000 characters)."""
        entities = {
            f"e{i}": Entity(id=f"e{i}", kind=KINDS[i % 3], name=f"thing{i}")  # type: ignore[arg-type]
            for i in range(900)
        }
        for n in (600, 900):
            some = dict(list(entities.items())[:n])
            schema = actions_json_schema("Rain tapped on the glass.", some)
            assert strict_problems(schema) == []
            grammar = xgr.Grammar.from_json_schema(json.dumps(schema), strict_mode=True)
            assert xgr.testing._is_grammar_accept_string(
                grammar, '{"actions":[],"new_entities":[]}'
            )
            character = proposal_json_schema("e0", some)
            assert strict_problems(character) == []


class TestRecallAndSummaries:
    @SETTINGS
    @given(view=views())
    def test_the_recall_schema_is_the_rosters(self, view: AuthorView) -> None:
        schema = reading_json_schema(view.entities, view.developments)
        assert named(schema) <= {*view.entities, *view.developments, "earliest", "latest"}
        good = {
            "entities": sorted(view.entities)[:1],
            "terms": ["key"],
            "attributes": [],
            "developments": [],
            "first_date": "2023-05-01",
            "last_date": None,
            "order": None,
            "asks_when": False,
        }
        check_grammars(schema, good, good | {"first_date": "May 2023"})

    def test_the_summary_schema_bounds_both_lines(self) -> None:
        schema = summary_json_schema()
        good = {"title": "Mara hides the key", "summary": "Alone, Mara moves the key."}
        check_grammars(schema, good, good | {"title": "x" * 81})


class TestBoundedStrings:
    def test_a_line_is_bounded_by_a_pattern_strict_mode_takes(self) -> None:
        """Strict mode documents `pattern`, not `maxLength`, for strings: a line is a
        pattern, and the check refuses maxLength."""
        bounded = line(10, min_chars=1)
        assert set(bounded) == {"type", "pattern"}
        schema = {
            "type": "object",
            "properties": {"a": bounded},
            "required": ["a"],
            "additionalProperties": False,
        }
        check_grammars(schema, {"a": "ten chars!"}, {"a": "eleven char"})
        schema["properties"]["a"] = {"type": "string", "maxLength": 10}
        assert strict_problems(schema) == ["properties/a: 'maxLength' is not permitted"]

    def test_too_many_enum_values_are_found(self) -> None:
        many = {"type": "string", "enum": [f"id{i}" for i in range(1001)]}
        schema = {
            "type": "object",
            "properties": {"a": many},
            "required": ["a"],
            "additionalProperties": False,
        }
        assert "(root): 1001 enum values, more than 1000" in strict_problems(schema)
        schema["properties"]["a"] = {"type": "string", "enum": []}
        assert "properties/a: an enum must list at least one value" in strict_problems(schema)


class TestBounds:
    def test_a_line_holds_no_quote(self) -> None:
        """llama.cpp matches a pattern against the raw JSON between the quotes: a line
        that let a quote (or a backslash) through let the model "close" the string and
        write the rest of the object inside it, to the token limit."""
        schema = closed({"reason": line(60), "intent": line(60)})
        pattern = schema["properties"]["reason"]["pattern"]
        runaway = 'waits", "target": "cove", "listener": "ada'
        assert re.fullmatch(pattern, "he waits for the tide")
        assert not re.fullmatch(pattern, runaway) and not re.fullmatch(pattern, "a\\b")
        good = {"reason": "he waits for the tide", "intent": "stay"}
        check_grammars(schema, good, good | {"reason": runaway})

    def test_a_reading_fits_its_token_limit(self) -> None:
        """A small model lists actions until the schema stops it: with the reply's token
        limit known, the schema stops it before the limit cuts the reply."""
        entities = {
            "cora": Entity(id="cora", kind="character", name="Cora"),
            "cove": Entity(id="cove", kind="place", name="cove"),
        }
        text = " ".join(f"Cora looked at the sea for the {i}th time." for i in range(12))

        def most(max_tokens: int | None) -> int:
            schema = expanded(actions_json_schema(text, entities, None, max_tokens))
            return int(schema["properties"]["actions"]["maxItems"])

        assert most(None) == MAX_READ
        assert most(512) == most_actions(12, 512) == (512 - REPLY_TOKENS) // ACTION_TOKENS
        assert most(512) * ACTION_TOKENS + REPLY_TOKENS <= 512
        assert most(1) == 1
