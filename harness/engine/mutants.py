"""The mutants of a substrate's CUDA source: a pure function of the text, for a mutation campaign.

A mutant is one small rewrite of the source (`Mutant.apply`); `generate(source, substrate)` lists every
mutant of every operator in `OPERATORS`, in source order then operator order. Each operator is a short
generator over the tokens with a one-line docstring of what it rewrites.

How the source is read: as `harness.gate.checks.source_rules` reads it (its helpers are reused): comments and
string/char literals are blanked, preprocessor lines (`#include`, `#pragma`, `#define` with their `\\`
continuations) are skipped, the rest is cut into tokens. Only tokens inside function bodies are mutated,
so declarations outside them (struct members, typedefs, parameters) and `#define` bodies are left alone:
a `#define`d constant is mutated where it is used (CAS_BOUND rewrites `tries < MAX_CAS_TRIES`), never in
its definition. No mutant rewrites a comment or a string.

What each operator takes, exactly:
- RELATIONAL_BOUNDARY / RELATIONAL_NEGATION: comparisons in conditions: an `if`, `while` or `do ... while`
  condition, a `for` loop's middle clause, or a ternary's condition (back from `?` to `(`, `=`, `,`, `;`,
  `return`, `?` or `:`). Comparisons elsewhere (`bool b = x < n;`) are not conditions and are left alone.
- GUARD_DELETION: an `if` with no `else`, not an `else if`, that starts and ends on one line (the spec keeps
  every bounds guard so); the whole statement goes, body and all. A guard that is itself the body of a
  loop or `if` becomes `;`.
- CEIL_DIVISION: `(x + K - 1) / K` with the same K spelled after `+` and after `/`; `x` keeps parentheses
  unless it is one operand.
- ARITHMETIC_SWAP: binary `+ - * / % << >>` and their compound assignments (`+=` ...): `+` <-> `-`,
  `*` -> `/`, `/` -> `*`, `%` -> `/`, `<<` <-> `>>`. Binary means the token before is an operand (a name
  that is not a type or keyword, a number, `)` or `]` that is not a cast's); so unary minus, dereference
  and pointer declarators (`elem_t* p`, `(word_t*)slot`) are not taken. Bitwise `& | ^` are not taken.
- CONSTANT_OFF_BY_ONE: integer literals (decimal or hex, suffix kept): N -> N + 1 and N - 1. Limited to
  function bodies (so struct array sizes, which fix the layout `launch` marshals, are not mutated), and
  not array sizes of local declarations, nor the `1` of a ceil division (CEIL_DIVISION's `(x + K) / K`
  covers it). Float literals are not taken.
- INDEX_OFF_BY_ONE: a subscript `a[i]` -> `a[i + 1]` and `a[i - 1]` (the index parenthesised when it holds
  an operator that binds looser than `+`); not a declaration's array size, and not a lone integer literal
  (`a[0]`: CONSTANT_OFF_BY_ONE's `a[1]` and `a[-1]` are the same mutants).
- TERNARY_SWAP: `c ? a : b` -> `c ? b : a`.
- SYNC_DELETION: one `__syncthreads();` deleted (its label is in the description).
- ATOMIC_TO_PLAIN: `atomicAdd/Sub/And/Or/Xor/Exch/Min/Max/CAS` (and `_block`/`_system` forms) made plain,
  non-atomic: as a statement of its own, a compound assignment (`(*(p) += (v))`, `(*(p) = (v))`, or
  `(*(p) = <new value>)`); where the result is used, a lambda that reads the old value, stores the new one
  and returns the old one, as the atomic does: `([&]() { auto mutant_old = *(p); *(p) = ...; return
  mutant_old; }())`. atomicInc/atomicDec are not taken.
- THREAD_BLOCK_SWAP: `threadIdx.c` <-> `blockIdx.c` for c in x, y, z.
- NARROW_LONG_LONG: `long long` (and `long long int`; `unsigned long long` becomes `unsigned int`) -> `int`
  in a function body: a local declaration or a cast. Parameters, struct members and typedefs are outside
  bodies and are left alone (narrowing them changes the kernel's signature or the data, not an index), and
  so are pointer types (`(long long*)p`) and a cast of a pointer variable (`(unsigned long long)slot`:
  `(unsigned int)slot` does not compile).
- CAS_BOUND: in a `for`, `while` or `do ... while` loop whose body calls `atomicCAS`, the bound of its
  condition (the right side of `<` or `<=`, the left side of `>` or `>=`; each `&&`/`||` part on its own;
  `==`/`!=` parts, such as `w[0] != 0u`, are not bounds) -> `1` and -> `0`.

Ids are `<substrate>:L<line>C<column>:<operator>:<n>`: the place where the replaced text starts, and n
counting that operator's mutants there (0 and 1 for the two rewrites of one site). The same substrate name
and source always give the same ids; an edit that adds or removes no line leaves the ids on every other line
alone, and lines added or removed renumber only the sites below them. Two mutants giving the same mutated source keep the
first (in source order then operator order); the later is dropped, its id unused.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Callable, Iterator, NamedTuple

from harness.gate.checks.source_rules import (_IDENT, _TOKEN, _match, _operand_back, _operand_fwd, _scope,
                                              _statement_end, _strip)


class Operator(str, enum.Enum):
    """One member per kind of rewrite; `generate` lists a site's mutants in this order."""

    RELATIONAL_BOUNDARY = "relational_boundary"
    RELATIONAL_NEGATION = "relational_negation"
    GUARD_DELETION = "guard_deletion"
    CEIL_DIVISION = "ceil_division"
    ARITHMETIC_SWAP = "arithmetic_swap"
    CONSTANT_OFF_BY_ONE = "constant_off_by_one"
    INDEX_OFF_BY_ONE = "index_off_by_one"
    TERNARY_SWAP = "ternary_swap"
    SYNC_DELETION = "sync_deletion"
    ATOMIC_TO_PLAIN = "atomic_to_plain"
    THREAD_BLOCK_SWAP = "thread_block_swap"
    NARROW_LONG_LONG = "narrow_long_long"
    CAS_BOUND = "cas_bound"


