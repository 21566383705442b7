#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu 22.04), with
# the zip unpacked in /autograder/source. It installs Ubuntu's own Python 3.11 (the python3.11
# package of Ubuntu 22.04's universe component, as /usr/bin/python3.11: the image's python3, which
# Gradescope's harness uses, is left alone; no third-party archive), a virtual environment in
# /opt/course-grader/venv with CPU-only PyTorch and the pinned requirements, and stops at the
# first step that fails. Steps that use the network are tried up to three times.
set -euo pipefail

SOURCE=/autograder/source
HOME_DIR=/opt/course-grader
VENV="$HOME_DIR/venv"
TORCH_INDEX=https://download.pytorch.org/whl/cpu

retry() {  # retry COMMAND...: up to three tries, 15 s then 30 s apart
    local attempt
    for attempt in 1 2 3; do
        if "$@"; then
            return 0
        fi
        if [ "$attempt" -lt 3 ]; then
            echo "setup: '$*' failed (try $attempt of 3); retrying in $((attempt * 15)) s" >&2
            sleep $((attempt * 15))
        fi
    done
    echo "setup: '$*' failed 3 times; giving up" >&2
    return 1
}

echo "setup: installing Python 3.11 from Ubuntu's universe component"
export DEBIAN_FRONTEND=noninteractive
if ! grep -rqsE '^deb .* universe' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    retry apt-get update
    retry apt-get install -y --no-install-recommends software-properties-common
    add-apt-repository -y universe
fi
retry apt-get update
retry apt-get install -y --no-install-recommends ca-certificates python3.11 python3.11-venv python3.11-dev
python3.11 --version

echo "setup: installing bubblewrap, which confines the learner's code when the machine allows it"
retry apt-get install -y --no-install-recommends bubblewrap
bwrap --version

echo "setup: creating $VENV"
install -d -m 0755 "$HOME_DIR"
python3.11 -m venv "$VENV"
retry "$VENV/bin/python" -m pip install --no-cache-dir --upgrade pip

echo "setup: installing CPU-only PyTorch, then the pinned requirements"
torch_pin="$(grep -E '^torch==' "$SOURCE/requirements.txt")"
retry "$VENV/bin/python" -m pip install --no-cache-dir --index-url "$TORCH_INDEX" "$torch_pin"
retry "$VENV/bin/python" -m pip install --no-cache-dir -r "$SOURCE/requirements.txt"

echo "setup: checking that the grader imports"
PYTHONPATH="$SOURCE" "$VENV/bin/python" -c "import grader.grade, torch; print('torch', torch.__version__)"
chmod -R a+rX "$HOME_DIR"
echo "setup: done"
