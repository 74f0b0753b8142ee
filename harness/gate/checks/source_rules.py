"""Static checks of a candidate's CUDA source against the spec's CUDA-source rules.

The spec asks for device-only source, shaped so that mutation sites stay visible. These checks
read the source as text (no compiler, no torch), so they run before anything is compiled and
point at the line to change. They are heuristics: each flags exactly what is listed here.

How the source is read: comments and string/char literals are blanked to spaces first, so line
and column numbers stay right (only labelled_syncs reads the raw `//` comments). Preprocessor
lines, with their `\\` continuations, are not code: `#include` lines feed includes, and
`#define NAME <number>` makes NAME a literal for wide_indices. The code is then cut into tokens.

- device_only: at namespace scope (brace depth 0; `extern "C" {}` and `namespace {}` blocks are
  see-through), a function definition whose specifiers hold neither `__global__` nor
  `__device__`; a member function defined without `__device__`; a definition of `main`; any
  `__host__`; any `<<<`; a variable that is not `__device__`, `__constant__` or `__shared__`,
  unless it is a `const`/`constexpr` of arithmetic type. typedef, using, struct/class/union/enum
  declarations, data members, prototypes, and `template <...>`, `static`, `inline`,
  `__forceinline__`, `extern "C"` are fine.
- includes: an `#include` of anything but cuda_fp16.h, cuda_bf16.h, math_constants.h (<> or "").
- kernel_is_global: `kernel_name` (less any `ns::` and `<...>`) has no function definition, or
  one without `__global__`.
- wide_indices: within a function, a variable declared with a 32-bit-or-narrower integer type
  (spelled with int, short, signed, unsigned, int32_t or uint32_t, and no long or char) whose
  initializer, or a later `=`, `+=` or `-=` to it, holds a chain of `*` factors in which one
  factor mentions blockIdx and another is not a literal; or one mentions gridDim and another
  blockDim (the grid-stride step); or one mentions a variable derived from blockIdx (assigned
  an expression mentioning blockIdx or such a variable, transitively) and another is not a
  literal. Literals: numbers, `#define`d numbers, const/constexpr variables set from literals.
  Subscripts (`p[...]`) are data, not index terms. A cast inside does not save an int variable.
  One report per variable and line.
- one_line_guards: an `if` with no `else` whose condition holds `<`, `<=`, `>` or `>=` (not
  `<<`, `>>`, `->`) is a bounds guard; the `if`, its condition and its body (one statement or a
  `{}` block) must start and end on one line. `else`/`else if` chains and `==`/`!=` are branches.
- ceil_division: `(E + C1) / C2` with integer literals C1 == C2 - 1; `(E + A - 1) / B` with A, B
  spelled differently; `(E + (K - 1)) / K`; `(E - 1) / K + 1`; `E / K + (...)` where the
  parenthesised term holds `%` and one of `!=`, `>`, `?`; `(E + K - 1) >> s`; `(E + C) >> s`
  with C == 2**s - 1. The canonical `(E + K - 1) / K` (K a literal, identifier, member such as
  blockDim.x, or a parenthesised expression) is fine, and so is a call divided (`f(n + 255) / 256`).
  Preprocessor lines are not read.
- labelled_syncs: when the code calls `__syncthreads()` more than once, each line calling it
  needs a trailing `//` comment unlike every earlier one; two calls on one line are flagged.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import NamedTuple


class SourceRule(str, enum.Enum):
    """The spec's CUDA-source rules; violations on one line are reported in this order."""

    DEVICE_ONLY = "device_only"
    INCLUDES = "includes"
    KERNEL_IS_GLOBAL = "kernel_is_global"
    WIDE_INDICES = "wide_indices"
    ONE_LINE_GUARDS = "one_line_guards"
    CEIL_DIVISION = "ceil_division"
    LABELLED_SYNCS = "labelled_syncs"


RULE_SUMMARIES: dict[SourceRule, str] = {
    SourceRule.DEVICE_ONLY: "The source is device code only: no host functions, no __host__, no <<<...>>> launch, "
                            "no main, and namespace-scope variables are __device__, __constant__ or __shared__.",
    SourceRule.INCLUDES: "The only headers are cuda_fp16.h, cuda_bf16.h and math_constants.h.",
    SourceRule.KERNEL_IS_GLOBAL: "kernel_name names a __global__ function defined in the source.",
    SourceRule.WIDE_INDICES: "An index built from blockIdx times a non-literal, or a grid-stride step, is a long long.",
    SourceRule.ONE_LINE_GUARDS: "A bounds guard (an if without else comparing with <, <=, > or >=) sits on one line.",
    SourceRule.CEIL_DIVISION: "A ceil division is spelled (x + K - 1) / K.",
    SourceRule.LABELLED_SYNCS: "When __syncthreads() is called more than once, each call carries its own distinct "
                               "trailing // comment.",
}


