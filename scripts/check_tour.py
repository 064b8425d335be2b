#!/usr/bin/env python3
"""Checks that the reading guides in docs/ point at code that exists.

    python3 scripts/check_tour.py ROOT [DOC ...]       docs/tour.md and docs/writing_an_op.md by default
    python3 scripts/check_tour.py --self-test ROOT     the checker's own cases first, then the docs

Standard library only. Prints one line per broken reference and exits 1 if there is any.

A reference is an inline code span that names a file and something in it:

    `autograd/tape.cpp: Tape::record`                 a function, type, member, enumerator, ...
    `autograd/tape.cpp: Tape::record, lines 98–125`   the same, read from those lines
    `core/tensor.h: class Tensor`                     a type definition (class, struct, enum, union)
    `tests/test_tape.cpp: "the tape prints"`          text written in the file (a test's name)
    `autograd/matmul.cpp: header comment`             the comment that opens the file

Paths are relative to ROOT. A reference is broken when its file does not exist; when the
symbol is not defined or declared there (C++: a type, a function or constructor, a qualified
`Class::member` definition, a member declared in the class body, an enumerator, a variable, a
macro; Python: def or class; Markdown: a heading); or when a line range does not hold it: the
range must hold the whole definition (to its `;` or closing brace) and may begin above it only
with blank, comment or template<...> lines, so a definition that moved either way is caught.
Quoted text needs only to lie inside its range. Besides references:

  - every other code span that is a path (`core/tensor.h`, `train/trainer.*`,
    `../shared/PAPER.md`, `autograd/`) must exist (a glob may match); `build/...` is skipped,
    and so is `../shared/...` when there is no ../shared beside ROOT (a fresh clone), with a note;
  - a code span that is a qualified name (`Tape::backward`, `NormOptions::impl`) must be
    defined somewhere in the source folders;
  - a line number outside a reference ("lines 17–19", "(81–85)", "line 46") is an error: it
    names no symbol, so nothing could tell when it went stale;
  - a fenced code block whose info string reads `LANG from PATH` (```cpp from examples/x.cpp)
    must appear in PATH verbatim, as consecutive lines (trailing spaces ignored).
"""
import glob
import os
import re
import sys
import tempfile

DEFAULT_DOCS = ["docs/tour.md", "docs/writing_an_op.md", "docs/training.md"]

PATH = r"(?:\.\./)*[\w.+-]+(?:/[\w.+*-]+)*\.\w+"
REFERENCE = re.compile(r"^(?P<path>" + PATH + r"):\s+(?P<what>.+?)"
                       r"(?:[,;]?\s*\(?\s*lines?\s+(?P<first>\d+)(?:\s*[–—-]\s*(?P<last>\d+))?\s*\)?)?$")
