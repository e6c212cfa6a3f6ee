"""clitest.py: what the CLI tests in Python share: a check that prints its
outcome and counts failures, and a tool run that stops the test when the
tool fails."""
import subprocess

fails = 0


def check(what, cond, detail=""):
    global fails
    if cond:
        print("ok: " + what)
    else:
        fails += 1
        print("FAIL: %s %s" % (what, detail))


def run(*cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr))
    return p