@dataclass(frozen=True)
class SourceViolation:
    rule: SourceRule
    line: int     # 1-based line in the CUDA source; 0 when the violation has no single line
    text: str     # that source line, stripped ("" when line == 0)
    message: str  # what is wrong and how to spell it instead

    def describe(self) -> str:
        where = f" line {self.line}:" if self.line else ""
        return f"[{self.rule.value}]{where} {self.message}"


class _Tok(NamedTuple):
    text: str
    line: int


_TOKEN = re.compile(r"[A-Za-z_]\w*|\.?\d(?:[eEpP][+-]|[\w.])*|<<<|<<=|>>=|->|::|\+\+|--|&&|\|\|"
                    r"|[<>=!+\-*/%&|^]=|<<|>>|\S")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_INT_LITERAL = re.compile(r"(0[xX][0-9a-fA-F]+|\d+)[uUlL]*")
_OPEN, _CLOSE = ("(", "[", "{"), (")", "]", "}")
_ALLOWED_HEADERS = ("cuda_fp16.h", "cuda_bf16.h", "math_constants.h")
_ATTRIBUTES = {"__launch_bounds__", "__align__", "__attribute__", "__declspec", "alignas"}
_TYPE_KEYS = {"struct", "class", "union", "enum"}
_NARROW = {"int", "short", "signed", "unsigned", "int32_t", "uint32_t"}
_WIDE = {"long", "char", "int64_t", "uint64_t", "size_t"}
_QUALIFIERS = {"const", "constexpr", "volatile", "register", "static", "inline"}
_ARITHMETIC = _NARROW | _WIDE | _QUALIFIERS | {"bool", "float", "double", "int8_t", "uint8_t", "int16_t", "uint16_t"}
_RELATIONAL = {"<", "<=", ">", ">="}
_INT_WORDS = _NARROW | _WIDE | _QUALIFIERS
_SPLITS = {"+", "-", "/", "%", "<<", ">>", "&", "|", "^", "&&", "||", "?", ":", ";", ",", "!"} | _RELATIONAL


_LEXEMES = re.compile(r"""//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?""", re.S)


def _strip(cuda: str) -> tuple[str, str, dict[int, str]]:
    """(source without comments, source without comments or literals, `//` comment text per line)."""
    comments = {m.string.count("\n", 0, m.start()) + 1: m.group()[2:].strip()
                for m in _LEXEMES.finditer(cuda) if m.group().startswith("//")}
    plain = _LEXEMES.sub(lambda m: m.group() if m.group()[0] in "\"'" else _blank(m), cuda)
    return plain, _LEXEMES.sub(_blank, cuda), comments


def _blank(match: re.Match) -> str:
    return re.sub(r"[^\n]", " ", match.group())


def _tokenize(plain: str, code: str) -> tuple[list[tuple[int, str]], list[_Tok]]:
    """Preprocessor directives as (line, text), and the tokens of everything else."""
    plain_lines, directives, toks, continued = plain.split("\n"), [], [], False
    for number, text in enumerate(code.split("\n"), 1):
        if continued or text.lstrip().startswith("#"):
            if not continued:
                directives.append((number, plain_lines[number - 1].strip()))
            continued = text.rstrip().endswith("\\")
        else:
            toks += [_Tok(m.group(), number) for m in _TOKEN.finditer(text)]
    return directives, toks


def _match(toks: list[_Tok], i: int, step: int = 1) -> int:
    """Index of the bracket matching the one at i, looking forward (step 1) or back (step -1)."""
    depth, j = 0, i
    while 0 <= j < len(toks):
        depth += (toks[j].text in _OPEN) - (toks[j].text in _CLOSE)
        if depth == 0:
            return j
        j += step
    return min(max(j, 0), len(toks) - 1)


def _render(toks) -> str:
    text = " ".join(t.text for t in toks)
    for pattern, repl in ((r" ?(\.|->|::) ?", r"\1"), (r"([(\[]) ", r"\1"), (r" ([)\],])", r"\1"), (r"\) (?=\w)", ")")):
        text = re.sub(pattern, repl, text)
    return text