@dataclass(frozen=True)
class Mutant:
    id: str            # "<substrate>:L<line>C<column>:<operator>:<n>", see the module docstring
    substrate: str
    operator: Operator
    line: int          # 1-based line of `start` in the CUDA source
    column: int        # 1-based column of `start`
    start: int         # character offsets of the replaced span in the source
    end: int
    original: str      # source[start:end]
    replacement: str
    description: str   # one line a person reads

    def apply(self, source: str) -> str:
        """The mutated source."""
        assert source[self.start:self.end] == self.original, (
            f"{self.id}: source[{self.start}:{self.end}] is {source[self.start:self.end]!r}, not {self.original!r}")
        return source[:self.start] + self.replacement + source[self.end:]

    def diff_line(self, source: str) -> str:
        """`L<line>: -<the lines before>  +<the lines after>` on one line (a line break shows as `\\n`)."""
        first = source.rfind("\n", 0, self.start) + 1
        last = source.find("\n", self.end)
        last = len(source) if last < 0 else last
        before = source[first:last]
        after = source[first:self.start] + self.replacement + source[self.end:last]
        return f"L{self.line}: -{before.replace(chr(10), chr(92) + 'n')}  +{after.replace(chr(10), chr(92) + 'n')}"


class Tok(NamedTuple):
    text: str
    line: int
    column: int
    start: int   # offsets in the source
    end: int


_OPEN, _CLOSE = ("(", "[", "{"), (")", "]", "}")
_TYPES = {"void", "bool", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "auto",
          "size_t", "ptrdiff_t", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
          "uint64_t", "__half", "__half2", "half", "__nv_bfloat16", "__nv_bfloat162", "dim3", "const",
          "volatile", "__restrict__", "constexpr", "struct", "class", "union", "enum", "typename"} | {
    f"{base}{n}" for base in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong",
                              "ulonglong", "float", "double") for n in (1, 2, 3, 4)}
_KEYWORDS = {"return", "case", "sizeof", "alignof", "decltype", "new", "delete", "throw", "else", "do", "if",
             "for", "while", "switch", "goto", "typedef", "using", "template", "operator", "static", "inline",
             "extern", "__shared__", "__device__", "__global__", "__constant__", "__forceinline__", "register"}
