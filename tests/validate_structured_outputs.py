#!/usr/bin/env python3
"""Checks pagedgen's structured outputs with an independent validator (python3-jsonschema).

Usage: validate_structured_outputs.py FORMATS.json OUTPUT.jsonl

FORMATS.json maps each request's id (plain "id" or OpenAI "custom_id") to what its text
must be: a JSON Schema, or the string "json_object" (any JSON object), or "text" (not
checked). Every output line is read; a finished sample (finish_reason "stop") must parse
as JSON and validate against its schema (Draft 2020-12), with the keys of an object schema
in its "properties" order; a sample cut by max_tokens (finish_reason "length") is counted.
Prints one JSON line: {"records", "samples", "finished", "cut", "invalid": [...],
"errors": [...], "by_format": {name: {"finished", "cut"}}}.
"""
import json
import sys

from jsonschema import Draft202012Validator


def samples_of(line):
    """(id, [(text, finish_reason)], error) of one output line, in either format."""
    record = json.loads(line)
    if "custom_id" in record:
        if record.get("error"):
            return record["custom_id"], [], record["error"]
        body = record["response"]["body"]
        texts = []
        for choice in body["choices"]:
            text = choice["message"]["content"] if "message" in choice else choice["text"]
            texts.append((text, choice["finish_reason"]))
        return record["custom_id"], texts, None
    if "error" in record:
        return record.get("id"), [], record["error"]
    if "choices" in record:
        return record["id"], [(c["text"], c["finish_reason"]) for c in record["choices"]], None
    return record["id"], [(record["text"], record["finish_reason"])], None


def keys_in_schema_order(value, schema):
    """Whether an object's keys come in the order of its schema's properties."""
    if not isinstance(value, dict) or not isinstance(schema, dict) or "properties" not in schema:
        return True
    order = list(schema["properties"])
    positions = [order.index(k) for k in value if k in order]
    return positions == sorted(positions)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        formats = json.load(f)
    summary = {"records": 0, "samples": 0, "finished": 0, "cut": 0, "invalid": [], "errors": [], "by_format": {}}
    with open(sys.argv[2], encoding="utf-8") as f:
        for line in f:
            summary["records"] += 1
            request_id, samples, error = samples_of(line)
            if error is not None:
                summary["errors"].append({"id": request_id, "error": error})
                continue
            expected = formats[str(request_id)]
            name = expected if isinstance(expected, str) else expected.get("title", "schema")
            counts = summary["by_format"].setdefault(name, {"finished": 0, "cut": 0})
            for text, finish_reason in samples:
                summary["samples"] += 1
                if expected == "text":
                    continue
                if finish_reason == "length":
                    summary["cut"] += 1
                    counts["cut"] += 1
                    continue
                summary["finished"] += 1
                counts["finished"] += 1
                problem = None
                try:
                    value = json.loads(text)
                except ValueError as e:
                    problem = f"not JSON: {e}"
                else:
                    if expected == "json_object":
                        if not isinstance(value, dict):
                            problem = "not an object"
                    else:
                        errors = sorted(Draft202012Validator(expected).iter_errors(value), key=str)
                        if errors:
                            problem = errors[0].message
                        elif not keys_in_schema_order(value, expected):
                            problem = "keys out of schema order"
                if problem:
                    summary["invalid"].append({"id": request_id, "text": text, "problem": problem})
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
