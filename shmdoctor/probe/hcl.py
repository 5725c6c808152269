"""HCL (Terraform, Nomad) -> plain values with lines, read with python-hcl2's parser (its grammar, not its output).

A body is a `Node` of its attributes, each nested block under its type as a list of `Block`s (a Node with the
block's labels). Literals become values: strings, numbers, booleans, null, tuples, objects, heredocs, and what
`jsonencode`, `yamlencode`, `tolist`, `tomap`, `toset`, `merge` and `concat` make of known values, arithmetic on
known numbers, a string's interpolations of known values. Everything else — `var.x`, `local.y`, a resource's
attribute, `${var.tag}` in a string, a conditional, `file(...)`, a `for` — is `Unknown`: its expression as written,
known only when Terraform or Nomad evaluates it. Bounded: MAX_HCL_BYTES of text, MAX_HCL_TOKENS (counted before the
parser, pure Python, sees them), MAX_DEPTH of nesting.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import UsageError
from ..limits import MAX_DEPTH, MAX_DIGITS, MAX_HCL_BYTES, MAX_HCL_TOKENS, clip
from .documents import Node, Unparsable
from .unknown import Unknown


class Block(Node):
    """A nested block's body, with its labels (`resource "aws_ecs_task_definition" "this"`: the last two)."""

    labels: tuple[str, ...] = ()


_FUNCTIONS_OF_ONE = {"jsonencode", "yamlencode", "tolist", "tomap", "toset", "tostring", "tonumber", "sensitive"}
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}
_TOKEN = re.compile(r'[\w.-]+|"(?:[^"\\\n]|\\.){0,4096}"|\S')  # about the parser's tokens
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))")


def parse(text: str, source: str) -> Node:
    """The file's top-level body. Unparsable (one line with the file and line) where it is not HCL; UsageError past
    a bound."""
    if len(text) > MAX_HCL_BYTES:
        raise UsageError(f"{source}: more than the {MAX_HCL_BYTES // 2**20} MiB of HCL shmdoctor reads")
    tokens = sum(1 for _ in zip(range(MAX_HCL_TOKENS + 1), _TOKEN.finditer(text)))
    if tokens > MAX_HCL_TOKENS:
        raise UsageError(f"{source}: more than {MAX_HCL_TOKENS:,} tokens of HCL (names, numbers, strings, signs)")
    from hcl2.api import parses_to_tree  # lazy: only Terraform and Nomad files are HCL
    from lark.exceptions import LarkError

    try:
        tree = parses_to_tree(text)
    except LarkError as e:
        line = getattr(e, "line", None)
        at = f":{line}" if isinstance(line, int) and line > 0 else ""
        expected = getattr(e, "expected", None) or getattr(e, "allowed", None)
        token = getattr(e, "token", None) or getattr(e, "char", None)
        what = f"unexpected {clip(repr(str(token)), 40)}" if token is not None else "a syntax error"
        said = f" (expected one of {', '.join(sorted(expected)[:5])})" if expected else ""
        raise Unparsable(f"{source}{at}: not HCL: {what}{said}") from None
    except RecursionError:
        raise UsageError(f"{source}: nested deeper than {MAX_DEPTH} levels") from None
    return _Reader(text, source).body(tree.children[0], 0)


