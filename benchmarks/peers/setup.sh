#!/usr/bin/env bash
# Create the peers' environment for benchmarks/utility.py (MST and AIM from smartnoise-synth).
set -euo pipefail
cd "$(dirname "$0")/../.."
ENV=benchmarks/.envs/snsynth
python3 -m venv "$ENV"
"$ENV/bin/python" -m pip install -q --upgrade pip
"$ENV/bin/python" -m pip install -q "torch==2.13.0"
"$ENV/bin/python" -m pip install -q -r benchmarks/peers/requirements.txt pyyaml pydantic
echo "ok: $ENV"
