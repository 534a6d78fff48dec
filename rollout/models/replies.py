"""The parsing of a model's replies (the JSON object and the tool calls of a reply): the contract's
(engine.contract.replies), which the call outcome rules share."""

from engine.contract.replies import parse_json_object, parse_tool_calls

__all__ = ["parse_json_object", "parse_tool_calls"]