_COMPARISONS = {"<", "<=", ">", ">=", "==", "!="}
_BOUNDARY = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}
_NEGATION = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
_ARITHMETIC = {"+": "-", "-": "+", "*": "/", "/": "*", "%": "/", "<<": ">>", ">>": "<<",
               "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=", "%=": "/=", "<<=": ">>=", ">>=": "<<="}
_TIGHT = {"+", "-", "*", "/", "%", ".", "->", "::", "++", "--", "!", "~"}  # an index of these needs no ()
_ATOMIC = re.compile(r"atomic(Add|Sub|And|Or|Xor|Exch|Min|Max|CAS)(?:_block|_system)?")
_COMPOUND = {"Add": "+=", "Sub": "-=", "And": "&=", "Or": "|=", "Xor": "^=", "Exch": "="}
_SWAP_INDEX = {"threadIdx": "blockIdx", "blockIdx": "threadIdx"}
_INTEGER = re.compile(r"(0[xX][0-9a-fA-F]+|[1-9][0-9]*|0)([uUlL]*)")  # not octal `017`


def _is_assignment(text: str) -> bool:
    return text == "=" or (text.endswith("=") and text not in ("==", "!=", "<=", ">=") and len(text) > 1)


class _Code:
    """The source as the operators see it: its tokens, which lie in function bodies, and the helpers they share."""

    def __init__(self, source: str):
        self.source = source
        _, code, self.comments = _strip(source)
        self.toks: list[Tok] = []
        offset, continued = 0, False
        for number, text in enumerate(code.split("\n"), 1):
            if continued or text.lstrip().startswith("#"):
                continued = text.rstrip().endswith("\\")
            else:
                self.toks += [Tok(m.group(), number, m.start() + 1, offset + m.start(), offset + m.end())
                              for m in _TOKEN.finditer(text)]
            offset += len(text) + 1
        functions: list = []
        _scope(self.toks, lambda *_: None, functions)
        where = {t.start: k for k, t in enumerate(self.toks)}
        self.body = sorted(where[t.start] for _, _, body, _ in functions for t in body)
        self.types = set(_TYPES)
        for k, t in enumerate(self.toks):
            if t.text in ("struct", "class", "union", "enum") and _IDENT.fullmatch(self.text(k + 1)):
                self.types.add(self.text(k + 1))
            elif t.text in ("typedef", "using"):
                end, depth = k, 0
                while end < len(self.toks) and not (depth == 0 and self.toks[end].text == ";"):
                    depth += (self.toks[end].text in _OPEN) - (self.toks[end].text in _CLOSE)
                    end += 1  # `typedef struct { int a; } name;` ends at the `;` outside the braces
                names = [x.text for x in self.toks[k + 1:end] if _IDENT.fullmatch(x.text)]
                self.types |= set(names[:1] if t.text == "using" else names[-1:])
        self.templates = self._angle_brackets()
        self.declared = self._declaration_brackets()
        self.pointers = self._pointer_names()

    def text(self, k: int) -> str:
        return self.toks[k].text if 0 <= k < len(self.toks) else ""

    def span(self, first: int, last: int) -> str:
        return self.source[self.toks[first].start:self.toks[last].end]

    def edit(self, first: int, last: int, replacement: str, description: str) -> tuple[int, int, str, str]:
        return self.toks[first].start, self.toks[last].end, replacement, description

    def at_body(self, *texts: str) -> Iterator[int]:
        """Indices of the body tokens spelled one of `texts`."""
        return (k for k in self.body if self.toks[k].text in texts)

    def operand_end(self, k: int) -> bool:
        """Whether token k ends an operand, so that an operator after it is binary."""
        t = self.text(k)
        if t == ")":
            o = _match(self.toks, k, -1)
            inner = {x.text for x in self.toks[o + 1:k]}
            before = self.text(o - 1)
            if before in ("if", "for", "while", "switch", "constexpr"):
                return False  # a statement follows: `if (p) *p = 0;`
            call = _IDENT.fullmatch(before) and before not in self.types and before not in _KEYWORDS
            return bool(call or before in ("sizeof", "alignof", "decltype") or not inner
                        or not inner <= self.types | {"*", "&"})  # otherwise a cast such as `(word_t*)`
        if t == "]":
            return True
        if t in ("++", "--"):
            return bool(_IDENT.fullmatch(self.text(k - 1))) or self.text(k - 1) in (")", "]")
        if _IDENT.fullmatch(t):
            return t not in self.types and t not in _KEYWORDS
        return bool(re.match(r"\.?\d", t))

    def controlled(self, k: int) -> bool:
        """Whether the statement starting at k is the whole body of an if, else, loop or switch."""
        before = self.text(k - 1)
        if before in ("else", "do"):
            return True
        if before != ")":
            return False
        o = _match(self.toks, k - 1, -1)
        return self.text(o - 1) in ("if", "for", "while", "switch") or self.text(o - 1) == "constexpr"

    def deleted(self, k: int) -> str:
        """What replaces the deleted statement starting at k: nothing, or `;` where it was a body."""
        return ";" if self.controlled(k) else ""

    def _angle_brackets(self) -> set[int]:
        """Indices of `<`/`>` that bracket template arguments (`static_cast<int>`, `template <...>`)."""
        found = set()
        for k, t in enumerate(self.toks):
            if t.text != "<" or not (self.text(k - 1) == "template" or self.text(k - 1).endswith("_cast")):
                continue
            depth, j = 0, k
            while j < len(self.toks) and self.toks[j].text not in (";", "{", ")"):
                depth += {"<": 1, ">": -1, ">>": -2}.get(self.toks[j].text, 0)
                if self.toks[j].text in ("<", ">", ">>"):
                    found.add(j)
                if depth <= 0:
                    break
                j += 1
        return found

    def _pointer_names(self) -> set[str]:
        """Names declared as pointers: `T* name` followed by `=`, `,`, `)` or `;` (parameters and variables)."""
        found = set()
        for k in (k for k, t in enumerate(self.toks) if t.text == "*" and not self.operand_end(k - 1)):
            j = k + 1
            while self.text(j) in ("*", "const", "volatile", "__restrict__"):
                j += 1
            if _IDENT.fullmatch(self.text(j)) and self.text(j + 1) in ("=", ",", ")", ";"):
                found.add(self.text(j))
        return found

    def _declaration_brackets(self) -> set[int]:
        """Indices of the tokens of declarations' array sizes, `[` and `]` included (`float s[32][33]`)."""
        found: set[int] = set()
        for k in self.at_body("["):
            name, before = self.text(k - 1), self.text(k - 2)
            first = _IDENT.fullmatch(name) and (before in self.types or before in ("*", "__shared__"))
            if first or (name == "]" and k - 1 in found):
                found |= set(range(k, _match(self.toks, k) + 1))
        return found

    def conditions(self) -> list[tuple[int, str]]:
        """(index, where) of every comparison operator in a condition, `where` naming the condition."""
        found: dict[int, str] = {}

        def mark(first: int, last: int, where: str) -> None:
            for j in range(first, last):
                if self.toks[j].text in _COMPARISONS and j not in self.templates:
                    found.setdefault(j, where)

        for k in self.at_body("if", "while", "for", "?"):
            t = self.toks[k]
            if t.text in ("if", "while"):
                j = k + 1 + (self.text(k + 1) == "constexpr")
                if self.text(j) == "(":
                    mark(j + 1, _match(self.toks, j), f"the condition of the `{t.text}` at line {t.line}")
            elif t.text == "for" and self.text(k + 1) == "(":
                close, depth, semis = _match(self.toks, k + 1), 0, []
                for j in range(k + 1, close):
                    depth += (self.toks[j].text in _OPEN) - (self.toks[j].text in _CLOSE)
                    semis += [j] if depth == 1 and self.toks[j].text == ";" else []
                if len(semis) == 2:
                    mark(semis[0] + 1, semis[1], f"the condition of the `for` at line {t.line}")
            elif t.text == "?":
                mark(self.ternary_condition(k), k, f"the condition of the ternary at line {t.line}")
        return sorted(found.items())

    def ternary_condition(self, q: int) -> int:
        """Index of the first token of the condition of the ternary whose `?` is at q."""
        depth, j = 0, q - 1
        while j >= 0:
            t = self.toks[j].text
            if t in _CLOSE:
                depth += 1
            elif t in _OPEN:
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and (t in (";", ",", "?", ":", "return") or _is_assignment(t)):
                break
            j -= 1
        return j + 1

    def ternary_branches(self, q: int) -> tuple[int, int, int, int] | None:
        """(first, last) token indices of the two branches of the ternary whose `?` is at q."""
        colon = end = None
        for phase in ("then", "else"):
            depth, nested, j = 0, 0, (q if phase == "then" else colon) + 1
            while j < len(self.toks):
                t = self.toks[j].text
                if t in _OPEN:
                    depth += 1
                elif t in _CLOSE:
                    if depth == 0:
                        break
                    depth -= 1
                elif depth == 0 and t == "?":
                    nested += 1
                elif depth == 0 and t == ":" and nested:
                    nested -= 1
                elif depth == 0 and (t in (":", ";", ",") or (phase == "else" and _is_assignment(t))):
                    break
                j += 1
            if phase == "then":
                if self.text(j) != ":":
                    return None
                colon = j
            else:
                end = j - 1
        if colon == q + 1 or end < colon + 1:
            return None
        return q + 1, colon - 1, colon + 1, end

    def ceil_divisions(self) -> Iterator[tuple[int, int, int]]:
        """(open, close, a) per `(x + K - 1) / K`: the group's brackets and the index of K's first token."""
        for i in self.at_body("("):
            before = self.text(i - 1)
            if _IDENT.fullmatch(before) and before != "return":
                continue  # a call's arguments
            close = _match(self.toks, i)
            inner = self.toks[i + 1:close]
            if len(inner) < 5 or [t.text for t in inner[-2:]] != ["-", "1"] or self.text(close + 1) != "/":
                continue
            a = _operand_back(inner, len(inner) - 3)
            divisor = self.toks[close + 2:_operand_fwd(self.toks, close + 2) + 1]
            if a >= 2 and inner[a - 1].text == "+" and [t.text for t in inner[a:-2]] == [t.text for t in divisor]:
                yield i, close, i + 1 + a

    def call_arguments(self, open_: int) -> list[tuple[int, int]]:
        """(first, last) token indices of each argument of the call whose `(` is at open_."""
        close, depth, first, args = _match(self.toks, open_), 0, open_ + 1, []
        for j in range(open_ + 1, close):
            depth += (self.toks[j].text in _OPEN) - (self.toks[j].text in _CLOSE)
            if depth == 0 and self.toks[j].text == ",":
                args.append((first, j - 1))
                first = j + 1
        return args + [(first, close - 1)] if close > open_ + 1 else []


