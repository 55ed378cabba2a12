"""Shared by the Python script tests (test_report.py, test_ncu_stalls.py, test_sass.py): PASS/FAIL
lines, a running count, the summary line and the exit code, and running a script as a user would."""
import subprocess
import sys

counts = {"passed": 0, "failed": 0}


def check(cond, what, detail=""):
    if cond:
        counts["passed"] += 1
        print("PASS  " + what)
    else:
        counts["failed"] += 1
        print("FAIL  " + what + ("\n      " + detail.replace("\n", "\n      ") if detail else ""))


def run_script(script, *args):
    """Runs `python3 script args...`; returns (exit code, stdout, stderr)."""
    p = subprocess.run([sys.executable, script] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def summary():
    """Prints "N passed, M failed" and returns the exit code (1 on any failure)."""
    print(f"{counts['passed']} passed, {counts['failed']} failed")
    return 1 if counts["failed"] else 0
