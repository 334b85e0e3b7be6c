"""A step loads another step's module only where its step.toml's [uses] says so."""

import subprocess
import sys

import pytest

from common import REPO_ROOT

# A step of the course's own, copied: its run.py loads a module of an earlier step
RUN = """from common.loader import reference

data = reference("step-03", "data")
"""


@pytest.mark.process
@pytest.mark.parametrize("declared", [False, True])
def test_an_undeclared_load_of_another_steps_module_fails_with_one_line(tmp_path, declared):
    steps = tmp_path / "steps" / "lab-01"  # lab-01 as its step.toml says, with `uses` or not
    steps.mkdir(parents=True)
    toml = (REPO_ROOT / "steps" / "lab-01" / "step.toml").read_text(encoding="utf-8")
    uses = '\n[uses]\nstep-03 = ["data"]\n' if declared else ""
    (steps / "step.toml").write_text(toml + uses, encoding="utf-8")
    (steps / "probe.py").write_text(RUN, encoding="utf-8")  # a step's file that loads step-03's
    probe = (
        "from common.loader import load_file; import pathlib, sys\n"
        "try:\n    load_file(pathlib.Path(sys.argv[1]))\n    print('loaded')\n"
        "except ImportError as e:\n    print(e)\n"
    )
    env = {"COURSE_STEPS_DIR": str(tmp_path / "steps"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", probe, str(steps / "probe.py")], cwd=REPO_ROOT,
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    said = done.stdout.strip()
    if declared:
        assert said == "loaded", done.stdout + done.stderr
    else:
        assert said.endswith(
            "does not import: UndeclaredStepError: lab-01 loads step-03's data without declaring "
            "it: add 'data' to step-03 = [...] under [uses] in steps/lab-01/step.toml"
        ), done.stdout + done.stderr
        assert "\n" not in said and said.startswith("steps/lab-01/probe.py:3 "), said