Edit = tuple[int, int, str, str]  # (start, end, replacement, description)


def relational_boundary(c: _Code) -> Iterator[Edit]:
    """`<` <-> `<=` and `>` <-> `>=` in a condition."""
    for k, where in c.conditions():
        old = c.toks[k].text
        if old in _BOUNDARY:
            yield c.edit(k, k, _BOUNDARY[old], f"`{old}` -> `{_BOUNDARY[old]}` in {where}")


def relational_negation(c: _Code) -> Iterator[Edit]:
    """A comparison in a condition negated: `<` -> `>=`, `>` -> `<=`, `==` <-> `!=` ..."""
    for k, where in c.conditions():
        old = c.toks[k].text
        yield c.edit(k, k, _NEGATION[old], f"`{old}` -> `{_NEGATION[old]}` in {where}")


def guard_deletion(c: _Code) -> Iterator[Edit]:
    """A one-line `if` without `else` (`if (i >= n) return;`, `if (...) { ... }`) deleted whole."""
    for k in c.at_body("if"):
        j = k + 1 + (c.text(k + 1) == "constexpr")
        if c.text(k - 1) == "else" or c.text(j) != "(":
            continue
        end = _statement_end(c.toks, _match(c.toks, j) + 1)
        if c.text(end + 1) != "else" and c.toks[end].line == c.toks[k].line:
            yield c.edit(k, end, c.deleted(k), f"delete the guard `{c.span(k, end)}` at line {c.toks[k].line}")


