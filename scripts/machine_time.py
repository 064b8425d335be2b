#!/usr/bin/env python3
"""The machine time kept runs took: each run's wall clock, read from its train.log.

Usage: scripts/machine_time.py DIR [DIR ...]
       scripts/machine_time.py --self-test

Each DIR holds runs (folders with a train.log, as KEEP leaves them under
docs/seeds/<model>/, or docs/seeds/<model>/<position>/ for the Transformer), at
any depth. A train.log line starts with the time since its process began,
"[hh:mm:ss]"; a resumed run starts again from 00:00:00, so a run's wall time is
the sum of each process's last stamp. Evaluation, start-up and the
final test are included; a process killed before it logged again loses the
time since its last line. Prints one line per DIR and the total, in hours of
one run — with one thread per run, hours of one core.
"""
import re
import sys
import tempfile
from pathlib import Path

STAMP = re.compile(r"^\[(\d+):(\d\d):(\d\d)\]")


def wall_seconds(log: Path) -> float:
    total, last = 0.0, 0.0
    for line in log.read_text(errors="replace").splitlines():
        m = STAMP.match(line)
        if not m:
            continue
        t = int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3])
        if t < last:  # a new process: the run was resumed
            total += last
        last = t
    return total + last


def run_logs(d: Path) -> list:
    """The train.log of every run in d, at any depth (d itself may be one run)."""
    return sorted(d.rglob("train.log"))


def self_test():
    """A run resumed once (10 min, then 1 h 2 min 5 s) and a fresh one of 30 s."""
    with tempfile.TemporaryDirectory() as tmp:
        resumed, fresh = Path(tmp, "a"), Path(tmp, "b")
        resumed.mkdir(), fresh.mkdir()
        (resumed / "train.log").write_text(
            "title\n[00:00:01] data\n[00:10:00] step 100\n--seed 1\n[00:00:00] resumed\n[01:02:05] step 900\n")
        (fresh / "train.log").write_text("[00:00:00] start\n[00:00:30] done\n")
        got = wall_seconds(resumed / "train.log"), wall_seconds(fresh / "train.log")
        want = 600 + 3725, 30
        if got != want:
            sys.exit(f"machine_time self-test: got {got} s, want {want} s")
        nested = Path(tmp, "model", "pre", "c")
        nested.mkdir(parents=True)
        (nested / "train.log").write_text("[00:00:00] start\n")
        found = [log.parent.name for log in run_logs(Path(tmp))]
        if found != ["a", "b", "c"]:
            sys.exit(f"machine_time self-test: found runs {found}, want ['a', 'b', 'c']")
    print("machine_time self-test: ok")


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if not argv:
        sys.exit(__doc__.strip())
    grand, grand_runs = 0.0, 0
    for d in map(Path, argv):
        if not d.is_dir():
            sys.exit(f"machine_time: {d} is not a directory")
        logs = run_logs(d)
        if not logs:
            sys.exit(f"machine_time: {d} holds no run (no train.log in it or its subdirectories)")
        seconds = sum(wall_seconds(log) for log in logs)
        grand, grand_runs = grand + seconds, grand_runs + len(logs)
        print(f"{d}: {len(logs)} runs, {seconds / 3600:.2f} h")
    if len(argv) > 1:
        print(f"total: {grand_runs} runs, {grand / 3600:.2f} h")


if __name__ == "__main__":
    main(sys.argv[1:])
