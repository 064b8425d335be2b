#!/usr/bin/env python3
"""The reproduction report's numbers against the records they come from.

Two kinds of table in experiments/README.md are checked:

- Generated tables. An HTML comment right above a table names the command
  that writes it from records kept in docs/seeds/:

      <!-- generated: paper_table docs/seeds/rnnsearch_multi30k --metric bleu --split valid,test -->
      | norm | seeds | ... |

  The command is run again (from the repository root; `paper_table` is the
  program given by --paper-table) and the table must be its first table,
  line for line.
- Quoting tables: a table with a column named `records`, each row of which
  links to a section of the report. Every decimal number of the row's quoted
  columns (those whose header starts with "ours") must stand in a cell of a
  generated table of the linked section or its subsections: a summary cannot
  say what its records do not.

  scripts/check_report.py --paper-table build/bin/paper_table experiments/README.md
  scripts/check_report.py --paper-table build/bin/paper_table experiments/README.md --write
  scripts/check_report.py --self-test

--write puts each generated table in place instead of failing; the quoting
tables are still checked. Exits 1 naming every table that differs and every
number that no record gives.
"""
import argparse
import difflib
import os
import re
import shlex
import subprocess
import sys
import tempfile

MARK = re.compile(r"^<!-- generated: (.*) -->$")
HEADING = re.compile(r"^(#+) (.*)$")
LINK = re.compile(r"\]\(#([^)]+)\)")
# A number, or "mean ± sd"; the signs the report writes (−, +, -) are one sign.
NUMBER = re.compile(r"[+\-−]?\d+(?:\.\d+)?(?: ± \d+(?:\.\d+)?)?")


def anchor(title):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    title = re.sub(r"[`*]", "", title.strip().lower())
    return re.sub(r"[^\w\- ]", "", title).replace(" ", "-")


def table_at(lines, i):
    """The table starting at line i: its lines, up to the first that is not a row."""
    j = i
    while j < len(lines) and lines[j].startswith("|"):
        j += 1
    return lines[i:j]


def cells(row):
    return [c.strip() for c in row.strip().strip("|").split("|")]


def numbers(text):
    return [n.replace("−", "-") for n in NUMBER.findall(text)]


def known_numbers(cell):
    """What a generated cell can be quoted as: its numbers, each part of a "mean ± sd", the cell itself."""
    found = numbers(cell)
    parts = [p for n in found if " ± " in n for p in n.split(" ± ")]
    return found + parts + [cell.replace("−", "-")]


def first_table(text):
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|"):
            return table_at(lines, i)
    return []