def ceil_division(c: _Code) -> Iterator[Edit]:
    """`(x + K - 1) / K` -> `x / K` and -> `(x + K) / K`."""
    for i, close, a in c.ceil_divisions():
        divisor = c.span(close + 2, _operand_fwd(c.toks, close + 2))
        x = c.span(i + 1, a - 2)
        floor = x if _operand_back(c.toks, a - 2) == i + 1 else f"({x})"
        over = c.source[c.toks[i].start:c.toks[close - 3].end] + ")"
        for new in (floor, over):
            yield c.edit(i, close, new, f"ceil division `{c.span(i, close)} / {divisor}` -> `{new} / {divisor}` "
                         f"at line {c.toks[i].line}")


def arithmetic_swap(c: _Code) -> Iterator[Edit]:
    """A binary `+` <-> `-`, `*` -> `/`, `/` -> `*`, `%` -> `/`, `<<` <-> `>>` (compound assignments too)."""
    for k in c.at_body(*_ARITHMETIC):
        if c.operand_end(k - 1) and k not in c.templates:
            old = c.toks[k].text
            yield c.edit(k, k, _ARITHMETIC[old], f"`{old}` -> `{_ARITHMETIC[old]}` at line {c.toks[k].line}")


def constant_off_by_one(c: _Code) -> Iterator[Edit]:
    """An integer literal N -> N + 1 and N - 1 (not a declared array size, not a ceil division's `- 1`)."""
    ceil_ones = {close - 1 for _, close, _ in c.ceil_divisions()}
    for k in c.body:
        match = _INTEGER.fullmatch(c.toks[k].text)
        if not match or k in ceil_ones or k in c.declared:
            continue
        number, suffix = match.groups()
        hexadecimal = number[:2] in ("0x", "0X")
        for value in (int(number, 0) + 1, int(number, 0) - 1):
            if value < 0:
                new = f"-1{suffix}" if c.text(k - 1) not in ("+", "-") else f"(-1{suffix})"
            elif hexadecimal:
                digits = f"{value:X}" if number[2:].upper() == number[2:] else f"{value:x}"
                new = f"{number[:2]}{digits}{suffix}"
            else:
                new = f"{value}{suffix}"
            yield c.edit(k, k, new, f"`{c.toks[k].text}` -> `{new}` at line {c.toks[k].line}")


