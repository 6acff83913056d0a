"""Every structured-output schema is one a strict server takes.

Each schema the roles ask a model for is checked against OpenAI's strict rules
(:func:`strict_problems`) and compiled by the grammar engines local servers use: xgrammar
(vLLM, SGLang) and llguidance (llama.cpp). A sample reply must be accepted by the compiled
grammar, so a schema that is too tight fails too. The engines are the ``grammars`` extra
(CI installs it; without it, those checks are skipped).
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from pydantic import BaseModel

from fabula.agents.character.model import CharacterProposal
from fabula.agents.contracts import TurnPlan
from fabula.agents.memory_builder.schema import ExtractedActions
from fabula.agents.recall.model import PlanReading
from fabula.agents.schemas import strict_problems, strict_schema
from fabula.memory.summarise import NodeSummary

# every type a role asks a model for, with a reply that must fit it
STRUCTURED_OUTPUTS: dict[type[BaseModel], dict[str, Any]] = {
    TurnPlan: {
        "scene_goal": "Leo comes back",
        "place": "study",
        "focal": ["leo"],
        "beats": ["Leo returns"],
        "memory_needs": [],
        "developments": [],
        "hypothesis": None,
    },
    CharacterProposal: {
        "actions": [
            {
                "kind": "go",
                "object": None,
                "target": "study",
                "listener": None,
                "about": None,
                "attribute": "location",
                "claim": None,
                "line": None,
                "reason": "the key is there",
                "gesture": None,
            }
        ],
        "intent": "get the key",
    },
    ExtractedActions: {
        "actions": [
            {
                "kind": "tell",
                "start": 0,
                "end": 10,
                "actors": ["Leo"],
                "place": None,
                "obj": None,
                "target": None,
                "listeners": ["Mara"],
                "clause": {"subject": "key", "attribute": "location", "value": "drawer"},
                "utterance": None,
                "verb": None,
            }
        ],
        "new_entities": [{"name": "silver coin", "kind": "object"}],
    },
    PlanReading: {
        "entities": ["Leo"],
        "terms": ["key", "drawer"],
        "attributes": ["location"],
        "developments": [],
        "first_date": "2023-05-01",
        "last_date": None,
        "order": "latest",
        "asks_when": False,
    },
    NodeSummary: {
        "title": "Mara hides the brass key",
        "summary": "Alone in the study, Mara moves the brass key to the hollow book.",
    },
}
SCHEMAS = list(STRUCTURED_OUTPUTS)


def ids(schema: type[BaseModel]) -> str:
    return schema.__name__


@pytest.mark.parametrize("schema", SCHEMAS, ids=ids)
class TestStrictRules:
    def test_openai_strict_rules_hold(self, schema: type[BaseModel]) -> None:
        """Closed objects, every property required, no default, only strict keywords."""
        assert strict_problems(strict_schema(schema)) == []

    def test_the_sample_reply_validates(self, schema: type[BaseModel]) -> None:
        schema.model_validate(STRUCTURED_OUTPUTS[schema])


class TestTheCheck:
    def test_the_schemas_sent_before_broke_the_rules(self) -> None:
        """Reproduction: non-null defaults (reason, attribute, ...) were still sent, which
        Azure OpenAI rejects; the check finds them."""
        before = openai.pydantic_function_tool(CharacterProposal)["function"]["parameters"]
        problems = strict_problems(dict(before))
        assert any("'default' is not permitted" in p for p in problems)

    def test_open_objects_and_missing_requirements_are_found(self) -> None:
        schema = {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string", "minLength": 2}},
            "required": ["a"],
        }
        problems = strict_problems(schema)
        assert "(root): 'additionalProperties' is required to be false" in problems
        assert any("missing b" in p for p in problems)
        assert "properties/b: 'minLength' is not permitted" in problems


@pytest.mark.parametrize("schema", SCHEMAS, ids=ids)
class TestGrammarEngines:
    def test_xgrammar_compiles_it_and_accepts_the_sample(self, schema: type[BaseModel]) -> None:
        xgr = pytest.importorskip("xgrammar")
        grammar = xgr.Grammar.from_json_schema(json.dumps(strict_schema(schema)), strict_mode=True)
        sample = json.dumps(STRUCTURED_OUTPUTS[schema])
        assert xgr.testing._is_grammar_accept_string(grammar, sample)

    def test_llguidance_compiles_it(self, schema: type[BaseModel]) -> None:
        llg = pytest.importorskip("llguidance")
        grammar = llg.grammar_from("json_schema", json.dumps(strict_schema(schema)))
        assert llg.LLMatcher.validate_grammar(grammar) == ""
