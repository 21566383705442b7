#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu 22.04), with
# the zip unpacked in /autograder/source. It installs a Python 3.11 of the grader's own (from the
# deadsnakes archive, as /usr/bin/python3.11: the image's python3, which Gradescope's harness
# uses, is left alone), a virtual environment in /opt/course-grader/venv with CPU-only PyTorch
# and the pinned requirements, and stops at the first step that fails.
set -euo pipefail

SOURCE=/autograder/source
HOME_DIR=/opt/course-grader
VENV="$HOME_DIR/venv"
TORCH_INDEX=https://download.pytorch.org/whl/cpu

echo "setup: installing Python 3.11 from the deadsnakes archive"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends software-properties-common ca-certificates
add-apt-repository -y ppa:deadsnakes/ppa
apt-get update
apt-get install -y --no-install-recommends python3.11 python3.11-venv python3.11-dev
python3.11 --version

echo "setup: creating $VENV"
install -d -m 0755 "$HOME_DIR"
python3.11 -m venv "$VENV"
"$VENV/bin/python" -m pip install --no-cache-dir --upgrade pip

echo "setup: installing CPU-only PyTorch, then the pinned requirements"
torch_pin="$(grep -E '^torch==' "$SOURCE/requirements.txt")"
"$VENV/bin/python" -m pip install --no-cache-dir --index-url "$TORCH_INDEX" "$torch_pin"
"$VENV/bin/python" -m pip install --no-cache-dir -r "$SOURCE/requirements.txt"

echo "setup: checking that the grader imports"
PYTHONPATH="$SOURCE" "$VENV/bin/python" -c "import grader.grade, torch; print('torch', torch.__version__)"
chmod -R a+rX "$HOME_DIR"
echo "setup: done"
