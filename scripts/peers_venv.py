"""The peers' venv (.cache/peers): created once from PyPI, shared by scripts/bench-peers and
scripts/sysid-peer. Standard library only, so that a script can import it before the venv
exists.

    import peers_venv
    peers_venv.ensure_venv(__file__, ["mujoco==4.0.0", "pyyaml", "numpy"], "import mujoco", "bench-peers")

`ensure_venv` returns at once when the running interpreter already is the venv's; otherwise it
installs what is missing (once: a stamp file records the requirements installed last) and
re-executes the calling script with the venv's Python and the same arguments.
"""
import hashlib
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(REPO, ".cache", "peers")
# The MuJoCo of every peer table, pinned so that a figure can be reproduced (--mujoco-version
# of each script overrides it).
MUJOCO_VERSION = "4.0.0"
STAMP_PREFIX = ".installed-"


def die(msg, code=2):
    print(f"error: {msg}", file=sys.stderr)
    sys.exit(code)


def stamp_name(requirements):
    """The stamp of a list of requirements: readable for the usual one, hashed past that."""
    key = " ".join(requirements)
    key_hash = hashlib.sha256(key.encode()).hexdigest()[:12]
    return f"{STAMP_PREFIX}{requirements[0].replace('==', '-')}-{key_hash}"


def ensure_venv(script, requirements, import_check, tool):
    """Runs `script` (a path) inside .cache/peers with `requirements` (pip specifiers) installed.

    `import_check` is Python code run in the venv after installing (it must exit 0); `tool`
    names the caller in messages. Exits with code 3 when the venv cannot be made.
    """
    py = os.path.join(VENV, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        return
    stamp = os.path.join(VENV, stamp_name(requirements))
    if not os.path.exists(stamp):
        # another tool (or version) installed last: its stamp no longer describes the venv
        if os.path.isdir(VENV):
            for f in os.listdir(VENV):
                if f.startswith(STAMP_PREFIX):
                    os.remove(os.path.join(VENV, f))
        print(f"{tool}: installing {' '.join(requirements)} into {os.path.relpath(VENV, REPO)} ...", file=sys.stderr)
        try:
            if not os.path.exists(py):
                subprocess.run([sys.executable, "-m", "venv", VENV], check=True, capture_output=True, text=True)
            r = subprocess.run([py, "-m", "pip", "install", "-q", *requirements], capture_output=True, text=True)
            if r.returncode != 0:
                die(f"cannot install the peer from PyPI ({' '.join(requirements)}) into {VENV}:\n{r.stderr.strip()[-2000:]}", 3)
            r = subprocess.run([py, "-c", import_check], capture_output=True, text=True)
            if r.returncode != 0:
                die(f"{' '.join(requirements)} was installed into {VENV} but does not import:\n{r.stderr.strip()[-2000:]}", 3)
        except subprocess.CalledProcessError as e:
            die(f"cannot create the venv {VENV}: {e.stderr or e}", 3)
        open(stamp, "w").close()
    os.execv(py, [py, os.path.abspath(script), *sys.argv[1:]])


def version_arg(argv, default=MUJOCO_VERSION):
    """The value of --mujoco-version in `argv` (before argparse runs: the venv depends on it)."""
    v = default
    for i, a in enumerate(argv):
        if a == "--mujoco-version" and i + 1 < len(argv):
            v = argv[i + 1]
        elif a.startswith("--mujoco-version="):
            v = a.split("=", 1)[1]
    return v
