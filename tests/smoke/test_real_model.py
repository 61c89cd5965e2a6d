"""An optional smoke test against a real OpenAI-compatible model server.

Collected only when MODEL_BASE_URL and MODEL_NAME are set in the environment (tests/conftest.py),
for example a local Ollama or llama.cpp server; `make test` on CI never reaches a real model.
"""
import os

import pytest

from core.model import complete_json
from studio import draft_kinds
from studio.generation import build_prompt, check_answer
from studio.schema import answer_schema

INTENT_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["label", "confidence"],
                 "properties": {"label": {"enum": ["billing", "delivery"]},
                                "confidence": {"type": "number", "minimum": 0, "maximum": 1}}}


@pytest.fixture
def real_model(app, monkeypatch):
    """The app pointed at the model server named by the environment, with a patient read timeout."""
    for name in ("MODEL_BASE_URL", "MODEL_NAME", "MODEL_API_KEY"):
        monkeypatch.setitem(app.config, name, os.environ.get(name) or None)
    monkeypatch.setitem(app.config, "MODEL_READ_TIMEOUT", 180.0)


def test_the_real_model_answers_one_json_object_with_token_counts(real_model):
    answer = complete_json("Classify the customer's message. Answer with one JSON object.",
                           "My parcel has not arrived after two weeks.", INTENT_SCHEMA, "intent_classification")
    assert answer.content.get("label") in ("billing", "delivery")
    assert answer.input_tokens > 0 and answer.output_tokens > 0


def test_the_real_model_drafts_a_definition_the_platform_can_check(real_model):
    system, user = build_prompt("A form to log warranty claims: product name, purchase date and amount.", [])
    answer = complete_json(system, user, answer_schema(draft_kinds.registered()), "studio_generation")
    checked = check_answer(answer.content)  # raises model_invalid_definition when the model got it wrong
    assert checked["kind"] in ("app", "unsupported")