def _words(head: list[_Tok]) -> list[str]:
    """The head's token texts after any `template <...>` prefix."""
    words, depth = [t.text for t in head], 0
    for k, w in enumerate(words if words[:2] == ["template", "<"] else []):
        depth += (w == "<") - (w == ">") - 2 * (w == ">>")
        if k and depth <= 0:
            return words[k + 1:]
    return words


def _defines_type(words: list[str]) -> bool:
    kind = words[1:2] if words[:1] == ["typedef"] else words[:1]
    return bool(kind) and kind[0] in _TYPE_KEYS


def _declarations(toks: list[_Tok]):
    """(head, body) per declaration of a scope: body is the {} block of a definition, None after `;`.

    `extern "C" {` and `namespace x {` blocks are opened: what they hold belongs to this scope."""
    i, head = 0, []
    while i < len(toks):
        t, words = toks[i].text, [h.text for h in head]
        if t in ("(", "[") or (t == "{" and "=" in words):  # a group, or an `= {...}` initializer
            head, i = head + toks[i:_match(toks, i) + 1], _match(toks, i) + 1
        elif t == "{" and (words == ["extern"] or words[:1] == ["namespace"]):
            head, i = [], i + 1
        elif t == "{":
            j = _match(toks, i)
            yield head, toks[i + 1:j]
            while _defines_type(_words(head)) and j + 1 < len(toks) and toks[j].text != ";":
                j += 1  # `struct S {...} s;`: the tail belongs to the definition
            head, i = [], j + 1
        else:
            if t == ";" and head:
                yield head, None
            head, i = ([] if t in (";", "}") else head + [toks[i]]), i + 1


def _scope(toks, found, functions, member=False):
    """Check one scope's declarations for device_only; gather (name, kind, body, member) per function."""
    for head, body in _declarations(toks):
        words = _words(head)
        if _defines_type(words):
            _scope(body or [], found, functions, member=True)
            continue
        name = next((head[k - 1] for k, t in enumerate(head) if k and t.text == "(" and
                     _IDENT.fullmatch(head[k - 1].text) and head[k - 1].text not in _ATTRIBUTES), None)
        if body is not None and name is not None:
            kind = "global" if "__global__" in words else "device" if "__device__" in words else "host"
            functions.append((name, kind, body, member))
            if name.text == "main" and not member:
                found(SourceRule.DEVICE_ONLY, name.line, "defines `main`; a substrate is device code only: the "
                      "launch lives in the Python `launch`, which returns grid, block and arguments")
            elif kind == "host":
                found(SourceRule.DEVICE_ONLY, name.line, f"{'member function' if member else 'function'} "
                      f"`{name.text}` has neither `__global__` nor `__device__`, so it is host code; a substrate is "
                      "device code only: mark it `__device__` (host work belongs in the Python `launch`)")
            continue
        before = words[:next((k for k, w in enumerate(words) if w in ("=", "[", ",")), len(words))]  # type, name
        if member or body is not None or not before or "(" in before or words[0] in ("typedef", "using", "template",
                                                                                      "static_assert"):
            continue  # data members, prototypes, aliases: no storage of their own on the host
        if {"__device__", "__constant__", "__shared__"} & set(words) or (
                {"const", "constexpr"} & set(words) and set(before[:-1]) <= _ARITHMETIC):
            continue
        found(SourceRule.DEVICE_ONLY, head[0].line, f"namespace-scope variable `{before[-1]}` is host memory; declare "
              "it `__device__` or `__constant__` (or `constexpr` if it is a compile-time number)")


def _expression(toks: list[_Tok], k: int, stops=(";", ",")) -> list[_Tok]:
    """The tokens from k up to one of `stops` at depth 0, or an unbalanced closing bracket."""
    depth = 0
    for j in range(k, len(toks)):
        depth += (toks[j].text in _OPEN) - (toks[j].text in _CLOSE)
        if depth < 0 or (depth == 0 and toks[j].text in stops):
            return toks[k:j]
    return toks[k:]


def _names(expr: list[_Tok]) -> set[str]:
    """Identifiers of an expression, leaving out subscripted arrays and their subscripts (data, not indices)."""
    names, k = set(), 0
    while k < len(expr):
        if k + 1 < len(expr) and expr[k + 1].text == "[":
            k = _match(expr, k + 1)
        elif _IDENT.fullmatch(expr[k].text) and (k == 0 or expr[k - 1].text not in (".", "->")):
            names.add(expr[k].text)
        k += 1
    return names


