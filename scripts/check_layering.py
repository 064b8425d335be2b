#!/usr/bin/env python3
"""The folder layout is the architecture: a library folder includes only its own headers and those of
the folders before it,

    core  →  data, autograd  →  layers  →  optim  →  dist  →  models  →  train  →  experiments

(data and autograd are side by side: neither includes the other). This prints every #include
"rmsgrad/<folder>/..." that points the other way, one line each (file:line: what), and exits 1 when
there is one. bench/, tests/, examples/ and fuzz/ sit beside the library and may include anything.

    scripts/check_layering.py [REPOSITORY_ROOT]
"""
import pathlib
import re
import sys

LEVELS = {"core": 0, "data": 1, "autograd": 1, "layers": 2, "optim": 3, "dist": 4, "models": 5,
          "train": 6, "experiments": 7}
INCLUDE = re.compile(r'^\s*#\s*include\s+"rmsgrad/([a-z_]+)/')


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    wrong = []
    for folder, level in LEVELS.items():
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".h", ".cpp"):
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                match = INCLUDE.match(line)
                if not match or match.group(1) == folder:
                    continue
                target = match.group(1)
                if target not in LEVELS:
                    wrong.append(f"{path.relative_to(root)}:{number}: includes rmsgrad/{target}/, which is not a "
                                 "library folder")
                elif LEVELS[target] >= level:
                    wrong.append(f"{path.relative_to(root)}:{number}: {folder}/ includes {target}/, against "
                                 "core → data, autograd → layers → optim → dist → models → train → experiments")
    for line in wrong:
        print(line)
    if wrong:
        sys.exit(1)
    print(f"layering: every include of {', '.join(LEVELS)} points back along the chain")


if __name__ == "__main__":
    main()
