"""What the tools' parameters of one request may ask the local model's grammar for, checked before any work.

The reply is decoded to the tools' schemas (llama.cpp hands them to llguidance) and the schemas are listed in the
prompt, so their size is paid in grammar building, in every token's mask and in prompt tokens, on the one engine
every other client waits for: 300 required properties held it 58 s, 200 levels of nesting ~100 s, 40 tools of 60
properties, a 100 kB property name or an enum of 50,000 values over 240 s, `$ref: "#"` or an integer between
-1e300 and 1e300 36-57 s. Each bound below is far above what real tools ask (ours, LangChain's, MCP servers': a
few properties, a few levels, enums of tens of values) and each refusal is one line naming the tool and the
keyword.

A schema may also ask for more than a reply can hold: the grammar caps strings and lists (a 135M model at
temperature 0 fills a free string with digits until the tokens run out), and a `minLength` above the cap made
a grammar nothing could finish: an empty reply with finish_reason "length" that more max_tokens never mended.
The caps now give way to the schema's own minimum (`prompt._bounded`), which an OpenAI-compatible client
expects (the schema is honoured, as OpenAI's structured outputs do), as long as what the schema forces fits in a
reply; beyond that the request is refused here, naming the keyword, rather than answered with nothing.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NoReturn

# The grammar's caps on what it lets the model generate when the schema leaves it open (see prompt._bounded).
MAX_STRING = 80
MAX_ITEMS = 8
CONSTRAINED_TOKENS = 512
# What a schema may force into one reply (its minLength, minItems, consts and required names), in characters: the
# model may spend a token on each character (digits) and the call's own JSON needs room in CONSTRAINED_TOKENS.
MAX_FORCED_CHARS = CONSTRAINED_TOKENS // 2

MAX_SCHEMA_DEPTH = 10  # one tool: levels of JSON the reply nests (properties, items, ...), not anyOf/$ref hops
MAX_SCHEMA_PROPERTIES = 64  # one tool
MAX_REQUEST_PROPERTIES = 256  # every tool of the request together
MAX_REQUEST_NODES = 512  # schemas (every property, item, branch, $ref target) of every tool together
MAX_REQUEST_CHARS = 16_000  # the tools' names and parameters as JSON: the prompt lists them in a 4k context
MAX_NAME = 128  # a property's (or patternProperties') name
MAX_ENUM = 256  # values of one enum
MAX_BRANCHES = 64  # schemas of one anyOf / oneOf / allOf / prefixItems
MAX_LITERAL = 200  # one const or enum value, as JSON: the reply must spell it out
MAX_PATTERN = 256  # a pattern's characters
MAX_REPEAT = 100  # a pattern's counted repetition, {n} or {m,n}
MAX_NUMBER = 2**53  # a numeric bound: beyond JSON's exact integers it is a range of hundreds of digits
MAX_NESTING = 100  # levels of JSON in one tool's parameters, whatever the keys: the grammar's schema is copied by
# recursion (prompt._bounded), and a thousand levels of anyOf or of an unknown keyword's lists was a RecursionError

# Keywords whose schemas are one level of JSON further in, and those that combine schemas at the same level.
_DEEPER_ONE = ("additionalProperties", "additionalItems", "unevaluatedProperties", "unevaluatedItems", "contains")
_DEEPER_MAP = ("properties", "patternProperties", "dependentSchemas")
_SAME_ONE = ("not", "if", "then", "else", "propertyNames")
_BRANCHES = ("anyOf", "oneOf", "allOf")
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_REPEAT = re.compile(r"\{\s*(\d+)\s*(?:,\s*(\d*)\s*)?\}")


class SchemaRefused(ValueError):
    """The tools' parameters ask too much of the grammar: one line, naming the tool and what is too large."""


def check_tools(tools: list[tuple[str, dict[str, Any]]]) -> None:
    """Refuse (SchemaRefused) tools whose parameters the grammar cannot serve in reasonable time or at all. Each
    step is bounded by the ones before it: the walk stops at MAX_REQUEST_NODES schemas and reads each keyword's
    value once (loops, not recursion); the JSON is dumped only once its nesting is known to be small."""
    walk = _Walk()
    chars = 0
    for name, parameters in tools:
        walk.tool(name, parameters)
        levels = _nesting(parameters)
        if levels > MAX_NESTING:
            raise SchemaRefused(
                f"tool {name[:60]!r}: its parameters nest {levels} levels of JSON, more than the local model's "
                f"grammar takes (at most {MAX_NESTING}): give it a smaller schema"
            )
        # what the walk does not read (descriptions, unknown keywords) is still in the prompt and the grammar
        size = len(name) + len(json.dumps(parameters, ensure_ascii=False))
        if size > MAX_REQUEST_CHARS:
            raise SchemaRefused(
                f"tool {name[:60]!r}: its parameters are {size} characters of JSON, more than the local model's "
                f"grammar takes ({MAX_REQUEST_CHARS} for all the tools of a request): give it a smaller schema"
            )
        chars += size
    if chars > MAX_REQUEST_CHARS:
        raise SchemaRefused(
            f"the {len(tools)} tools' parameters are {chars} characters of JSON together, more than the local "
            f"model's grammar takes (at most {MAX_REQUEST_CHARS}): offer fewer tools, or name one in tool_choice"
        )
    for name, parameters in tools:
        forced = _Forced(parameters)  # recursive: on a schema of bounded nesting whose $refs do not recurse
        least = forced.least(parameters, "parameters")
        if least > MAX_FORCED_CHARS:
            size, what = forced.largest
            raise SchemaRefused(
                f"tool {name[:60]!r}: its parameters force a reply of at least {least} characters, more than the "
                f"local model's reply holds (at most {MAX_FORCED_CHARS}); the largest part: {what} ({size} "
                "characters): lower it"
            )