def index_off_by_one(c: _Code) -> Iterator[Edit]:
    """A subscript `a[i]` -> `a[i + 1]` and `a[i - 1]`."""
    for k in c.at_body("["):
        close = _match(c.toks, k)
        if k in c.declared or not c.operand_end(k - 1) or close == k + 1:
            continue
        if close == k + 2 and _INTEGER.fullmatch(c.toks[k + 1].text):
            continue  # `a[0]`: CONSTANT_OFF_BY_ONE gives `a[1]` and `a[-1]`
        depth, loose = 0, False
        for t in c.toks[k + 1:close]:
            depth += (t.text in _OPEN) - (t.text in _CLOSE)
            loose |= depth == 0 and not _IDENT.fullmatch(t.text) and not re.match(r"\.?\d", t.text) \
                and t.text not in _TIGHT and t.text not in _OPEN + _CLOSE
        index = c.span(k + 1, close - 1)
        array = c.span(_operand_back(c.toks, k - 1), k - 1)
        for sign in ("+", "-"):
            new = f"({index}) {sign} 1" if loose else f"{index} {sign} 1"
            yield c.edit(k + 1, close - 1, new, f"subscript `{array}[{index}]` -> `{array}[{new}]` at line "
                         f"{c.toks[k].line}")


def ternary_swap(c: _Code) -> Iterator[Edit]:
    """`c ? a : b` -> `c ? b : a`."""
    for q in c.at_body("?"):
        branches = c.ternary_branches(q)
        if branches:
            a0, a1, b0, b1 = branches
            s = c.source
            new = s[c.toks[b0].start:c.toks[b1].end] + s[c.toks[a1].end:c.toks[b0].start] + \
                s[c.toks[a0].start:c.toks[a1].end]
            yield c.edit(a0, b1, new, f"swap the branches of `{c.span(c.ternary_condition(q), b1)}` at line "
                         f"{c.toks[q].line}")


