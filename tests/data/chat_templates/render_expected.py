#!/usr/bin/env python3
"""The oracle of tests/test_chat_template_oracle.cpp: renders every real chat template in this
folder with Python's Jinja2, set up as Hugging Face transformers sets it up for
apply_chat_template (sandboxed, trim_blocks, lstrip_blocks, loop controls, its tojson,
raise_exception and strftime_now), over a set of conversations, and prints one JSON document:

  {"jinja2": "3.1.6", "date": "2025-03-09",
   "cases": [{"name": "qwen3-0.6b.jinja/tool_calls", "template": "qwen3-0.6b.jinja",
              "bos_token": "", "eos_token": "<|im_end|>",
              "request": {"messages": [...], "tools": [...], ...},   # a request line's fields
              "expected": "<|im_start|>..."}                         # or "error": "why jinja2 raised"
             , ...]}

Each case's "request" holds the fields pagedgen reads from a request line (messages, tools,
documents, add_generation_prompt, continue_final_message, chat_template_kwargs); the test
feeds them to pagedgen and compares its prompt with "expected" byte for byte, or expects an
error where jinja2 raised. strftime_now formats the pinned date at 00:00:00 (pagedgen's
--chat-template-date). continue_final_message is applied after rendering, as transformers
does: the text is cut after the final message's content.

Usage: python3 tests/data/chat_templates/render_expected.py > cases.json  (python3-jinja2)
"""
import json
import sys
from datetime import datetime
from pathlib import Path

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = Path(__file__).resolve().parent
DATE = datetime(2025, 3, 9)

