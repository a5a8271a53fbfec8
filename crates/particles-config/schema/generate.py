"""Writes `schema.json`: the reference's configuration model as data.

Run with the reference's interpreter (the venv `cargo xtask reference` builds):

    .reference/venv/bin/python crates/particles-config/schema/generate.py

It walks `particles.config.ParticlesConfig` (linkedparticles 1.214.1, pydantic v2)
and records, for every model reachable from it, each field's type, bounds,
literal values and compiled default, so that the Rust validator can check a YAML
document against the whole model without a hand-typed copy of 79 sections.

Field and model validators hold logic a type cannot express. Each one the
reference defines must be named in `VALIDATORS` below, either with the rule the
Rust side implements or as `None` (not checked); a validator this table does not
know makes the script fail, so a new reference version cannot slip one past us.
"""

from __future__ import annotations

import json
import math
import sys
import types
import typing
from pathlib import Path

import annotated_types
import pydantic
import yaml
from pydantic import BaseModel, TypeAdapter
from pydantic_core import PydanticUndefined

import particles
from particles import config as reference

# (model class name, field name or "" for a model validator) -> the rule the Rust
# validator applies, or None when it is deliberately not checked.
VALIDATORS: dict[tuple[str, str], str | None] = {
    ("EgressAllowEntry", "host"): "egress_host",
    ("NetworkConfig", ""): "network_posture",
    ("ApiConfig", "allowed_hosts"): "allowed_hosts",
    ("ApiConfig", "allowed_origins"): "allowed_origins",
    ("ApiConfig", "trusted_proxies"): "trusted_proxies",
    ("BuildConfig", "date"): "blank_is_none",
    ("LLMConfig", "cache_read_price_multiplier_by_model"): "merge_over_default values_ge_0",
    ("LLMConfig", "price_per_mtok"): "merge_over_default",
    ("LLMConfig", ""): "llm_provider_wiring",
    ("UncalibratedCapConfig", "sources"): "calibration_sources",
    ("SubjectsConfig", ""): "abstain_at_most_suppress",
    ("AuditConfig", "estimate_output_scale_by_source_type"): "merge_over_default values_ge_0",
    ("AuditConfig", "estimate_output_scale_by_model"): "merge_over_default values_ge_0",
    (
        "MemoryBenchmarkConfig",
        "estimate_output_tokens_per_extraction_call_by_model",
    ): "merge_over_default values_ge_0",
    ("MemoryBenchmarkConfig", "chars_per_token_by_model"): "merge_over_default values_gt_0",
    ("RotBenchmarkConfig", "checkpoints"): "increasing_positive",
    ("RelevanceFloorBenchmarkConfig", "floors"): "increasing_unit",
    ("ParticlesConfig", ""): "write_stores_multi",
}


def encode(value):
    """A default as JSON, failing on anything JSON cannot carry exactly."""
    if isinstance(value, float) and not math.isfinite(value):
        raise SystemExit(f"non-finite default {value!r} cannot be written as JSON")
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise SystemExit(f"default {value!r} of type {type(value).__name__} has no JSON form")


def bounds(metadata) -> dict:
    out = {}
    for item in metadata:
        if isinstance(item, annotated_types.Ge):
            out["ge"] = item.ge
        elif isinstance(item, annotated_types.Gt):
            out["gt"] = item.gt
        elif isinstance(item, annotated_types.Le):
            out["le"] = item.le
        elif isinstance(item, annotated_types.Lt):
            out["lt"] = item.lt
        elif isinstance(item, annotated_types.MinLen):
            out["min_length"] = item.min_length
        else:
            raise SystemExit(f"unknown constraint {item!r}")
    return out


class Walker:
    def __init__(self) -> None:
        self.models: dict[str, dict] = {}

    def type_of(self, annotation) -> dict:
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if annotation is bool:
            return {"kind": "bool"}
        if annotation is int:
            return {"kind": "int"}
        if annotation is float:
            return {"kind": "float"}
        if annotation is str:
            return {"kind": "str"}
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            self.model(annotation)
            return {"kind": "model", "model": annotation.__name__}
        if origin is typing.Literal:
            return {"kind": "literal", "values": list(args)}
        if origin in (typing.Union, types.UnionType):
            rest = [a for a in args if a is not type(None)]
            if len(rest) != 1 or len(args) != 2:
                raise SystemExit(f"unsupported union {annotation!r}")
            return {"kind": "optional", "inner": self.type_of(rest[0])}
        if origin is list:
            return {"kind": "list", "item": self.type_of(args[0])}
        if origin is dict:
            if args[0] is not str:
                raise SystemExit(f"unsupported dict key type in {annotation!r}")
            return {"kind": "dict", "value": self.type_of(args[1])}
        raise SystemExit(f"unsupported annotation {annotation!r}")

    def model(self, cls: type[BaseModel]) -> None:
        name = cls.__name__
        if name in self.models:
            return
        if cls.model_config.get("extra") not in (None, "ignore"):
            raise SystemExit(f"{name} does not ignore extra keys")
        entry: dict = {"fields": [], "validators": []}
        self.models[name] = entry
        decorators = cls.__pydantic_decorators__
        known_fields = set()
        for decorator in decorators.field_validators.values():
            for field in decorator.info.fields:
                known_fields.add(field)
                self.rule(name, field)
        for _ in decorators.model_validators.values():
            entry["validators"].append(self.rule(name, ""))
        for field_name, info in cls.model_fields.items():
            field = {"name": field_name, "type": self.type_of(info.annotation)}
            # Constraints bind the value, so an Optional carries them on its inner type.
            target = field["type"]
            while target["kind"] == "optional":
                target = target["inner"]
            target.update(bounds(info.metadata))
            if info.is_required():
                field["required"] = True
            else:
                default = info.get_default(call_default_factory=True)
                if default is PydanticUndefined:
                    raise SystemExit(f"{name}.{field_name} has no default")
                dumped = TypeAdapter(info.annotation).dump_python(default, mode="python")
                field["default"] = encode(dumped)
            if field_name in known_fields:
                rule = self.rule(name, field_name)
                if rule is not None:
                    field["rules"] = rule.split()
                else:
                    field["unchecked_validator"] = True
            entry["fields"].append(field)
        entry["validators"] = [v for v in entry["validators"] if v is not None]

    def rule(self, model: str, field: str) -> str | None:
        key = (model, field)
        if key not in VALIDATORS:
            what = f"{model}.{field}" if field else f"{model} (model validator)"
            raise SystemExit(f"validator on {what} is not in VALIDATORS: decide how to port it")
        return VALIDATORS[key]


def main() -> None:
    walker = Walker()
    walker.model(reference.ParticlesConfig)
    used = {key for key in VALIDATORS}
    schema = {
        "generated_by": "crates/particles-config/schema/generate.py",
        "reference": {
            "linkedparticles": particles.__version__,
            "pydantic": pydantic.VERSION,
            "pyyaml": yaml.__version__,
        },
        "root": reference.ParticlesConfig.__name__,
        "env_overrides": [list(row) for row in reference._ENV_OVERRIDES],
        "models": walker.models,
    }
    assert used  # every table entry names a model the walk reached
    for model, _field in VALIDATORS:
        if model not in walker.models:
            raise SystemExit(f"VALIDATORS names {model}, which the model no longer has")
    out = Path(__file__).with_name("schema.json")
    text = json.dumps(schema, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    out.write_text(text)
    print(f"wrote {out} ({len(walker.models)} models)", file=sys.stderr)


if __name__ == "__main__":
    main()
