#!/usr/bin/env python3
"""Runs docs/tutorial-new-domain.md as written: a fenced block preceded by
`<!-- file: PATH -->` is written to PATH (relative to a fresh directory), and
in a ```console block every `$ ` line is a command (`taskledger` is the built
binary) whose combined output must contain each line that follows it, up to
the next `$ ` line; it must exit 0 unless the command ends in `# exit N`.
Usage: run_tutorial.py TUTORIAL.md TASKLEDGER_BINARY. Exit 0 when every step
did what the tutorial says, 1 (naming the step) otherwise."""
import os
import re
import shlex
import subprocess
import sys
import tempfile


def steps(text):
    """Yields ("file", path, body) and ("run", command, expected_lines, exit)."""
    lines = text.split("\n")
    i, pending_file = 0, None
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^<!-- file: (\S+) -->$", line)
        if m:
            pending_file = m.group(1)
            i += 1
            continue
        if line.startswith("```"):
            kind = line[3:].strip()
            body = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            i += 1
            if pending_file is not None:
                yield ("file", pending_file, "\n".join(body) + "\n")
                pending_file = None
            elif kind == "console":
                command, expected = None, []
                for b in body + ["$ "]:
                    if b.startswith("$ "):
                        if command:
                            code = 0
                            m = re.search(r"\s+# exit (\d+)$", command)
                            if m:
                                code = int(m.group(1))
                                command = command[: m.start()]
                            yield ("run", command, expected, code)
                        command, expected = b[2:].strip(), []
                    elif b.strip():
                        expected.append(b.strip())
            continue
        if line.strip():
            pending_file = None if not line.startswith("<!--") else pending_file
        i += 1


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    text = open(sys.argv[1], encoding="utf-8").read()
    binary = os.path.abspath(sys.argv[2])
    work = tempfile.mkdtemp(prefix="tl_tutorial_")
    ran = 0
    for step in steps(text):
        if step[0] == "file":
            path = os.path.join(work, step[1])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(step[2])
            print("wrote", step[1])
            continue
        _, command, expected, code = step
        argv = shlex.split(command)
        if argv[0] != "taskledger":
            print("FAIL: only taskledger commands are run:", command)
            return 1
        proc = subprocess.run([binary] + argv[1:], cwd=work, capture_output=True, text=True)
        out = proc.stdout + proc.stderr
        ran += 1
        if proc.returncode != code:
            print(f"FAIL: `{command}` exited {proc.returncode}, the tutorial says {code}\n{out}")
            return 1
        for want in expected:
            if want not in out:
                print(f"FAIL: `{command}` did not print {want!r}\n{out}")
                return 1
        print("ok", command)
    if ran == 0:
        print("FAIL: no command found in", sys.argv[1])
        return 1
    print(f"tutorial: {ran} commands as written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
