#!/usr/bin/env bash
# The main job: builds what is needed and trains the demo on embedded data.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh xor_demo
build/bin/xor_demo