def _nesting(value: Any) -> int:
    """How many levels of objects and arrays `value` nests: a loop, as the body may nest as deep as it was parsed."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


class _Walk:
    """Every schema of every tool, $ref targets inlined where they are used (so a $ref costs what it stands for)."""

    def __init__(self) -> None:
        self.nodes = 0
        self.properties = 0

    def tool(self, name: str, parameters: dict[str, Any]) -> None:
        self.name = name[:60]
        self.root = parameters
        properties, depth = 0, 0
        # (schema, level, the schemas $refs led to on the way to it (by identity: "#", "#/$defs/x" or any other
        # spelling of one target is the same schema), where it is)
        stack: list[tuple[Any, int, tuple[int, ...], str]] = [(parameters, 1, (id(parameters),), "parameters")]
        while stack:
            schema, level, refs, where = stack.pop()
            if not isinstance(schema, dict):
                continue  # true / false, or not a schema at all: nothing for the grammar to grow from
            self.nodes += 1
            if self.nodes > MAX_REQUEST_NODES:
                self.refuse(
                    f"the request's tools hold more than {MAX_REQUEST_NODES} schemas together (every property, "
                    f"item, branch and $ref target counts; the limit was passed at {where})"
                )
            depth = max(depth, level)
            self.check_node(schema, where)
            ref = schema.get("$ref")
            if ref is not None:
                target = self.resolve(ref, refs, where)
                stack.append((target, level, (*refs, id(target)), f"{where} ($ref {ref})"))
            for key in _DEEPER_MAP:
                inner = schema.get(key)
                if not isinstance(inner, dict):
                    continue
                if key == "properties":
                    properties += len(inner)
                for prop, sub in inner.items():
                    if len(prop) > MAX_NAME:
                        self.refuse(f"a name in {key} at {where} is {len(prop)} characters (at most {MAX_NAME})")
                    stack.append((sub, level + 1, refs, f"{where}.{prop[:40]}"))
            for key in _DEEPER_ONE:
                stack.append((schema.get(key), level + 1, refs, f"{where}.{key}"))
            for key in ("items", "prefixItems"):  # items as a list: draft 4's tuples, still read by llguidance
                inner = schema.get(key)
                for i, sub in enumerate(self.branches(inner, key, where) if isinstance(inner, list) else [inner]):
                    stack.append(
                        (sub, level + 1, refs, f"{where}.{key}" + (f"[{i}]" if isinstance(inner, list) else ""))
                    )
            for key in _SAME_ONE:
                stack.append((schema.get(key), level, refs, f"{where}.{key}"))
            for key in _BRANCHES:
                for i, sub in enumerate(self.branches(schema.get(key), key, where)):
                    stack.append((sub, level, refs, f"{where}.{key}[{i}]"))
        self.properties += properties
        if depth > MAX_SCHEMA_DEPTH or properties > MAX_SCHEMA_PROPERTIES:
            self.refuse(
                f"its parameters are too large for the local model's grammar ({properties} properties, nested "
                f"{depth} levels; at most {MAX_SCHEMA_PROPERTIES} and {MAX_SCHEMA_DEPTH}): give it a smaller schema",
                lead="",
            )
        if self.properties > MAX_REQUEST_PROPERTIES:
            self.refuse(
                f"the request's tools have {self.properties} properties together, more than the local model's "
                f"grammar takes (at most {MAX_REQUEST_PROPERTIES}): offer fewer tools, or name one in tool_choice",
                lead="",
            )

    def refuse(self, message: str, lead: str = "too large for the local model's grammar: ") -> NoReturn:
        raise SchemaRefused(f"tool {self.name!r}: {lead}{message}")

    def branches(self, inner: Any, key: str, where: str) -> list[Any]:
        if not isinstance(inner, list):
            return []
        if len(inner) > MAX_BRANCHES:
            self.refuse(f"{key} at {where} has {len(inner)} schemas (at most {MAX_BRANCHES})")
        return inner

    def check_node(self, schema: dict[str, Any], where: str) -> None:
        for key in _COUNTS:
            value = schema.get(key)
            if key in schema and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                self.refuse(f"{key} at {where} is {repr(value)[:40]}, not a count", lead="")
        for low, high in (("minLength", "maxLength"), ("minItems", "maxItems"), ("minProperties", "maxProperties")):
            if low in schema and high in schema and schema[low] > schema[high]:
                self.refuse(f"{low} {schema[low]} is above {high} {schema[high]} at {where}: nothing fits", lead="")
        declared = schema.get("properties")
        if schema.get("minProperties", 0) > (len(declared) if isinstance(declared, dict) else 0) and not (
            schema.get("patternProperties")
        ):
            # the grammar closes every object (prompt._bounded): only the declared properties can be there
            self.refuse(
                f"minProperties {schema['minProperties']} at {where} asks for more properties than it declares "
                "(the local model's grammar allows only declared ones)",
                lead="",
            )
        for key in _BOUNDS:
            value = schema.get(key)
            if key not in schema or (isinstance(value, bool) and key.startswith("exclusive")):  # draft 4's flags
                continue
            if not isinstance(value, int | float) or isinstance(value, bool) or abs(value) > MAX_NUMBER:
                self.refuse(f"{key} at {where} is {str(value)[:40]} (at most {MAX_NUMBER} either side of 0)")
            if key == "multipleOf" and value <= 0:
                self.refuse(f"multipleOf at {where} is {value}: it must be above 0", lead="")
        self.satisfiable(schema, where)
        enum = schema.get("enum")
        if isinstance(enum, list):
            if len(enum) > MAX_ENUM:
                self.refuse(f"enum at {where} has {len(enum)} values (at most {MAX_ENUM})")
            for value in enum:
                self.literal(value, "an enum value", where)
        if "const" in schema:
            self.literal(schema["const"], "const", where)
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            if len(pattern) > MAX_PATTERN:
                self.refuse(f"pattern at {where} is {len(pattern)} characters (at most {MAX_PATTERN})")
            for m in _REPEAT.finditer(pattern):
                count = max(int(m.group(1)), int(m.group(2) or 0))
                if count > MAX_REPEAT:
                    self.refuse(f"pattern at {where} repeats {count} times (at most {MAX_REPEAT})")

    def satisfiable(self, schema: dict[str, Any], where: str) -> None:
        """Refuse a schema no value satisfies: the grammar has no way to finish the reply, and the engine ran until
        the tokens ran out (120-190 s) for an empty reply with finish_reason "length"."""
        nothing = f"at {where}: no value satisfies it"
        if schema.get("enum") == [] or schema.get("type") == [] or schema.get("not") in ({}, True):
            key = "enum" if schema.get("enum") == [] else "type" if schema.get("type") == [] else "not"
            self.refuse(f"{key} {json.dumps(schema[key])} {nothing}", lead="")
        properties = schema.get("properties")
        declared = properties if isinstance(properties, dict) else {}
        kinds = schema.get("type")
        closed = "properties" in schema or "object" in (kinds if isinstance(kinds, list) else [kinds])
        for name in _list(schema.get("required")):
            if declared.get(name) is False:
                self.refuse(f"required property {str(name)[:40]!r} is `false` {nothing}", lead="")
            if closed and name not in declared and not schema.get("patternProperties"):
                # the grammar closes every object (prompt._bounded): an undeclared property can never be written
                self.refuse(f"required property {str(name)[:40]!r} is not among its properties {nothing}", lead="")
        low, high = _range(schema)
        if low is not None and high is not None and low > high:
            self.refuse(f"the bounds {_bounds_text(schema)} {nothing}", lead="")
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and isinstance(schema.get("maxLength"), int):
            shortest = _pattern_width(pattern)
            if shortest > schema["maxLength"]:
                self.refuse(
                    f"pattern at {where} needs {shortest} characters, above its maxLength {schema['maxLength']}: "
                    "no value satisfies it",
                    lead="",
                )

    def literal(self, value: Any, what: str, where: str) -> None:
        size = len(json.dumps(value, ensure_ascii=False))
        if size > MAX_LITERAL:
            self.refuse(f"{what} at {where} is {size} characters of JSON (at most {MAX_LITERAL})")

    def resolve(self, ref: Any, refs: tuple[int, ...], where: str) -> Any:
        """The schema a local `$ref` ("#/$defs/x") points to; a recursive, remote or dangling one is refused."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            self.refuse(
                f"$ref {str(ref)[:60]!r} at {where}: only references inside the parameters (#/...) are read", lead=""
            )
        target: Any = self.root
        for part in ref[2:].split("/") if ref.startswith("#/") else [] if ref == "#" else ["<not a JSON pointer>"]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                self.refuse(f"$ref {ref[:60]!r} at {where} points to nothing in the parameters", lead="")
        if id(target) in refs:
            # the grammar would let the reply nest without end: the reply is cut off instead of finished
            self.refuse(
                f"$ref {ref[:60]!r} at {where} refers to a schema it is inside of: recursive schemas are not supported",
                lead="",
            )
        return target


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _number(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _range(schema: dict[str, Any]) -> tuple[float | None, float | None]:
    """The least and the greatest value a numeric schema allows (inclusive; an integer schema's exclusive bounds
    moved to the next integer in), None where unbounded. Bounds are numbers here: `check_node` refused others."""
    integer = schema.get("type") == "integer"
    low, high = _number(schema.get("minimum")), _number(schema.get("maximum"))
    above, below = _number(schema.get("exclusiveMinimum")), _number(schema.get("exclusiveMaximum"))
    if above is not None:
        nearest = math.floor(above) + 1 if integer else math.nextafter(above, math.inf)
        low = nearest if low is None else max(low, nearest)
    if below is not None:
        nearest = math.ceil(below) - 1 if integer else math.nextafter(below, -math.inf)
        high = nearest if high is None else min(high, nearest)
    if integer:
        low = None if low is None else math.ceil(low)
        high = None if high is None else math.floor(high)
    return low, high


def _bounds_text(schema: dict[str, Any]) -> str:
    return ", ".join(f"{key} {schema[key]}" for key in _BOUNDS[:4] if _number(schema.get(key)) is not None)


def _pattern_width(pattern: str) -> int:
    """The fewest characters a string matching `pattern` has (read as Python reads the regex: JSON Schema's ECMA
    regexes agree on counted repetition); 0 when Python cannot read it. A pattern is at most MAX_PATTERN characters
    and each repetition at most MAX_REPEAT, but nested ones multiply: `^(a{100}){100}$` forces 10,000."""
    import re._parser as parser

    try:
        return int(parser.parse(pattern).getwidth()[0])
    except (re.error, RecursionError, OverflowError, ValueError):
        return 0


class _Forced:
    """The fewest characters a schema lets a reply have (what its minLength, minItems, consts and required
    properties force), with the largest single part for the message. Run on a schema the walk accepted: it is
    small and its $refs do not recurse."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.largest: tuple[int, str] = (0, "")

    def note(self, size: int, what: str) -> int:
        if size > self.largest[0]:
            self.largest = (size, what)
        return size

    def least(self, schema: Any, where: str) -> int:
        if not isinstance(schema, dict):
            return 1
        if isinstance(schema.get("$ref"), str):
            target: Any = self.root
            for part in schema["$ref"][2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                target = target[int(part)] if isinstance(target, list) else target[part]
            return self.least(target, where)
        if "const" in schema:
            return self.note(len(json.dumps(schema["const"], ensure_ascii=False)), f"const at {where}")
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return min(len(json.dumps(v, ensure_ascii=False)) for v in schema["enum"])
        for key, pick in (("anyOf", min), ("oneOf", min), ("allOf", max)):
            if isinstance(schema.get(key), list) and schema[key]:
                return pick(self.least(s, f"{where}.{key}[{i}]") for i, s in enumerate(schema[key]))
        kinds = schema.get("type")
        kinds = set(kinds) if isinstance(kinds, list) else {kinds}
        if "null" in kinds or "boolean" in kinds or "integer" in kinds or "number" in kinds:
            return 1
        if "string" in kinds or "minLength" in schema or "pattern" in schema:
            count = schema.get("minLength", 0)
            pattern = schema.get("pattern")
            shortest = _pattern_width(pattern) if isinstance(pattern, str) else 0
            if shortest > count:
                return 2 + self.note(shortest, f"pattern at {where}")
            return 2 + self.note(count, f"minLength {count} at {where}")
        if "array" in kinds or "items" in schema or "prefixItems" in schema:
            size = 2
            prefix = _list(schema.get("prefixItems")) or _list(schema.get("items"))
            size += sum(self.least(s, f"{where}.prefixItems[{i}]") + 1 for i, s in enumerate(prefix))
            count = max(schema.get("minItems", 0) - len(prefix), 0)
            if count:
                item = schema.get("items") if isinstance(schema.get("items"), dict) else {}
                size += self.note(
                    count * (self.least(item, f"{where}.items") + 1), f"minItems {count + len(prefix)} at {where}"
                )
            return size
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required = _list(schema.get("required"))
        return 2 + sum(
            len(json.dumps(str(p), ensure_ascii=False)) + 2 + self.least(properties.get(p), f"{where}.{str(p)[:40]}")
            for p in required
        )