class _Reader:
    def __init__(self, text: str, source: str):
        self.text, self.source = text, source

    def written(self, tree: Any) -> Unknown:
        meta = tree.meta
        return Unknown(self.text[meta.start_pos : meta.end_pos].strip())

    def deeper(self, tree: Any, depth: int) -> int:
        if depth >= MAX_DEPTH:
            raise UsageError(f"{self.source}:{tree.meta.line}: nested deeper than {MAX_DEPTH} levels")
        return depth + 1

    def body(self, tree: Any, depth: int, node: Node | None = None) -> Node:
        out = node if node is not None else Node()
        out.line = getattr(tree.meta, "line", None)
        for child in _trees(tree):
            if child.data == "attribute":
                name, value = child.children[0], child.children[-1]
                out[self.name(name)] = self.value(value, self.deeper(child, depth))
            elif child.data == "block":
                parts = [c for c in _trees(child) if c.data in ("identifier", "keyword", "literal_value", "string")]
                kind, labels = self.name(parts[0]), tuple(self.label(p) for p in parts[1:])
                block = Block()
                block.labels = labels
                self.body(next(c for c in _trees(child) if c.data == "body"), self.deeper(child, depth), block)
                existing = out.get(kind)
                out[kind] = (existing if isinstance(existing, list) else []) + [block]
        return out

    def name(self, tree: Any) -> str:
        return str(_tokens(tree)[0]) if tree.data != "string" else self.label(tree)

    def label(self, tree: Any) -> str:
        value = self.string(tree, 0) if tree.data == "string" else str(_tokens(tree)[0])
        return str(value)

    def value(self, tree: Any, depth: int) -> Any:
        """An expression's value, or Unknown."""
        while tree.data == "expr_term" and len(tree.children) == 1 or tree.data == "object_elem_key":
            tree = tree.children[0]
            if not hasattr(tree, "data"):
                return Unknown(str(tree))
        kind = tree.data
        if kind == "expr_term":  # ( expression )
            inner = [c for c in _trees(tree) if c.data != "new_line_or_comment"]
            return self.value(inner[0], self.deeper(tree, depth)) if len(inner) == 1 else self.written(tree)
        if kind in ("int_lit", "float_lit"):
            return self.number(str(_tokens(tree)[0]), tree)
        if kind == "literal_value":
            return {"true": True, "false": False, "null": None}[str(_tokens(tree)[0])]
        if kind == "string":
            return self.string(tree, depth)
        if kind in ("heredoc_template", "heredoc_template_trim"):
            return _heredoc(str(_tokens(tree)[0]), trim=kind.endswith("trim"))
        if kind == "tuple":
            return [self.value(c, self.deeper(tree, depth)) for c in _trees(tree) if c.data != "new_line_or_comment"]
        if kind == "object":
            return self.object(tree, depth)
        if kind == "function_call":
            return self.call(tree, depth)
        if kind in ("binary_op", "unary_op"):
            return self.arithmetic(tree, depth)
        if kind == "identifier":  # a bare name in an expression is a reference
            return Unknown(str(_tokens(tree)[0]))
        return self.written(tree)  # references, splats, conditionals, for expressions, templates

    def number(self, digits: str, tree: Any) -> int | float:
        if len(digits) > MAX_DIGITS:
            raise UsageError(f"{self.source}:{tree.meta.line}: a number of {len(digits)} digits (at most {MAX_DIGITS})")
        return float(digits) if any(c in digits for c in ".eE") else int(digits)

    def string(self, tree: Any, depth: int) -> str:
        parts: list[str] = []
        for part in _trees(tree):
            inner = part.children[0]
            if hasattr(inner, "data"):  # an interpolation or a directive
                if inner.data != "interpolation":
                    return Unknown(self.written(tree)[1:-1])
                value = self.value(inner.children[1], self.deeper(tree, depth))
                if isinstance(value, (Unknown, dict, list)) or value is None:
                    return Unknown(self.written(tree)[1:-1])
                parts.append(str(value).lower() if isinstance(value, bool) else str(value))
            elif inner.type == "ESCAPED_INTERPOLATION":
                parts.append(str(inner)[1:])  # $${x} is the text ${x}
            elif inner.type == "ESCAPED_DIRECTIVE":
                parts.append(str(inner)[1:])
            else:
                parts.append(_unescape(str(inner)))
        return "".join(parts)

    def object(self, tree: Any, depth: int) -> Node:
        out = Node()
        out.line = tree.meta.line
        for elem in _trees(tree):
            if elem.data != "object_elem":
                continue
            key_tree, value_tree = elem.children[0], elem.children[-1]
            key = self.key(key_tree, depth)
            out[key] = self.value(value_tree, self.deeper(tree, depth))
        return out

    def key(self, tree: Any, depth: int) -> str:
        """An object's key: a bare name is itself (`{ name = 1 }`), an expression its value."""
        inner = tree.children[0]
        while hasattr(inner, "data") and inner.data == "expr_term" and len(inner.children) == 1:
            inner = inner.children[0]
        if hasattr(inner, "data") and inner.data in ("identifier", "keyword", "literal_value"):
            return str(_tokens(inner)[0])
        if not hasattr(inner, "data"):
            return str(inner)
        return str(self.value(inner, self.deeper(tree, depth)))

    def call(self, tree: Any, depth: int) -> Any:
        name = str(_tokens(tree.children[0])[0])
        arguments = next((c for c in _trees(tree) if c.data == "arguments"), None)
        trees = [c for c in _trees(arguments) if c.data != "new_line_or_comment"] if arguments is not None else []
        if len(trees) > 1 and name in _FUNCTIONS_OF_ONE or len(trees) > 1000:
            return self.written(tree)
        values = [self.value(c, self.deeper(tree, depth)) for c in trees]
        if name in _FUNCTIONS_OF_ONE and len(values) == 1:
            return values[0]  # jsonencode([...]): the value itself, as the JSON it encodes would parse
        if name == "merge" and values and all(isinstance(v, dict) for v in values):
            merged = Node()
            merged.line = tree.meta.line
            for value in values:
                merged.update(value)
            return merged
        if name == "concat" and values and all(isinstance(v, list) for v in values):
            return [item for value in values for item in value]
        return self.written(tree)

    def arithmetic(self, tree: Any, depth: int) -> Any:
        """+ - * / % on known numbers, unary minus and ! on known values; else Unknown."""
        if tree.data == "unary_op":
            operator, operand = str(tree.children[0]), self.value(tree.children[1], self.deeper(tree, depth))
            if operator == "-" and isinstance(operand, (int, float)) and not isinstance(operand, bool):
                return -operand
            if operator == "!" and isinstance(operand, bool):
                return not operand
            return self.written(tree)
        left = self.value(tree.children[0], self.deeper(tree, depth))
        term = tree.children[1]
        operator = str(_tokens(term.children[0])[0])
        right = self.value(next(c for c in _trees(term)[1:] if c.data != "new_line_or_comment"), depth + 1)
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right))
        if not numbers or abs(left) > 2**62 or abs(right) > 2**62:
            return self.written(tree)
        if operator == "+":
            return left + right
        if operator == "-":
            return left - right
        if operator == "*":
            return left * right
        if operator in ("/", "%") and right:
            return left / right if operator == "/" else left % right
        return self.written(tree)


