"""Runs the reference's answer step (`_build_response`) over scripted scenarios.

Each scenario names its own provider endpoint (a scripted server the Rust test
started), so the reference's real adapters (its OpenAI-compatible client, the
Anthropic SDK) make the calls.

stdin: {"scenarios": [{...}, ...]}; stdout: [{answer fields}, ...]
"""

import asyncio
import json
import os
import sys
from datetime import datetime

import particles.config as particles_config
from particles.config import ParticlesConfig
from particles.core.schema import Particle, QueryRequest, SubjectCoverageGap
from particles.llm import set_client
from particles.operations.query.main import _build_response


def configure(scenario):
    llm = scenario["llm"]
    providers = {}
    if llm["provider"] != "anthropic":
        providers[llm["provider"]] = {
            "base_url": llm["base_url"],
            "max_retries": llm.get("max_retries", 2),
            "retry_backoff_seconds": 0.01,
            "timeout_seconds": llm.get("timeout_seconds", 5.0),
            "allow_plaintext_key": llm.get("allow_plaintext_key", False),
            **llm.get("entry", {}),
        }
    particles_config._config = ParticlesConfig.model_validate(
        {
            "llm": {
                "query_response": {"provider": llm["provider"], "model": llm["model"]},
                "providers": providers,
            },
            "network": scenario.get("network", {"egress": "open"}),
            "query": {
                "relevance_floor": scenario.get("floor", 0.25),
                "answer_retry_max_tokens": scenario.get("answer_retry_max_tokens", 16384),
            },
        }
    )
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        os.environ.pop(name, None)
    for key in [k for k in os.environ if k.startswith("PARTICLES_LLM_API_KEY_")]:
        del os.environ[key]
    os.environ.update(scenario.get("env", {}))
    set_client(None)


def run(scenario):
    configure(scenario)
    req = scenario["request"]
    request = QueryRequest(
        question=req["question"],
        audience=req["audience"],
        as_of=datetime.fromisoformat(req["as_of"]) if req.get("as_of") else None,
        grounded=req.get("grounded"),
    )
    top = [(Particle.model_validate(p), sim, eff) for p, sim, eff in scenario["top"]]
    constituents = {
        pid: [Particle.model_validate(p) for p in members]
        for pid, members in scenario.get("constituents", {}).items()
    }
    gaps = [SubjectCoverageGap.model_validate(g) for g in scenario.get("gaps", [])]
    response = asyncio.run(
        _build_response(
            request,
            top,
            {},
            [],
            gaps,
            "a truncation warning",
            narrative_constituents=constituents,
            embeddings_used=scenario.get("embeddings_used", True),
        )
    )
    attribution = response.answer_attribution
    return {
        "answer": response.answer,
        "answer_refused": response.answer_refused,
        "answer_attribution": attribution.model_dump(mode="json") if attribution else None,
        "answer_generation_error": response.answer_generation_error,
        "answer_generation_error_cause": (
            response.answer_generation_error_cause.value
            if response.answer_generation_error_cause
            else None
        ),
        "truncation_warning": response.truncation_warning,
        "relevance": response.relevance.model_dump(mode="json") if response.relevance else None,
        "ranking_degraded": response.ranking_degraded,
    }


scenarios = json.load(sys.stdin)["scenarios"]
json.dump([run(s) for s in scenarios], sys.stdout)