def sync_deletion(c: _Code) -> Iterator[Edit]:
    """One `__syncthreads();` deleted."""
    for k in c.at_body("__syncthreads"):
        if [c.text(k + 1), c.text(k + 2), c.text(k + 3)] == ["(", ")", ";"]:
            line = c.toks[k].line
            label = f" (// {c.comments[line]})" if c.comments.get(line) else ""
            yield c.edit(k, k + 3, c.deleted(k), f"delete `__syncthreads();`{label} at line {line}")


def atomic_to_plain(c: _Code) -> Iterator[Edit]:
    """An atomic read-modify-write (atomicAdd, atomicCAS ...) made a plain, non-atomic one."""
    for k in c.body:
        match = _ATOMIC.fullmatch(c.toks[k].text)
        if not match or c.text(k + 1) != "(":
            continue
        kind, close = match.group(1), _match(c.toks, k + 1)
        args = [f"({c.span(a, b)})" for a, b in c.call_arguments(k + 1)]
        if len(args) != (3 if kind == "CAS" else 2):
            continue
        p, v = f"*{args[0]}", args[-1]
        alone = c.text(close + 1) == ";" and (c.text(k - 1) in (";", "{", "}", "") or c.controlled(k))

        def new_value(old: str) -> str:
            if kind == "CAS":
                return f"{old} == {args[1]} ? {v} : {old}"
            if kind in ("Min", "Max"):
                return f"{kind.lower()}({old}, {v})"
            return v if kind == "Exch" else f"{old} {_COMPOUND[kind][0]} {v}"

        if alone:
            new = f"({p} {_COMPOUND[kind]} {v})" if kind in _COMPOUND else f"({p} = {new_value(p)})"
        else:
            new = f"([&]() {{ auto mutant_old = {p}; {p} = {new_value('mutant_old')}; return mutant_old; }}())"
        yield c.edit(k, close, new, f"`{c.span(k, close)}` -> a plain, non-atomic read-modify-write at line "
                     f"{c.toks[k].line}")


def thread_block_swap(c: _Code) -> Iterator[Edit]:
    """`threadIdx.x` <-> `blockIdx.x` (and .y, .z)."""
    for k in c.at_body(*_SWAP_INDEX):
        if c.text(k + 1) == "." and c.text(k + 2) in ("x", "y", "z") and c.text(k - 1) not in (".", "->"):
            old, new = c.toks[k].text, _SWAP_INDEX[c.toks[k].text]
            yield c.edit(k, k, new, f"`{old}.{c.text(k + 2)}` -> `{new}.{c.text(k + 2)}` at line {c.toks[k].line}")


def narrow_long_long(c: _Code) -> Iterator[Edit]:
    """A `long long` local declaration or cast -> `int`."""
    for k in c.at_body("long"):
        if c.text(k + 1) != "long" or c.text(k - 1) == "long":
            continue
        last = k + 1 + (c.text(k + 2) == "int")
        first_word = k - (c.text(k - 1) in ("unsigned", "signed"))
        if c.text(last + 1) in ("*", "&"):
            continue  # `(long long*)p` is the type of the data, not of an index
        if c.text(first_word - 1) == "(" and c.text(last + 1) == ")":
            if c.text(last + 2) in c.pointers and c.text(last + 3) not in (".", "->", "[", "("):
                continue  # `(unsigned long long)slot` of a pointer: `(unsigned int)slot` does not compile
            what = f"the cast `({c.span(first_word, last)})`"
        else:
            name = next((c.text(j) for j in range(last + 1, min(last + 6, len(c.toks)))
                         if _IDENT.fullmatch(c.text(j)) and c.text(j) not in c.types), "?")
            what = f"the declaration of `{name}`"
        yield c.edit(k, last, "int", f"`{c.span(k, last)}` -> `int` in {what} at line {c.toks[k].line}")


