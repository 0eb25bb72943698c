#!/usr/bin/env python3
"""Runs the regression corpus: inputs that once crashed, hung or miscompiled
the compiler, and must now fail cleanly.

    run_corpus.py CORPUS_DIR FLASHTILE_COMPILE

Each case is CORPUS_DIR/NAME.args: one command-line argument per line for
flashtile-compile (`%t` is the case's own empty folder, `%corpus` the corpus
folder), and `# expect: TEXT` lines that the error output must contain. A
case passes when the compiler exits with status 1 within 60 s, prints an
`error:` with a location, prints nothing that means a crash (a stack dump,
an LLVM ERROR, an assertion), and leaves its folder as empty as it found it.
Prints one line per case and "N passed, N failed"; exits 1 on any failure.
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

# A located error: "FILE:LINE:COL: error: ..." at the start of a line.
LOCATED_ERROR = re.compile(r"^[^\s:][^:]*:\d+:\d+: error: ", re.MULTILINE)
CRASH_MARKS = ("Stack dump", "LLVM ERROR", "Assertion", "PLEASE submit",
               "Segmentation fault", "terminate called", "UNREACHABLE")


def run_case(path, compile_tool):
    lines = path.read_text(encoding="utf-8").splitlines()
    expects = [l[len("# expect:"):].strip() for l in lines if l.startswith("# expect:")]
    with tempfile.TemporaryDirectory() as tmp:
        args = [l.replace("%t", tmp).replace("%corpus", str(path.parent.resolve()))
                for l in lines if l and not l.startswith("#")]
        try:
            proc = subprocess.run([compile_tool] + args, capture_output=True,
                                  timeout=60, cwd=tmp)
        except subprocess.TimeoutExpired:
            return "hung (more than 60 s)"
        err = proc.stderr.decode("utf-8", "replace")
        out = proc.stdout.decode("utf-8", "replace")
        if proc.returncode != 1:
            return f"exit status {proc.returncode}, expected 1; stderr: {err[-400:]}"
        for mark in CRASH_MARKS:
            if mark in err or mark in out:
                return f"crash marker '{mark}' in the output: {err[-400:]}"
        if not LOCATED_ERROR.search(err):
            return f"no located 'FILE:LINE:COL: error:' diagnostic; stderr: {err[-400:]}"
        for text in expects:
            if text not in err:
                return f"expected '{text}' in: {err[-400:]}"
        left = sorted(os.listdir(tmp))
        if left:
            return f"files left behind: {left}"
    return None


def main():
    corpus, tool = pathlib.Path(sys.argv[1]), sys.argv[2]
    cases = sorted(corpus.glob("*.args"))
    failed = 0
    for case in cases:
        problem = run_case(case, tool)
        print(f"{'FAIL' if problem else 'ok  '} {case.stem}" + (f": {problem}" if problem else ""))
        failed += bool(problem)
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
