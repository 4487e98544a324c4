"""Reads the text ``printer.py`` writes back into a Function, so IR can be written by hand in tests
and every printed kernel can be checked to round-trip.

Locations come back as ``file:line`` (the column and the folder are not printed); attributes left
out because they equal their default are filled in from the IR spec, as the builder does.
"""
from __future__ import annotations

import math
import re
import struct
from typing import Any, Optional

from . import encodings
from . import types as T
from .builder import with_defaults
from .ops import Function, Location, Operation, Region, Value
from .spec import SPEC


class IRParseError(ValueError):
    """The text is not IR as the printer writes it; the message names the line."""


_TOKEN = re.compile(r"""
    (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<nan_bits>nan\(0x[0-9a-fA-F]{16}\))
  | (?P<number>-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+)|-inf)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[\[\]{},=])
  | (?P<space>\s+)
""", re.VERBOSE)


def _outside_quotes(text: str):
    """Yields (index, char) of the characters of ``text`` that are not inside a quoted string."""
    quote = None
    escaped = False
    for i, ch in enumerate(text):
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
            continue
        yield i, ch


def _split_comment(text: str) -> tuple[str, Optional[str]]:
    depth = 0  # a '#' inside brackets starts an encoding (<8xfp32, #cpu.buffer>), not a comment
    for i, ch in _outside_quotes(text):
        if ch in "<[(":
            depth += 1
        elif ch in ">])":
            depth -= 1
        elif ch == "#" and depth <= 0:
            return text[:i].rstrip(), text[i + 1:].strip()
    return text.rstrip(), None


def _split_top(text: str, separator: str = ",") -> list[str]:
    """``text`` split at ``separator`` where it is outside quotes, brackets and braces."""
    parts, depth, start = [], 0, 0
    for i, ch in _outside_quotes(text):
        if ch in "[{(<":
            depth += 1
        elif ch in "]})>":
            depth -= 1
        elif ch == separator and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


_BLOCK = re.compile(r"^<((?:\d+x)+)(.+)>$")
_POINTER = re.compile(r"^ptr<(.+)>$")


def parse_type(text: str):
    text = text.strip()
    block = _BLOCK.match(text)
    if block:
        shape = tuple(int(s) for s in block.group(1).split("x") if s)
        return T.block_type(parse_type(block.group(2)), shape)
    pointer = _POINTER.match(text)
    if pointer:
        return T.pointer_type(parse_type(pointer.group(1)))
    scalar = T.dtype_from_ir_name(text)
    if scalar is None:
        raise IRParseError(f"unknown IR type {text!r}")
    return scalar


def parse_value_type(text: str):
    """(type, encoding) of a value's printed type: a block's encoding, when it has one, is the last
    item inside its brackets (``<8xfp32, #cpu.buffer>``); None otherwise."""
    text = text.strip()
    if text.startswith("<") and text.endswith(">"):
        inner, depth, cut = text[1:-1], 0, None
        for i, ch in enumerate(inner):
            if ch in "<[(":
                depth += 1
            elif ch in ">])":
                depth -= 1
            elif ch == "," and depth == 0:
                cut = i
        if cut is not None and inner[cut + 1:].strip().startswith("#"):
            ty = parse_type("<" + inner[:cut] + ">")
            try:
                encoding = encodings.parse_encoding(inner[cut + 1:], tuple(ty.shape))
            except ValueError as error:
                raise IRParseError(str(error)) from None
            return ty, encoding
    return parse_type(text), None