def cas_bound(c: _Code) -> Iterator[Edit]:
    """The bound of a CAS loop's condition (`tries < MAX_CAS_TRIES`) -> `1` and -> `0`."""
    for k in c.at_body("for", "while"):
        if c.text(k + 1) != "(":
            continue
        close = _match(c.toks, k + 1)
        opening = _match(c.toks, k - 1, -1) if c.text(k - 1) == "}" else -1
        if c.text(opening - 1) == "do":
            body = c.toks[opening:k]  # `do { ... } while (...)`: the body lies before the condition
        else:
            body = c.toks[close + 1:_statement_end(c.toks, close + 1) + 1]
        if not any(t.text == "atomicCAS" for t in body):
            continue
        if c.toks[k].text == "for":
            semis = [j for j in range(k + 2, close) if c.toks[j].text == ";" and _depth(c, k + 1, j) == 1]
            if len(semis) != 2:
                continue
            first, last = semis[0] + 1, semis[1] - 1
        else:
            first, last = k + 2, close - 1
        parts = [j for j in range(first, last + 1) if c.toks[j].text in ("&&", "||") and _depth(c, first, j) == 0]
        for lo, hi in zip([first] + [j + 1 for j in parts], [j - 1 for j in parts] + [last]):
            ops = [j for j in range(lo, hi + 1) if c.toks[j].text in _BOUNDARY and _depth(c, lo, j) == 0]
            if len(ops) != 1:
                continue
            op = ops[0]
            bound = (op + 1, hi) if c.toks[op].text in ("<", "<=") else (lo, op - 1)
            if bound[0] > bound[1]:
                continue
            for new in ("1", "0"):
                yield c.edit(*bound, new, f"CAS loop bound `{c.span(*bound)}` -> `{new}` in the condition of the "
                             f"`{c.toks[k].text}` at line {c.toks[k].line}")


def _depth(c: _Code, first: int, j: int) -> int:
    """Bracket depth at token j counted from token first (exclusive of j's own bracket)."""
    return sum((t.text in _OPEN) - (t.text in _CLOSE) for t in c.toks[first:j])


OPERATORS: dict[Operator, Callable[[_Code], Iterator[Edit]]] = {
    Operator.RELATIONAL_BOUNDARY: relational_boundary,
    Operator.RELATIONAL_NEGATION: relational_negation,
    Operator.GUARD_DELETION: guard_deletion,
    Operator.CEIL_DIVISION: ceil_division,
    Operator.ARITHMETIC_SWAP: arithmetic_swap,
    Operator.CONSTANT_OFF_BY_ONE: constant_off_by_one,
    Operator.INDEX_OFF_BY_ONE: index_off_by_one,
    Operator.TERNARY_SWAP: ternary_swap,
    Operator.SYNC_DELETION: sync_deletion,
    Operator.ATOMIC_TO_PLAIN: atomic_to_plain,
    Operator.THREAD_BLOCK_SWAP: thread_block_swap,
    Operator.NARROW_LONG_LONG: narrow_long_long,
    Operator.CAS_BOUND: cas_bound,
}


def _place(source: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    return source.count("\n", 0, offset) + 1, offset - (source.rfind("\n", 0, offset) + 1) + 1


def generate(source: str, substrate: str) -> list[Mutant]:
    """Every mutant of the source, in source order then operator order; ids unique."""
    code, order, made = _Code(source), list(Operator), []
    counts: dict[tuple[int, int, Operator], int] = {}
    for operator, generator in OPERATORS.items():
        for start, end, replacement, description in generator(code):
            original = source[start:end]
            if replacement == original:
                continue
            line, column = _place(source, start)
            n = counts[line, column, operator] = counts.get((line, column, operator), -1) + 1
            made.append(Mutant(f"{substrate}:L{line}C{column}:{operator.value}:{n}", substrate, operator, line,
                               column, start, end, original, replacement, description))
    made.sort(key=lambda m: (m.start, order.index(m.operator)))
    seen, mutants = set(), []
    for mutant in made:
        mutated = mutant.apply(source)
        if mutated not in seen and mutated != source:
            seen.add(mutated)
            mutants.append(mutant)
    assert len({m.id for m in mutants}) == len(mutants), "mutant ids are not unique"
    return mutants
