#!/usr/bin/env python3
"""Writes the structured-outputs workload (scripts/bench-structured-outputs.sh):
a nested JSON Schema (an order: an object with strings, an enum, integers and an array of
2-4 item objects, each with a string, an enum and an integer) and N plain-format chat
requests asking for one order record each, sampled (temperature 0.8, top-p 0.95) with a
fixed per-line seed, so the same line gives the same tokens in every run:

  --schema FILE   the schema, as `generate --json-schema FILE` reads it
  -o FILE         the requests, without response_format or ignore_eos: the benchmark adds
                  --json-schema for the constrained run and --ignore-eos for the
                  unconstrained one, so both read the very same lines
  --matched OUT --from OUTPUTS.jsonl
                  instead: the same requests with ignore_eos and each line's max_tokens set
                  to the completion_tokens its constrained twin generated (read from the
                  constrained run's output file), so both runs generate the same tokens per
                  request

Only the Python standard library is used.

Usage:
  scripts/make-structured-workload.py --schema /tmp/order.schema.json -o /tmp/orders.jsonl
  scripts/make-structured-workload.py -o /tmp/orders.jsonl --matched /tmp/orders-matched.jsonl \\
      --from /tmp/constrained-out.jsonl
"""
import argparse
import json
import sys

SCHEMA = {
    "type": "object",
    "properties": {
        "customer": {"type": "string", "maxLength": 24},
        "status": {"enum": ["pending", "paid", "shipped", "delivered", "cancelled"]},
        "priority": {"type": "integer", "minimum": 1, "maximum": 5},
        "items": {
            "type": "array",
            "minItems": 2,
            "maxItems": 4,
            "items": {
                "type": "object",
                "properties": {
                    "product": {"type": "string", "maxLength": 20},
                    "category": {"enum": ["books", "food", "tools", "toys", "clothing"]},
                    "quantity": {"type": "integer", "minimum": 1, "maximum": 99},
                },
                "required": ["product", "category", "quantity"],
                "additionalProperties": False,
            },
        },
        "note": {"type": "string", "maxLength": 40},
    },
    "required": ["customer", "status", "priority", "items", "note"],
    "additionalProperties": False,
}

SHOPS = ["a bookshop", "a hardware store", "a bakery", "a toy shop", "a clothing store",
         "a grocery", "a stationery shop", "a garden centre"]


def requests(count, max_tokens):
    for i in range(count):
        shop = SHOPS[i % len(SHOPS)]
        prompt = (f"Write one customer order from {shop} as JSON with the fields customer, "
                  f"status, priority (1-5), items (product, category, quantity) and note. "
                  f"Order number {i + 1}.")
        yield {"id": f"order-{i}", "messages": [{"role": "user", "content": prompt}],
               "max_tokens": max_tokens, "temperature": 0.8, "top_p": 0.95, "seed": 1000 + i}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True, help="the requests (JSONL)")
    parser.add_argument("--schema", help="write the schema here")
    parser.add_argument("-n", "--requests", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--matched", help="write the length-matched unconstrained requests here")
    parser.add_argument("--from", dest="outputs", help="the constrained run's outputs (with --matched)")
    args = parser.parse_args()
    if bool(args.matched) != bool(args.outputs):
        sys.exit("make-structured-workload: --matched and --from go together")
    if args.requests < 1 or args.max_tokens < 1:
        sys.exit("make-structured-workload: --requests and --max-tokens must be positive")
    if args.matched:
        lengths = {}
        with open(args.outputs) as f:
            for number, line in enumerate(f, 1):
                out = json.loads(line)
                if "error" in out:
                    sys.exit(f"make-structured-workload: {args.outputs}:{number}: error line "
                             f"{out['error']}")
                lengths[out["id"]] = out["usage"]["completion_tokens"]
        with open(args.output) as f, open(args.matched, "w") as out:
            for number, line in enumerate(f, 1):
                request = json.loads(line)
                if request["id"] not in lengths:
                    sys.exit(f"make-structured-workload: {args.outputs} has no output for "
                             f"{request['id']} ({args.output}:{number})")
                request["max_tokens"] = lengths[request["id"]]
                request["ignore_eos"] = True
                out.write(json.dumps(request) + "\n")
        return
    if args.schema:
        with open(args.schema, "w") as f:
            json.dump(SCHEMA, f, indent=1)
            f.write("\n")
    with open(args.output, "w") as f:
        for request in requests(args.requests, args.max_tokens):
            f.write(json.dumps(request) + "\n")


if __name__ == "__main__":
    main()