class _AttrReader:
    """Reads ``{name=value, ...}`` where a value is a Python literal, nan/inf, a list, or a dtype name."""

    def __init__(self, text: str):
        self.tokens = []
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None:
                raise IRParseError(f"cannot read attributes at {text[position:]!r}")
            position = match.end()
            if match.lastgroup != "space":
                self.tokens.append((match.lastgroup, match.group()))
        self.at = 0

    def peek(self):
        return self.tokens[self.at] if self.at < len(self.tokens) else (None, None)

    def take(self, expected: Optional[str] = None):
        kind, text = self.peek()
        if expected is not None and text != expected:
            raise IRParseError(f"expected {expected!r} in attributes, found {text!r}")
        self.at += 1
        return kind, text

    def value(self) -> Any:
        kind, text = self.take()
        if text == "[":
            items = []
            while self.peek()[1] != "]":
                items.append(self.value())
                if self.peek()[1] == ",":
                    self.take()
            self.take("]")
            return items
        if kind == "string":
            return _unquote(text)
        if kind == "nan_bits":
            return struct.unpack("<d", struct.pack("<Q", int(text[6:-1], 16)))[0]
        if kind == "number":
            if text == "-inf":
                return -math.inf
            return float(text) if any(c in text for c in ".eE") else int(text)
        if kind == "name":
            constants = {"True": True, "False": False, "None": None, "nan": math.nan, "inf": math.inf}
            if text in constants:
                return constants[text]
            dtype = T.dtype_from_ir_name(text)
            if dtype is not None:
                return dtype
        raise IRParseError(f"cannot read attribute value {text!r}")

    def mapping(self) -> dict:
        self.take("{")
        result = {}
        while self.peek()[1] != "}":
            _, name = self.take()
            self.take("=")
            result[name] = self.value()
            if self.peek()[1] == ",":
                self.take()
        self.take("}")
        return result


def _unquote(text: str) -> str:
    import ast

    return ast.literal_eval(text)


def _parse_attrs(text: str) -> dict:
    return _AttrReader(text).mapping() if text else {}


def _typed_attr(opcode: str, name: str, value, result_types):
    """Attribute values as the frontend stores them (tuples for shapes, floats for float constants)."""
    spec = SPEC.get(opcode)
    slot = spec.attr(name) if spec is not None else None
    if slot is None:
        return tuple(value) if isinstance(value, list) else value
    if slot.kind == "ints" and isinstance(value, list):
        return tuple(value)
    if opcode == "constant" and name == "value" and result_types:
        scalar = result_types[0].scalar
        if scalar.is_bool():
            return bool(value)
        return float(value) if scalar.is_floating() else int(value)
    return value


def _parse_location(text: Optional[str]) -> Optional[Location]:
    if not text:
        return None
    loc = None
    for site in reversed(text.split("<-")):
        file, _, line = site.strip().rpartition(":")
        if not file or not line.isdigit():
            raise IRParseError(f"cannot read the location {text!r} (expected file:line)")
        loc = Location(file, int(line), 0, "", loc)
    return loc


_HEADER = re.compile(r"^func @([A-Za-z_][A-Za-z0-9_]*)\((.*)\) \{$")
_REGION = re.compile(r"^\^([A-Za-z_][A-Za-z0-9_]*)\((.*)\):$")
_OP = re.compile(r"^(?:(?P<results>%[\w.]+(?:, %[\w.]+)*) = )?(?P<opcode>[a-z_][a-z0-9_]*)(?P<rest>.*)$")