def _chains(expr: list[_Tok]) -> list[list[list[_Tok]]]:
    """Every chain of `*` factors in the expression, inside parentheses too (innermost first), not in subscripts."""
    chains, factors, current, k = [], [], [], 0
    while k <= len(expr):
        t = expr[k].text if k < len(expr) else ";"
        if t in ("(", "["):
            j = _match(expr, k)
            chains += _chains(expr[k + 1:j]) if t == "(" else []  # a subscript's value is data
            current, k = current + expr[k:j + 1], j + 1
            continue
        if t == "*" and current and (_IDENT.fullmatch(current[-1].text) or current[-1].text[0].isdigit()
                                     or current[-1].text in (")", "]")):
            factors, current = factors + [current], []
        elif t in _SPLITS or t.endswith("="):
            chains += [factors + [current]] if factors and current else []
            factors, current = [], []
        else:
            current.append(expr[k])
        k += 1
    return chains


def _wide_reason(expr: list[_Tok], derived: set[str], literals: set[str]) -> str:
    """What makes this expression too wide for 32 bits, with the product in parentheses; "" if nothing."""
    for chain in _chains(expr):
        names, product = [_names(f) for f in chain], " * ".join(_render(f) for f in chain)
        for a, b in ((a, b) for a in range(len(chain)) for b in range(len(chain)) if a != b):
            variable = bool(names[b] - literals - _ARITHMETIC - {"sizeof"})
            if "blockIdx" in names[a] and variable:
                what = "a global thread index" if "blockDim" in names[b] else "a product of blockIdx"
                return f"{what} ({product})"
            if "gridDim" in names[a] and "blockDim" in names[b]:
                return f"the grid-stride step ({product})"
            if names[a] & derived and variable:
                return f"a product of a blockIdx-derived index ({product})"
    return ""


def _wide_indices(body: list[_Tok], literals: set[str], found) -> None:
    narrow, consts, derived, seen = {}, set(), set(), set()  # narrow: name -> its type, or None when wide
    for j, t in enumerate(body):
        if t.text in _INT_WORDS and (j == 0 or body[j - 1].text not in _INT_WORDS):
            k = j
            while k < len(body) and body[k].text in _INT_WORDS:
                k += 1
            run = {x.text for x in body[j:k]}
            spelled = " ".join(x.text for x in body[j:k]) if run & _NARROW and not run & _WIDE else None
            while run & (_NARROW | _WIDE) and k < len(body) and _IDENT.fullmatch(body[k].text):  # `int a = 1, b;`
                narrow[body[k].text] = spelled
                consts |= {body[k].text} if run & {"const", "constexpr"} else set()
                k += len(_expression(body, k)) + 1
                if _text(body, k - 1) != ",":
                    break
        elif _IDENT.fullmatch(t.text) and body[j + 1:j + 2] and body[j + 1].text in ("=", "+=", "-=") \
                and (j == 0 or body[j - 1].text not in (".", "->")):
            expr = _expression(body, j + 2)
            names, reason = _names(expr), _wide_reason(expr, derived, literals) if narrow.get(t.text) else ""
            if reason and (t.line, t.text) not in seen:
                seen.add((t.line, t.text))
                found(SourceRule.WIDE_INDICES, t.line, f"`{narrow[t.text]} {t.text}` holds {reason}; "
                      "declare it long long")
            if "blockIdx" in names or names & derived:
                derived.add(t.text)
            if t.text in consts and not names - literals - _ARITHMETIC:
                literals.add(t.text)


def _statement_end(toks: list[_Tok], k: int) -> int:
    """Index of the last token of the statement starting at k."""
    t = toks[k].text if k < len(toks) else ";"
    if t == "{":
        return _match(toks, k)
    if t in ("if", "for", "while", "switch"):
        k += 1 + (_text(toks, k + 1) == "constexpr")
        end = _statement_end(toks, _match(toks, k) + 1)
        return _statement_end(toks, end + 2) if t == "if" and _text(toks, end + 1) == "else" else end
    if t == "do":
        return min(_match(toks, _statement_end(toks, k + 1) + 2) + 1, len(toks) - 1)
    return min(k + len(_expression(toks, k, stops=(";",))), len(toks) - 1)  # the `;`