def run_generator(command, paper_table, root):
    args = shlex.split(command)
    if not args or args[0] != "paper_table":
        raise SystemExit(f"check_report: only paper_table commands can generate a table, not: {command}")
    done = subprocess.run([paper_table] + args[1:], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        return None, done.stderr.strip()
    return first_table(done.stdout), None


def sections(lines):
    """Each heading's anchor → the line range of its section, subsections included."""
    heads = [(i, len(m.group(1)), anchor(m.group(2))) for i, line in enumerate(lines) if (m := HEADING.match(line))]
    out = {}
    for k, (i, level, name) in enumerate(heads):
        end = next((j for j, lv, _ in heads[k + 1:] if lv <= level), len(lines))
        out[name] = (i, end)
    return out


def check(report, paper_table, root, write):
    lines = open(report, encoding="utf-8").read().splitlines()
    problems = []
    generated = []  # (first line, table lines) of every generated table, after --write
    out = []
    i = 0
    while i < len(lines):
        out.append(lines[i])
        m = MARK.match(lines[i])
        if not m:
            i += 1
            continue
        table = table_at(lines, i + 1)
        fresh, error = run_generator(m.group(1), paper_table, root)
        if fresh is None:
            problems.append(f"{report}:{i + 1}: `{m.group(1)}` failed: {error}")
            fresh = table
        elif fresh != table and not write:
            diff = next(d for d in difflib.unified_diff(table, fresh, lineterm="", n=0) if d[:1] in "+-" and d[:3] not in ("+++", "---"))
            problems.append(f"{report}:{i + 2}: the table differs from what `{m.group(1)}` gives its records; "
                            f"first difference: {diff[:200]}")
        if not table and not write:
            problems.append(f"{report}:{i + 1}: no table follows the mark")
        generated.append((len(out), fresh))
        out.extend(fresh)
        i += 1 + len(table)
    if write:
        open(report, "w", encoding="utf-8").write("\n".join(out) + "\n")
    lines = out

    # Quoting tables: every number of an "ours" cell stands in a generated table of the linked section.
    spans = sections(lines)
    in_tables = {}
    for start, table in generated:
        for name, (a, b) in spans.items():
            if a <= start < b:
                in_tables.setdefault(name, set()).update(
                    n for row in table[2:] for c in cells(row) for n in known_numbers(c))
    i = 0
    while i < len(lines):
        if not (lines[i].startswith("|") and "records" in cells(lines[i])):
            i += 1
            continue
        table = table_at(lines, i)
        header = cells(table[0])
        quoted = [k for k, h in enumerate(header) if h.startswith("ours")]
        where = header.index("records")
        for r, row in enumerate(table[2:]):
            c = cells(row)
            line = i + 3 + r
            links = LINK.findall(c[where]) if where < len(c) else []
            if not links:
                problems.append(f"{report}:{line}: the row links to no section of records")
                continue
            known = set().union(*(in_tables.get(name, set()) for name in links))
            if not known:
                problems.append(f"{report}:{line}: #{', #'.join(links)} holds no generated table")
            for k in quoted:
                for n in numbers(c[k]) if k < len(c) else []:
                    if n not in known:
                        problems.append(f"{report}:{line}: {n} (column \"{header[k]}\") is in no generated "
                                        f"table of #{', #'.join(links)}")
        i += len(table)
    return problems


def self_test():
    """A report with one generated table and one quoting table, against a stand-in paper_table."""
    with tempfile.TemporaryDirectory() as d:
        fake = os.path.join(d, "paper_table")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\necho '| norm | bleu |'\necho '|---|---|'\necho \"| rmsnorm | $2 ± 0.50 |\"\n"
                    "echo\necho 'Columns: ...'\n")
        os.chmod(fake, 0o755)
        report = os.path.join(d, "report.md")

        def write_report(table_value, quoted):
            with open(report, "w") as f:
                f.write("# Report\n\n| model | ours: BLEU | records |\n|---|---|---|\n"
                        f"| RNNSearch | {quoted} | [seeds](#seeds-13) |\n\n## Seeds 1–3\n\n"
                        "<!-- generated: paper_table --x 40.98 -->\n"
                        f"| norm | bleu |\n|---|---|\n| rmsnorm | {table_value} ± 0.50 |\n\ntext\n")

        write_report("40.98", "40.98 ± 0.50")
        assert check(report, fake, d, False) == [], "an equal report passes"
        write_report("40.97", "40.98 ± 0.50")
        problems = check(report, fake, d, False)
        assert len(problems) == 1 and "differs" in problems[0], problems
        assert check(report, fake, d, True) == [] and "40.98 ± 0.50 |" in open(report).read(), "--write mends it"
        write_report("40.98", "41.00 ± 0.50")
        problems = check(report, fake, d, False)
        assert len(problems) == 1 and "41.00 ± 0.50" in problems[0], problems
        assert anchor("The attentive reader on bAbI task 2, seeds 1–3") == "the-attentive-reader-on-babi-task-2-seeds-13"
    print("check_report: self-test passed")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("report", nargs="?", default="experiments/README.md")
    parser.add_argument("--paper-table", default="build/bin/paper_table")
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--write", action="store_true", help="put the generated tables in place")
    parser.add_argument("--self-test", action="store_true")
    a = parser.parse_args()
    if a.self_test:
        self_test()
        return 0
    report = os.path.join(a.root, a.report) if not os.path.isabs(a.report) else a.report
    paper_table = os.path.abspath(a.paper_table)
    for path, what in ((report, "report"), (paper_table, "paper_table")):
        if not os.path.isfile(path):
            print(f"check_report: no {what} at {path}", file=sys.stderr)
            return 2
    problems = check(report, paper_table, a.root, a.write)
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        print(f"check_report: every generated table of {os.path.relpath(report, a.root)} is what its records give, "
              "and every quoted number stands in one")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
