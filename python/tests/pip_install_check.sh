#!/usr/bin/env bash
# The README's install command, checked: creates a virtual environment from
# Debian's Python (--system-site-packages, for Debian's setuptools and wheel;
# no package index is used), pip-installs ./python into it, and runs the
# 30-second example from outside the source tree with the venv's interpreter.
# Usage: pip_install_check.sh REPO_ROOT [PREBUILT_BUILD_DIR]
# With PREBUILT_BUILD_DIR (a build configured with -DTASKLEDGER_PYTHON=ON for
# /usr/bin/python3), setup.py packages that build's module
# (TASKLEDGER_PREBUILT_DIR) instead of compiling the library again; the
# install itself, the wheel and the import are real. Exit 0 on success.
set -euo pipefail
root=$1
prebuilt=${2:-}
python=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv --system-site-packages "$work/venv"
# Copy the sources: pip builds in tree, and a test must not leave build/ and
# *.egg-info behind in the repository.
mkdir -p "$work/src"
cp -r "$root/python" "$root/docs" "$work/src/"
if [[ -n "$prebuilt" ]]; then
  export TASKLEDGER_PREBUILT_DIR=$prebuilt
else
  # A fresh build compiles the C++ sources: give it the tree.
  rm -rf "$work/src"
  mkdir -p "$work/src"
  git -C "$root" ls-files -z | (cd "$root" && xargs -0 cp --parents -t "$work/src")
fi
"$work/venv/bin/pip" install --no-build-isolation --no-index -q "$work/src/python"
cd "$work"
out=$("$work/venv/bin/python" "$root/python/examples/quickstart.py" "$root/rules/subscription")
echo "$out"
grep -q "^blocked subscription.identity_verified" <<< "$out"
grep -q "^- subscription_status: grace_period" <<< "$out"
"$work/venv/bin/python" -c 'import taskledger, pathlib; p = pathlib.Path(taskledger.__file__).parent; assert (p / "py.typed").is_file() and (p / "__init__.pyi").is_file(), p'
echo "pip install check: ok"