def _text(toks: list[_Tok], k: int) -> str:
    return toks[k].text if 0 <= k < len(toks) else ""


def _guards(body: list[_Tok], found) -> None:
    for j, t in enumerate(body):
        k = j + 1 + (_text(body, j + 1) == "constexpr")
        if t.text != "if" or _text(body, j - 1) == "else" or _text(body, k) != "(":
            continue
        close = _match(body, k)
        end = _statement_end(body, close + 1)
        relational = {x.text for x in body[k:close]} & _RELATIONAL
        if relational and _text(body, end + 1) != "else" and body[end].line != t.line:
            found(SourceRule.ONE_LINE_GUARDS, t.line, f"bounds guard spans lines {t.line}-{body[end].line}; keep "
                  "it on one line: `if (...) return;` or `if (...) { ... }`")


def _operand_back(toks: list[_Tok], k: int) -> int:
    """Start of the simple operand (name, member chain, call, subscript or group) ending at k."""
    while True:
        if toks[k].text in (")", "]"):
            k = _match(toks, k, -1)
            if k > 0 and _IDENT.fullmatch(toks[k - 1].text):
                k -= 1  # a call or a subscript: f(...), a[...]
        if k < 2 or toks[k - 1].text not in (".", "->"):
            return k
        k -= 2


def _operand_fwd(toks: list[_Tok], k: int) -> int:
    """End of the simple operand starting at k."""
    if _text(toks, k) == "(":
        return _match(toks, k)
    while _text(toks, k + 1) in (".", "->", "(", "["):
        k = k + 2 if _text(toks, k + 1) in (".", "->") else _match(toks, k + 1)
    return min(k, len(toks) - 1)


def _int(tok: _Tok) -> int | None:
    match = _INT_LITERAL.fullmatch(tok.text)
    return int(match.group(1), 0) if match and not re.fullmatch(r"0\d+", match.group(1)) else None


def _ceil_divisions(toks: list[_Tok], found) -> None:
    def flag(first, last, e, k):
        found(SourceRule.CEIL_DIVISION, toks[first].line, f"ceil division spelled `{_render(toks[first:last + 1])}`;"
              f" spell it `({_render(e)} + {_render(k)} - 1) / {_render(k)}`")

    for i, t in enumerate(toks):
        if t.text == "+" and _text(toks, i + 1) == "(" and i >= 3:  # E / K + (E % K != 0)
            close, k = _match(toks, i + 1), _operand_back(toks, i - 1)
            inner = {x.text for x in toks[i + 1:close]}
            if "%" in inner and inner & {"!=", ">", "?"} and _text(toks, k - 1) == "/" and k >= 2:
                e = _operand_back(toks, k - 2)
                flag(e, close, toks[e:k - 1], toks[k:i])
        if t.text != "(" or (_IDENT.fullmatch(_text(toks, i - 1)) and toks[i - 1].text != "return"):
            continue  # a call's arguments are not a dividend
        c = _match(toks, i)
        inner, op, d_end = toks[i + 1:c], _text(toks, c + 1), _operand_fwd(toks, c + 2)
        divisor = toks[c + 2:d_end + 1]
        if len(inner) < 3 or op not in ("/", ">>") or not divisor:
            continue
        if inner[-2].text == "+" and _int(inner[-1]) is not None and _int(divisor[0]) is not None:
            c1, c2 = _int(inner[-1]), _int(divisor[0])
            if op == "/" and c1 == c2 - 1 or op == ">>" and c1 == (1 << min(c2, 64)) - 1:  # (E + 255) / 256, >> 8
                flag(i, d_end, inner[:-2], divisor if op == "/" else [_Tok(str(c1 + 1), 0)])
        elif [x.text for x in inner[-2:]] == ["-", "1"]:
            a = _operand_back(inner, len(inner) - 3)
            if _text(inner, a - 1) == "+" and a >= 2:  # (E + A - 1) / B or >> s
                if op == ">>" or _render(inner[a:-2]) != _render(divisor):
                    flag(i, d_end, inner[:a - 1], divisor if op == "/" else inner[a:-2])
            elif op == "/" and [_text(toks, d_end + 1), _text(toks, d_end + 2)] == ["+", "1"] \
                    and _text(toks, d_end + 3) not in ("*", "/", "%", ".", "(", "["):
                flag(i, d_end + 2, inner[:-2], divisor)  # (E - 1) / K + 1
        elif inner[-1].text == ")" and op == "/":  # (E + (K - 1)) / K
            g = _match(inner, len(inner) - 1, -1)
            if g >= 2 and inner[g - 1].text == "+" and [x.text for x in inner[-3:-1]] == ["-", "1"]:
                flag(i, d_end, inner[:g - 1], divisor)