# (file, bos_token, eos_token): the special-token texts of the model each comes from.
TEMPLATES = [
    ("smollm2-135m-instruct.jinja", "<|im_start|>", "<|im_end|>"),
    ("qwen2-7b-instruct.jinja", "", "<|im_end|>"),
    ("qwen2.5-0.5b-instruct.jinja", "", "<|im_end|>"),
    ("qwen2.5-7b-instruct.jinja", "", "<|im_end|>"),
    ("qwen3-0.6b.jinja", "", "<|im_end|>"),
    ("qwq-32b.jinja", "", "<|im_end|>"),
    ("deepseek-r1-distill-qwen-32b.jinja", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    ("deepseek-llm-7b-chat.jinja", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    ("openhermes-2.5-mistral-7b.jinja", "<s>", "<|im_end|>"),
    ("hermes-3-llama-3.1-8b-tool-use.jinja", "<|begin_of_text|>", "<|im_end|>"),
    ("llama-2-13b-chat.jinja", "<s>", "</s>"),
    ("meta-llama-3-8b-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    ("llama-3.1-8b-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    ("llama-3.2-1b-instruct.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    ("functionary-medium-v3.1.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    ("functionary-medium-v3.2.jinja", "<|begin_of_text|>", "<|eot_id|>"),
    ("mistral-7b-instruct-v0.1-original.jinja", "<s>", "</s>"),
    ("mistral-7b-instruct-v0.2.jinja", "<s>", "</s>"),
    ("mistral-large-instruct-2407.jinja", "<s>", "</s>"),
    ("mistral-nemo-instruct-2407.jinja", "<s>", "</s>"),
    ("gemma-2-2b-it.jinja", "<bos>", "<eos>"),
    ("gemma-3-it.jinja", "<bos>", "<eos>"),
    ("phi-3-mini-4k-instruct.jinja", "<s>", "<|endoftext|>"),
    ("phi-3-mini-4k-instruct-gguf-original.jinja", "<s>", "<|endoftext|>"),
    ("phi-3.5-mini-instruct.jinja", "<s>", "<|endoftext|>"),
    ("phi-4.jinja", "<|endoftext|>", "<|im_end|>"),
    ("command-r-plus-tool-use.jinja", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    ("command-r7b-12-2024-tool-use.jinja", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
]

SYSTEM = {"role": "system", "content": "You are a helpful assistant"}
USER = {"role": "user", "content": "Hello"}
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "e.g. Paris"}},
                   "required": ["city"]}}}
CALL = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
CALL_DICT_ARGUMENTS = {"id": "call_1", "type": "function",
                       "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
TOOL_RESULT = {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "22 C and sunny"}

# name -> the request line's fields other than messages' defaults.
REQUESTS = {
    "user": {"messages": [USER]},
    "user_no_generation_prompt": {"messages": [USER], "add_generation_prompt": False},
    "system_user": {"messages": [SYSTEM, USER]},
    "multi_turn": {"messages": [
        SYSTEM, USER, {"role": "assistant", "content": "Hi there"},
        {"role": "user", "content": "Who are you"},
        {"role": "assistant", "content": "   I am an assistant   "},
        {"role": "user", "content": "Another question"}]},
    "multi_turn_no_system": {"messages": [
        USER, {"role": "assistant", "content": "Hi there"}, {"role": "user", "content": "Who are you"}]},
    "ends_with_assistant": {"messages": [USER, {"role": "assistant", "content": "Hi there"}],
                            "add_generation_prompt": False},
    # Padding around every content: which templates trim what.
    "padded": {"messages": [
        {"role": "system", "content": " Be brief. "}, {"role": "user", "content": "  What is 2+2?\n"},
        {"role": "assistant", "content": " 4 "}, {"role": "user", "content": "\tAnd 3+3? "}]},
    # Python's str.strip() (Jinja's trim) also strips Unicode spaces: NBSP, U+3000.
    "unicode": {"messages": [{"role": "user", "content": "\u00a0Bonjour, ça va ? 日本語 🙂\u3000"}]},
    "empty_system": {"messages": [{"role": "system", "content": ""}, {"role": "user", "content": "Hi"}]},
    "empty_user": {"messages": [{"role": "user", "content": ""}]},
    "null_content": {"messages": [USER, {"role": "assistant", "content": None},
                                  {"role": "user", "content": "Again"}]},
    "user_user": {"messages": [USER, {"role": "user", "content": "Again"}]},
    "content_parts": {"messages": [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": " world"}]}]},
    "tools": {"messages": [SYSTEM, {"role": "user", "content": "Weather in Paris?"}], "tools": [WEATHER_TOOL]},
    "tool_calls": {"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]}, TOOL_RESULT],
        "tools": [WEATHER_TOOL]},
    "tool_calls_dict_arguments": {"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL_DICT_ARGUMENTS]}, TOOL_RESULT],
        "tools": [WEATHER_TOOL]},
    # Two calls in one turn, non-ASCII arguments (tojson keeps them: ensure_ascii=False).
    "two_tool_calls": {"messages": [
        {"role": "user", "content": "Weather in Zürich and 東京?"},
        {"role": "assistant", "content": "", "tool_calls": [
            CALL, {"id": "call_2", "type": "function",
                   "function": {"name": "get_weather", "arguments": {"city": "東京", "days": 2, "metric": True}}}]},
        TOOL_RESULT, {"role": "tool", "tool_call_id": "call_2", "name": "get_weather", "content": "18 C"}],
        "tools": [WEATHER_TOOL]},
    "documents": {"messages": [{"role": "user", "content": "What does the note say?"}],
                  "documents": [{"title": "Note", "text": "The meeting moved to 3 pm."}]},
    "think_in_history": {"messages": [
        USER, {"role": "assistant", "content": "<think>\nThe user greets me.\n</think>\n\nHi there"},
        {"role": "user", "content": "Who are you"}]},
    "reasoning_content": {"messages": [
        USER, {"role": "assistant", "content": "Hi there", "reasoning_content": "The user greets me."},
        {"role": "user", "content": "Who are you"}]},
    "enable_thinking_false": {"messages": [USER], "chat_template_kwargs": {"enable_thinking": False}},
    "enable_thinking_true": {"messages": [USER], "chat_template_kwargs": {"enable_thinking": True}},
    "continue_final_message": {"messages": [
        USER, {"role": "assistant", "content": "The answer is"}],
        "add_generation_prompt": False, "continue_final_message": True},
    # A trailing space the template trims: the cut keeps what the template wrote.
    "continue_final_message_space": {"messages": [
        SYSTEM, USER, {"role": "assistant", "content": "Sure: "}], "continue_final_message": True},
}


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers' tojson: no HTML escaping, json.dumps' arguments.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return DATE.strftime(format)


def environment() -> jinja2.Environment:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def continue_final_message(text: str, messages: list) -> str:
    """Cuts the rendered text after the final message's content, as transformers does."""
    final = messages[-1]["content"]
    if isinstance(final, list):
        texts = [part["text"] for part in final if "text" in part]
        if not texts:
            raise ValueError("continue_final_message: the final message has no text to continue")
        final = texts[-1]
    if not isinstance(final, str):
        raise ValueError("continue_final_message: the final message has no text to continue")
    if final.strip() not in text:
        raise ValueError("continue_final_message: the template does not write the final message's content")
    start = text.rindex(final.strip())
    if text[start:start + len(final)] == final:
        return text[:start + len(final)]
    return text[:start + len(final.strip())]


def render(template: jinja2.Template, bos: str, eos: str, request: dict) -> str:
    messages = request["messages"]
    # pagedgen's default, as vLLM's: a generation prompt, unless the final message is continued.
    add_generation_prompt = request.get("add_generation_prompt", not request.get("continue_final_message", False))
    text = template.render(messages=messages, tools=request.get("tools"), documents=request.get("documents"),
                           add_generation_prompt=add_generation_prompt,
                           bos_token=bos, eos_token=eos, **request.get("chat_template_kwargs", {}))
    if request.get("continue_final_message"):
        text = continue_final_message(text, messages)
    return text


def main() -> None:
    env = environment()
    cases = []
    for file, bos, eos in TEMPLATES:
        template = env.from_string((HERE / file).read_text(encoding="utf-8"))
        for name, request in REQUESTS.items():
            case = {"name": f"{file}/{name}", "template": file, "bos_token": bos, "eos_token": eos,
                    "request": request}
            try:
                case["expected"] = render(template, bos, eos, request)
            except Exception as error:  # jinja2's, or a Python error inside the template
                case["error"] = f"{type(error).__name__}: {error}"
            cases.append(case)
    json.dump({"jinja2": jinja2.__version__, "date": DATE.strftime("%Y-%m-%d"), "cases": cases}, sys.stdout,
              ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