class _Parser:
    def __init__(self, text: str):
        self.lines = [line for line in text.splitlines() if line.strip()]
        self.at = 0
        self.current = 0  # the index of the line being read, for messages
        self.values: dict[str, Value] = {}

    def fail(self, message: str):
        line = self.lines[self.current] if self.current < len(self.lines) else ""
        raise IRParseError(f"line {self.current + 1}: {message}: {line.strip()!r}")

    def next_line(self) -> tuple[str, Optional[str]]:
        if self.at >= len(self.lines):
            self.fail("unexpected end of the IR")
        self.current = self.at
        code, comment = _split_comment(self.lines[self.at])
        self.at += 1
        return code.strip(), comment

    def define(self, name: str, value: Value) -> None:
        if name in self.values:
            self.fail(f"{name} is defined twice")
        self.values[name] = value

    def use(self, name: str) -> Value:
        value = self.values.get(name)
        if value is None:
            self.fail(f"{name} is used before it is defined")
        return value

    def typed_names(self, text: str) -> list[tuple[str, Any, dict, Any]]:
        """``%a: type {attrs}, ...`` -> (name, type, attrs, encoding)."""
        out = []
        for part in _split_top(text):
            name, _, rest = part.partition(":")
            rest = rest.strip()
            attrs = {}
            if rest.endswith("}"):
                brace = rest.index(" {")
                rest, attrs = rest[:brace], _parse_attrs(rest[brace + 1:])
            ty, encoding = parse_value_type(rest)
            out.append((name.strip(), ty, attrs, encoding))
        return out

    def function(self) -> Function:
        code, comment = self.next_line()
        header = _HEADER.match(code)
        if header is None:
            self.fail("expected 'func @name(...) {'")
        args = self.typed_names(header.group(2))
        body = Region([ty for _, ty, _, _ in args])
        for (name, _, _, _), value in zip(args, body.args):
            self.define(name, value)
        fn = Function(header.group(1), [name[1:] for name, _, _, _ in args], body, _parse_location(comment))
        fn.arg_attrs = [attrs for _, _, attrs, _ in args]
        self.ops_until_close(body)
        return fn

    def ops_until_close(self, region: Region) -> str:
        """Reads ops into ``region`` until a line closing it: '}' or '} {'; returns that line."""
        while True:
            code, comment = self.next_line()
            if code.startswith("}"):
                self.at -= 1
                return code
            region.ops.append(self.operation(code, comment))

    def operation(self, code: str, comment: Optional[str]) -> Operation:
        try:
            return self._operation(code, comment)
        except IRParseError as error:
            if str(error).startswith("line "):
                raise
            self.fail(str(error))

    def _operation(self, code: str, comment: Optional[str]) -> Operation:
        line = self.current
        match = _OP.match(code)
        if match is None:
            self.fail("expected an operation")
        opcode, rest = match.group("opcode"), match.group("rest")
        spec = SPEC.get(opcode)
        if spec is None:
            self.fail(f"unknown opcode {opcode!r}")
        opens_regions = rest.endswith(" {")
        if opens_regions:
            rest = rest[:-2]
        result_types, result_encodings = [], []
        type_split = [i for i, ch in _outside_quotes(rest) if ch == ":" and rest[i - 1:i + 2] == " : "]
        if type_split:
            cut = type_split[-1]
            typed = [parse_value_type(t) for t in _split_top(rest[cut + 2:])]
            result_types = [ty for ty, _ in typed]
            result_encodings = [encoding for _, encoding in typed]
            rest = rest[:cut - 1]
        attrs = {}
        brace = next((i for i, ch in _outside_quotes(rest) if ch == "{"), None)
        if brace is not None:
            attrs = _parse_attrs(rest[brace:].strip())
            rest = rest[:brace]
        operands, names = [], []
        optional = {slot.name for slot in spec.operands if slot.optional}
        positional = spec.operand_names(len(_split_top(rest)))
        for i, part in enumerate(_split_top(rest)):
            slot, equals, ref = part.partition("=")
            if equals:
                if slot not in optional:
                    self.fail(f"{opcode} has no optional operand {slot!r}")
                names.append(slot)
                operands.append(self.use(ref.strip()))
            else:
                names.append(positional[i] if i < len(positional) else "?")
                operands.append(self.use(part))
        attrs = {k: _typed_attr(opcode, k, v, result_types) for k, v in attrs.items()}
        regions = self.regions(spec) if opens_regions else []
        if opens_regions:
            _, comment = self.next_line()  # the closing '}' carries the op's location
        self.current = line
        op = Operation(opcode, operands, result_types, with_defaults(opcode, attrs), regions,
                       _parse_location(comment), tuple(names))
        for value, encoding in zip(op.results, result_encodings):
            value.encoding = encoding
        if match.group("results"):
            result_names = [n.strip() for n in match.group("results").split(",")]
            if len(result_names) != len(op.results):
                self.fail(f"{len(result_names)} result names but {len(op.results)} result types")
            for name, value in zip(result_names, op.results):
                self.define(name, value)
        elif op.results:
            self.fail("result types without result names")
        return op

    def regions(self, spec) -> list[Region]:
        regions = []
        while True:
            code, _ = self.next_line()
            header = _REGION.match(code)
            if header is None:
                self.fail("expected a region label '^name(...):'")
            args = self.typed_names(header.group(2))
            region = Region([ty for _, ty, _, _ in args])
            for (name, _, _, encoding), value in zip(args, region.args):
                value.encoding = encoding
                self.define(name, value)
            regions.append(region)
            closing = self.ops_until_close(region)
            if closing == "} {":
                self.at += 1
                continue
            return regions


def parse_function(text: str) -> Function:
    """The Function printed as ``text`` (see printer.py for the format)."""
    parser = _Parser(text)
    fn = parser.function()
    code, _ = parser.next_line()
    if code != "}":
        parser.fail("expected '}' closing the function")
    if parser.at != len(parser.lines):
        parser.fail("text after the end of the function")
    return fn