def _syncs(toks: list[_Tok], comments: dict[int, str], found) -> None:
    lines = [t.line for t in toks if t.text == "__syncthreads"]
    labels: dict[str, int] = {}
    for line in sorted(set(lines)) if len(lines) > 1 else []:
        label = comments.get(line, "")
        if lines.count(line) > 1:
            found(SourceRule.LABELLED_SYNCS, line, f"{lines.count(line)} `__syncthreads()` on one line; put each "
                  "on its own line with its own trailing label")
        elif not label:
            found(SourceRule.LABELLED_SYNCS, line, "repeated `__syncthreads();` without a label; add a distinct "
                  "trailing comment, e.g. `__syncthreads(); // sync-after-load`")
        elif label in labels:
            found(SourceRule.LABELLED_SYNCS, line, f"shares the label `// {label}` with line {labels[label]}; "
                  "give each barrier its own label")
        labels.setdefault(label, line)


def _includes(directives: list[tuple[int, str]], found) -> None:
    for line, text in directives:
        header = re.match(r'#\s*include\b\s*(?:[<"]\s*([^>"]*?)\s*[>"])?', text)
        if not header or header.group(1) in _ALLOWED_HEADERS:
            continue
        if (header.group(1) or "").split("/")[0] in ("torch", "ATen", "c10", "torch.h"):
            found(SourceRule.INCLUDES, line, f"`{text}` is a host (PyTorch) header; host headers cannot be in a "
                  "substrate, which NVRTC compiles alone as device code: drop it")
        else:
            found(SourceRule.INCLUDES, line, f"`{text}` is not allowed; a substrate may include only "
                  "<cuda_fp16.h>, <cuda_bf16.h> and <math_constants.h>")


def check_source(cuda: str, kernel_name: str) -> list[SourceViolation]:
    """Every violation, in line order; [] when the source follows every rule."""
    raw_lines, violations = cuda.split("\n"), []
    plain, code, comments = _strip(cuda)
    directives, toks = _tokenize(plain, code)

    def found(rule: SourceRule, line: int, message: str) -> None:
        text = raw_lines[line - 1].strip() if 0 < line <= len(raw_lines) else ""
        violations.append(SourceViolation(rule, line, text, message))

    for t in toks:
        if t.text == "__host__":
            found(SourceRule.DEVICE_ONLY, t.line, "`__host__` makes host code; a substrate is device code only: "
                  "drop `__host__` (keep `__device__`)")
        elif t.text == "<<<":
            found(SourceRule.DEVICE_ONLY, t.line, "kernel launch `<<<...>>>` in the source; launches belong in the "
                  "Python `launch`, which returns grid and block")
    functions: list = []
    _scope(toks, found, functions)
    _includes(directives, found)
    wanted = kernel_name.split("<")[0].split("::")[-1].strip()  # `ns::k<float>` is defined as `k`
    kernels = [(name, kind) for name, kind, _, member in functions if name.text == wanted and not member]
    if not kernels:
        found(SourceRule.KERNEL_IS_GLOBAL, 0, f"`{kernel_name}` is not defined in the source; kernel_name must name "
              f"a `__global__` function defined there, e.g. `extern \"C\" __global__ void {kernel_name}(...)`")
    elif all(kind != "global" for _, kind in kernels):
        name, kind = kernels[0]
        what = "`__device__`" if kind == "device" else "host"
        found(SourceRule.KERNEL_IS_GLOBAL, name.line, f"`{kernel_name}` is a {what} function, not a kernel; declare "
              f"it `extern \"C\" __global__ void {kernel_name}(...)`")
    defines = (re.match(r"#\s*define\s+(\w+)\s+\(?\s*\d[\w.]*\s*\)?\s*$", text) for _, text in directives)
    literals = {m.group(1) for m in defines if m}  # `#define TILE 32`: TILE is a literal
    for _, _, body, _ in functions:
        _wide_indices(body, set(literals), found)
        _guards(body, found)
    _ceil_divisions(toks, found)
    _syncs(toks, comments, found)
    return sorted(violations, key=lambda v: (v.line, list(SourceRule).index(v.rule)))