def _trees(tree: Any) -> list:
    return [c for c in tree.children if hasattr(c, "data")] if tree is not None else []


def _tokens(tree: Any) -> list:
    return [c for c in tree.children if not hasattr(c, "data")]


def _unescape(text: str) -> str:
    def one(match: re.Match) -> str:
        code = match.group(1) or match.group(2)
        if code:
            value = int(code, 16)
            return chr(value) if value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF else "\ufffd"
        return _ESCAPES.get(match.group(3), match.group(0))

    return _ESCAPE.sub(one, text) if "\\" in text else text


def _heredoc(token: str, trim: bool) -> str:
    """A heredoc's text: the lines between its markers (`<<-` takes off the indentation they share). Its ${...}
    are left as written: a JSON heredoc's unknowns are its strings that hold one."""
    lines = token.split("\n")[1:-2]  # the marker line, then the closing marker and the newline after it
    if trim:
        indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
        cut = min(indents, default=0)
        lines = [line[cut:] for line in lines]
    return "\n".join(lines) + ("\n" if lines else "")


def blocks(body: Any, kind: str) -> list[Block]:
    """The blocks of one type in a body (none where it has none, or an attribute of that name)."""
    found = body.get(kind) if isinstance(body, dict) else None
    return [b for b in found if isinstance(b, Block)] if isinstance(found, list) else []


def unknowns(value: Any) -> Any:
    """A value read from JSON in a heredoc: its strings holding ${...} as Unknown, walked without recursion."""
    if isinstance(value, str):
        return Unknown(value) if "${" in value or "%{" in value else value
    stack = [value]
    while stack:
        item = stack.pop()
        pairs = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
        for key, child in list(pairs):
            if isinstance(child, str) and ("${" in child or "%{" in child):
                item[key] = Unknown(child)
            elif isinstance(child, (dict, list)):
                stack.append(child)
    return value