BARE_LINE = re.compile(r"^(?P<path>" + PATH + r"):\d+")            # `core/tensor.cpp:17`
PATHLIKE = re.compile(r"^(?:\.\./)*[\w.+-]+(?:/[\w.+*-]*)+$")
LOOSE_LINES = re.compile(r"\b[Ll]ines?\s+\d+(?:\s*[–—-]\s*\d+)?|\(\d+\s*[–—-]\s*\d+\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
QUALIFIED = re.compile(r"^((?:[A-Z]\w*::)+~?[A-Za-z_]\w*)(?:\(.*\))?$")  # `Tape::backward(output, seed)`
SOURCE_FOLDERS = ["core", "autograd", "data", "layers", "optim", "dist", "models", "train", "experiments", "bench",
                  "tests", "examples", "fuzz"]
FENCE = re.compile(r"^\s*(```+|~~~+)\s*(.*)$")
NOT_A_TYPE = {"return", "throw", "new", "delete", "else", "case", "goto", "do", "co_return", "co_await",
              "co_yield", "sizeof", "if", "while", "for", "switch"}
TYPEISH_PREFIX = re.compile(r"^[\w\s:<>,*&~\[\]]*$")
TRIPLE_QUOTES = ('"' * 3, "'" * 3)


# ---------------------------------------------------------------- source files

def strip_cpp(text):
    """The text with comments and string/char literals blanked out, line structure kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000
                out.append(c)
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Source:
    """One file of the tree. Every finder returns extents: (first line, last line), 1-based."""

    def __init__(self, path):
        with open(path, encoding="utf-8", errors="replace") as f:
            self.raw = f.read()
        self.lines = self.raw.split("\n")
        self.ext = os.path.splitext(path)[1]
        self.cpp = self.ext in (".h", ".hpp", ".cpp", ".cc", ".cxx", ".c")
        self.code = strip_cpp(self.raw) if self.cpp else self.raw
        self.line_starts = [0]
        for line in self.lines:
            self.line_starts.append(self.line_starts[-1] + len(line) + 1)

    def line_of(self, offset):
        lo, hi = 0, len(self.line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    # -- C++ ----------------------------------------------------------------

    def closing_brace(self, start):
        depth = 0
        for j in range(start, len(self.code)):
            if self.code[j] == "{":
                depth += 1
            elif self.code[j] == "}":
                depth -= 1
                if depth == 0:
                    return j
        return len(self.code) - 1

    def extent_from(self, offset):
        """The declaration or definition that starts at `offset`: to its `;` or its body's `}`."""
        parens = 0
        for j in range(offset, len(self.code)):
            c = self.code[j]
            if c in "([":
                parens += 1
            elif c in ")]":
                parens -= 1
            elif parens == 0 and c == ";":
                return self.line_of(offset), self.line_of(j)
            elif parens == 0 and c == "{":
                k = self.closing_brace(j)
                after = re.match(r"\s*;", self.code[k + 1:])
                return self.line_of(offset), self.line_of(k + after.end() if after else k)
            elif parens == 0 and c == "}":  # the end of an enclosing body
                return self.line_of(offset), self.line_of(j)
        return self.line_of(offset), len(self.lines)

    def type_bodies(self, name):
        """(extent, body start, body end, keyword) of each definition of the type or namespace `name`."""
        found = []
        pattern = re.compile(r"\b(class|struct|union|enum(?:\s+class|\s+struct)?|namespace)\s+"
                             r"(?:alignas\([^)]*\)\s+)?" + re.escape(name) + r"\b")
        for m in pattern.finditer(self.code):
            head = re.match(r"[^;{]*", self.code[m.end():]).group(0)
            brace = m.end() + len(head)
            if brace >= len(self.code) or self.code[brace] != "{":
                continue  # a forward declaration, or `struct X x;`
            line_start = self.line_starts[self.line_of(m.start()) - 1]
            found.append((self.extent_from(line_start), brace + 1, self.closing_brace(brace), m.group(1)))
        return found

    def declarations(self, name, lo=0, hi=None, constructor=False):
        """Extents in code[lo:hi] that declare or define `name` (function, variable, member, macro)."""
        hi = len(self.code) if hi is None else hi
        found = []
        pattern = re.compile(r"(?<![\w:.>~])(~?" + re.escape(name) + r")\s*(\(|=(?!=)|;|\{|\[)")
        for m in pattern.finditer(self.code, lo, hi):
            line_start = self.line_starts[self.line_of(m.start()) - 1]
            if self.typeish(self.code[line_start:m.start()], m.group(2), constructor):
                found.append(self.extent_from(max(line_start, lo)))
        for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+" + re.escape(name) + r"\b", self.code[lo:hi], re.M):
            line = end = self.line_of(lo + m.start())
            while end < len(self.lines) and self.lines[end - 1].rstrip().endswith("\\"):
                end += 1
            found.append((line, end))
        for m in re.finditer(r"\busing\s+" + re.escape(name) + r"\s*=", self.code[lo:hi]):
            found.append(self.extent_from(lo + m.start()))
        return found

    @staticmethod
    def typeish(prefix, follower, constructor):
        """Is `<prefix>name<follower>` a declaration (a type before the name) and not a use?"""
        stripped = prefix.strip()
        if not stripped:
            # `name(` alone on a line: a constructor in its class or, unindented, a definition
            # whose return type is on the line above. A call would sit indented in a body.
            return follower == "(" and (constructor or prefix == "")
        if not TYPEISH_PREFIX.match(prefix):
            return False
        words = re.findall(r"[A-Za-z_]\w*", stripped)
        if not words or any(w in NOT_A_TYPE for w in words):
            return False
        return bool(re.search(r"[\w>*&\]]\s*$", prefix))

    def find_cpp(self, parts, kind):
        name, scope = parts[-1], parts[:-1]
        if kind:  # `class X`, `struct X`, `enum X`: type definitions only
            return [ext for ext, *_ in self.type_bodies(name)]
        if not scope:
            return [ext for ext, *_ in self.type_bodies(name)] + self.declarations(name)
        found = []
        # A qualified definition: `Tensor Tensor::clone() const {`, `GRUCell::GRUCell(...)`.
        pattern = re.compile(r"(?<![\w:])" + re.escape("::".join(parts)) + r"\s*(\(|=(?!=)|\{|;|\[)")
        for m in pattern.finditer(self.code):
            line_start = self.line_starts[self.line_of(m.start()) - 1]
            if self.typeish(self.code[line_start:m.start()], m.group(1), False):
                found.append(self.extent_from(line_start))
        # In the scope's body: a member, a method declared or defined there, an enumerator.
        bodies = [(0, len(self.code), None)]
        for outer in scope:
            bodies = [(start, end, k) for lo, hi, _ in bodies
                      for _ext, start, end, k in self.type_bodies(outer) if lo <= start <= hi]
        for start, end, k in bodies:
            if k and k.startswith("enum"):
                for m in re.finditer(r"\b" + re.escape(name) + r"\b", self.code[start:end]):
                    line = self.line_of(start + m.start())
                    found.append((line, line))
                continue
            found += [ext for ext, s, *_ in self.type_bodies(name) if start <= s <= end]
            found += self.declarations(name, start, end, constructor=name in (scope[-1], "~" + scope[-1]))
        return found

    # -- any file ----------------------------------------------------------------

    def find(self, symbol):
        """Extents of `symbol`; None when it is not a name, a "quoted text" or 'header comment'."""
        quoted = re.fullmatch(r'"(.+)"', symbol)
        if quoted:
            return [(self.line_of(m.start()), self.line_of(m.end() - 1))
                    for m in re.finditer(re.escape(quoted.group(1)), self.raw)]
        if symbol == "header comment":
            return self.header_comment()
        kind = None
        m = re.fullmatch(r"(class|struct|union|enum(?:\s+class)?|namespace)\s+(.+)", symbol)
        if m:
            kind, symbol = m.group(1), m.group(2)
        symbol = re.sub(r"\(\)$", "", symbol.strip())
        parts = re.split(r"::|\.", symbol)
        if not all(re.fullmatch(r"~?[A-Za-z_]\w*", p) for p in parts):
            return None
        if self.cpp:
            return sorted(set(self.find_cpp(parts, kind)))
        name = parts[-1]
        found = []
        for i, line in enumerate(self.lines):
            if self.ext == ".py":
                m = re.match(r"(\s*)(?:async\s+)?(?:def|class)\s+" + re.escape(name) + r"\b", line)
                if m:
                    found.append((i + 1, self.python_block_end(i, len(m.group(1)))))
                elif re.match(re.escape(name) + r"\s*=", line):
                    found.append((i + 1, i + 1))
            elif self.ext == ".md":
                if line.startswith("#") and symbol in line:
                    found.append((i + 1, i + 1))
            elif self.ext in (".sh", ".bash"):
                if re.match(r"\s*(?:function\s+)?" + re.escape(name) + r"\s*\(\)", line):
                    found.append((i + 1, i + 1))
            elif self.ext in (".txt", ".cmake"):
                if re.match(r"\s*(?:function|macro)\s*\(\s*" + re.escape(name) + r"\b", line, re.I):
                    found.append((i + 1, i + 1))
        return found

    def python_block_end(self, i, indent):
        end = i + 1
        for j in range(i + 1, len(self.lines)):
            text = self.lines[j]
            if text.strip():
                if len(text) - len(text.lstrip()) <= indent:
                    break
                end = j + 1
        return end

    def comment_line(self, n):  # 1-based
        s = self.lines[n - 1].strip()
        if self.cpp:
            return s.startswith(("//", "/*", "*"))
        return s.startswith("#")

    def lead_in(self, first, last):
        """May lines first..last stand above a definition: blank, comment, template<...>?"""
        for n in range(first, last + 1):
            s = self.lines[n - 1].strip()
            if s and not self.comment_line(n) and not (self.cpp and re.match(r"template\s*<|\[\[|#pragma once", s)):
                return False
        return True

    def header_comment(self):
        for i, line in enumerate(self.lines):
            s = line.strip()
            if not s or s.startswith(("#pragma", "#!")):
                continue
            if self.ext == ".py" and s.startswith(TRIPLE_QUOTES):
                quote = s[:3]
                if len(s) > 3 and s.endswith(quote):
                    return [(i + 1, i + 1)]
                end = next((j + 1 for j in range(i + 1, len(self.lines)) if quote in self.lines[j]),
                           len(self.lines))
                return [(i + 1, end)]
            if self.comment_line(i + 1):
                end = i + 1
                while end < len(self.lines) and self.comment_line(end + 1):
                    end += 1
                return [(i + 1, end)]
            return []
        return []


# ---------------------------------------------------------------- markdown

def looks_like_path(root, span):
    """`core/tensor.h`, `train/trainer.*`, `autograd/`: yes. `q/m`, `build/bin/x`: no."""
    if " " in span or not PATHLIKE.match(span) or span.startswith("build/"):
        return False
    last = span.rstrip("/").split("/")[-1]
    first = span.split("/")[0]
    return span.endswith("/") or "." in last or os.path.isdir(os.path.join(root, first))


def markdown_parts(text):
    """('fence', info, body lines, line) for each fenced block; ('text', line text, None, line) otherwise."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            marker, info, start = m.group(1), m.group(2).strip(), i + 1
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                body.append(lines[i])
                i += 1
            yield "fence", info, body, start
            i += 1
            continue
        yield "text", lines[i], None, i + 1
        i += 1


def paragraphs(text):
    """(first line, text) of each paragraph of prose, code blocks left out: a code span may wrap."""
    current, first = [], None
    for kind, content, _body, line in markdown_parts(text):
        if kind == "fence" or not content.strip():
            if current:
                yield first, "\n".join(current)
            current, first = [], None
            continue
        if first is None:
            first = line
        current.append(content)
    if current:
        yield first, "\n".join(current)


def fits(src, what, lo, hi, a, b):
    """Do lines lo..hi hold the occurrence a..b of `what`?

    `line N`: the symbol starts at N. `lines A–B`: the range holds the whole definition and
    begins at it or in the comments above it; quoted text need only lie inside; a header
    comment need only begin inside (a range may cover part of it, or it and what follows)."""
    lead = a == lo or (lo < a and src.lead_in(lo, a - 1))
    if what.startswith('"'):
        return lo <= a and b <= hi
    if what == "header comment":
        return lead and a <= hi
    if lo == hi:
        return a == lo
    return lead and b <= hi


_defined_anywhere = {}


def defined_anywhere(root, name):
    """Is the qualified name (`Tape::record`, `NormOptions::impl`) defined in some source file?"""
    key = (root, name)
    if key not in _defined_anywhere:
        parts = name.split("::")
        hit = False
        for folder in SOURCE_FOLDERS:
            for path in glob.glob(os.path.join(root, folder, "**", "*.[ch]*"), recursive=True):
                if not path.endswith((".h", ".cpp")) or "/build" in path[len(root):]:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    raw = f.read()
                if parts[-1] in raw and parts[-2] in raw and Source(path).find(name):
                    hit = True
                    break
            if hit:
                break
        _defined_anywhere[key] = hit
    return _defined_anywhere[key]


def check_doc(root, doc_path):
    errors = []
    with open(doc_path, encoding="utf-8") as f:
        text = f.read()
    inside = os.path.abspath(doc_path).startswith(os.path.abspath(root) + os.sep)
    doc = os.path.relpath(doc_path, root) if inside else doc_path
    sources = {}

    def source(rel):
        if rel not in sources:
            sources[rel] = Source(os.path.join(root, rel))
        return sources[rel]

    def report(line, what, problem):
        errors.append((line, f"{doc}:{line}: {what}: {problem}"))

    def check_reference(line, span, ref):
        rel, what = ref.group("path"), ref.group("what").strip()
        if not os.path.isfile(os.path.join(root, rel)):
            return report(line, f"`{span}`", f"no file {rel}")
        src = source(rel)
        found = src.find(what)
        if found is None:
            return report(line, f"`{span}`", f"'{what}' is not a symbol, a \"quoted text\" or 'header comment'")
        if not found:
            return report(line, f"`{span}`", f"{what} is not found in {rel}")
        if not ref.group("first"):
            return None
        lo = int(ref.group("first"))
        hi = int(ref.group("last") or lo)
        if hi < lo:
            return report(line, f"`{span}`", f"the range {lo}–{hi} runs backwards")
        if hi > len(src.lines):
            return report(line, f"`{span}`", f"{rel} has only {len(src.lines)} lines")
        if not any(fits(src, what, lo, hi, a, b) for a, b in found):
            where = ", ".join(f"{a}–{b}" if a != b else f"{a}" for a, b in found[:4])
            plural = "s" if len(found) > 1 or found[0][0] != found[0][1] else ""
            return report(line, f"`{span}`", f"lines {lo}–{hi} do not hold {what}, which is at line{plural} {where}")
        return None

    unchecked = []
    for first, para in paragraphs(text):
        prose, last = [], 0
        for m in CODE_SPAN.finditer(para):
            prose.append(para[last:m.start()])
            last = m.end()
            span = " ".join(m.group(2).split())
            line = first + para[:m.start()].count("\n")
            ref = REFERENCE.match(span)
            if ref:
                check_reference(line, span, ref)
            elif BARE_LINE.match(span):
                report(line, f"`{span}`", "a line number without a symbol; write `path: Symbol, lines A–B`")
            elif span.startswith("../shared/") and not os.path.isdir(os.path.join(root, "..", "shared")):
                unchecked.append(span)  # the data and notes beside the repository; a fresh clone has none
            elif looks_like_path(root, span) and not glob.glob(os.path.join(root, span)):
                report(line, f"`{span}`", "no such file or folder")
            elif QUALIFIED.match(span) and not defined_anywhere(root, QUALIFIED.match(span).group(1)):
                report(line, f"`{span}`", f"{QUALIFIED.match(span).group(1)} is defined in no source file")
        prose.append(para[last:])
        plain = "".join(prose)
        for m in LOOSE_LINES.finditer(plain):
            line = first + plain[:m.start()].count("\n")
            report(line, "'" + " ".join(m.group(0).split()) + "'",
                   "a line number outside a reference; write `path: Symbol, lines A–B`, or the symbol alone")

    if unchecked:
        print(f"{doc}: {len(unchecked)} path{'s' if len(unchecked) != 1 else ''} into ../shared not checked "
              f"(no ../shared beside {root}): {', '.join(sorted(set(unchecked)))}")

    for kind, info, body, line in markdown_parts(text):
        m = re.fullmatch(r"(\w*)\s+from\s+(\S+)", info) if kind == "fence" else None
        if not m:
            continue
        rel = m.group(2)
        if not os.path.isfile(os.path.join(root, rel)):
            report(line, f"code block from {rel}", "no such file")
            continue
        want = [l.rstrip() for l in body]
        have = [l.rstrip() for l in source(rel).lines]
        if want and not any(have[i:i + len(want)] == want for i in range(len(have) - len(want) + 1)):
            missing = next((l for l in want if l not in have), None)
            hint = f"; it has no line {missing.strip()!r}" if missing is not None else \
                "; it has every line, but not in this order"
            report(line, f"code block from {rel}", f"does not appear verbatim in {rel}{hint}")
    return [message for _line, message in sorted(errors, key=lambda e: e[0])]


# ---------------------------------------------------------------- self-test

SELF_TEST_FILES = {
    "core/thing.h": """#pragma once
// Thing: the header comment.
namespace rg {
enum class Mode { Fast, Slow };
struct Node;
class Thing {
 public:
  Thing(int n);
  int size() const { return n_; }
  void grow(int by);
 private:
  int n_ = 0;
};
}  // namespace rg
""",
    "core/thing.cpp": """#include "thing.h"
namespace rg {
namespace {
int helper(int x) { return x + 1; }
}  // namespace
Thing::Thing(int n) : n_(helper(n)) {}
// Grows by `by` and one more.
void Thing::grow(int by) {
  n_ = helper(n_) + by;  // not a definition of helper
}
}  // namespace rg
""",
    "tests/test_thing.cpp": 'TEST_CASE("a thing grows") {}\n',
}

SELF_TEST_DOC = """# A tour

Good: `core/thing.h: class Thing`, `core/thing.h: Thing::size`, `core/thing.h: Mode::Slow`,
`core/thing.cpp: Thing::grow, lines 7–10`, `core/thing.cpp: helper (line 4)`, `core/thing.cpp: Thing::Thing`,
`tests/test_thing.cpp: "a thing grows"`, `core/thing.h: header comment, lines 1–2`, `core/thing.h: Thing::n_`,
`core/thing.h: Thing::grow (line 10)`,
`core/thing.h`, `core/`, `q/m`, `Thing::grow(by)`, `std::vector`.
Bad 1: `core/nothing.h: Thing`.
Bad 2: `core/thing.cpp: shrink`.
Bad 3: `core/thing.cpp: Thing::grow, lines 8–9` (cut short).
Bad 4: `core/thing.cpp: Thing::grow, lines 6–10` (starts in the code above).
Bad 5: `core/thing.h: struct Node` (a forward declaration only).
Bad 6: read lines 7–9 of `core/thing.cpp`.
Bad 7: `core/missing/`.
Bad 8: `core/thing.cpp: Thing::grow, line 7` (the comment above it, not the function).
Bad 9: `Thing::shrink()`.

```cpp from core/thing.cpp
void Thing::grow(int by) {
  n_ = helper(n_) + by;  // not a definition of helper
}
```

```cpp from core/thing.cpp
void Thing::shrink() {}
```
"""


def self_test():
    """The checker on a small tree: what it must accept and each kind of break it must report."""
    with tempfile.TemporaryDirectory() as root:
        for rel, text in SELF_TEST_FILES.items():
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        doc = os.path.join(root, "tour.md")
        with open(doc, "w") as f:
            f.write(SELF_TEST_DOC)
        errors = check_doc(root, doc)
    expected = {"Bad 1": "no file", "Bad 2": "not found", "Bad 3": "do not hold", "Bad 4": "do not hold",
                "Bad 5": "not found", "Bad 6": "outside a reference", "Bad 7": "no such file", "Bad 8": "do not hold", "Bad 9": "no source file",
                "```cpp from core/thing.cpp\nvoid Thing::shrink": "does not appear verbatim"}
    failures = []
    for label, problem in expected.items():
        n = SELF_TEST_DOC[:SELF_TEST_DOC.index(label)].count("\n") + 1
        if not any(e.startswith(f"tour.md:{n}:") and problem in e for e in errors):
            failures.append(f"self-test: line {n} ({label.splitlines()[0]}) should be reported as '{problem}'")
    if len(errors) != len(expected):
        failures += [f"self-test: unexpected report: {e}" for e in errors]
    return failures


def main(argv):
    args = argv[1:]
    run_self_test = "--self-test" in args
    args = [a for a in args if a != "--self-test"]
    if not args:
        print("usage: check_tour.py [--self-test] ROOT [DOC ...]", file=sys.stderr)
        return 2
    root = args[0]
    docs = args[1:] or [os.path.join(root, d) for d in DEFAULT_DOCS]
    errors = self_test() if run_self_test else []
    for doc in docs:
        if os.path.isfile(doc):
            errors += check_doc(root, doc)
        else:
            errors.append(f"{doc}: no such document")
    for e in errors:
        print(e)
    if errors:
        print(f"check_tour: {len(errors)} broken reference{'s' if len(errors) != 1 else ''}")
        return 1
    print(f"check_tour: every reference in {', '.join(os.path.relpath(d, root) for d in docs)} holds")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
