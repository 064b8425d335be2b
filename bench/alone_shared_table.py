"""The table after an alone-then-shared timing (common.sh: alone_and_shared): one row per value of
the lines' KEY field, with the median ms_per_step alone and beside the competing busy loop, and
shared ÷ alone, the slowdown a program suffers when one of its cores is taken.

    python3 bench/alone_shared_table.py LINES KEY "ALONE HEADER" "SHARED HEADER" DECIMALS
"""
import json
import statistics
import sys
from collections import defaultdict


def main():
    path, key, alone_header, shared_header, decimals = sys.argv[1:6]
    ms = defaultdict(list)
    for line in open(path):
        if line.startswith("{"):
            j = json.loads(line)
            ms[(j[key], j["setting"])].append(j["ms_per_step"])
    print(f"| {key} | {alone_header} | {shared_header} | shared ÷ alone |")
    print("|---|---|---|---|")
    for name in dict.fromkeys(n for n, _ in ms):
        alone, shared = statistics.median(ms[(name, "alone")]), statistics.median(ms[(name, "shared")])
        print(f"| {name} | {alone:.{decimals}f} | {shared:.{decimals}f} | {shared / alone:.2f} |")


if __name__ == "__main__":
    main()
