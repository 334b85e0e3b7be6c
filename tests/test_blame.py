"""The check names an injected bug's TODO and line on its first screen (at most 40 lines).

Each case copies lab-01 with the reference in place of the starter (a caught-up student), makes
one mistake a student makes in steps/lab-01/starter/attention.py, runs the check in a subprocess
and reads what it prints.
"""

import os
import re
import shutil
import subprocess
import sys

import pytest

from common import REPO_ROOT, STEPS_DIR

# (name, the reference line, the buggy line, the TODO that holds it, whether it raises there)
BUGS = [
    ("no max shift", "e = torch.exp(x - m)", "e = torch.exp(x)", "task 1", False),
    (
        "NaN on an all -inf row",
        'm = m.masked_fill(m == float("-inf"), 0.0)',
        "m = m + 0.0",
        "task 1",
        False,
    ),
    (
        "no scale",
        "scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale",
        "scale = 1.0 if scale is None else scale",
        "task 2",
        False,
    ),
    (
        "scale by d_model",
        "out, weights = scaled_dot_product_attention(q, k, v, mask)  #",
        "out, weights = scaled_dot_product_attention(q, k, v, mask, 1 / math.sqrt(self.d_model))  #",
        "task 6",
        False,
    ),
    (
        "inverted polarity",
        'scores = scores.masked_fill(~mask, float("-inf"))',
        'scores = scores.masked_fill(mask, float("-inf"))',
        "task 2",
        False,
    ),
    (
        "mask after softmax",
        "weights = stable_softmax(scores, dim=-1)",
        "weights = stable_softmax(q @ k.transpose(-2, -1) * scale, dim=-1)"
        " * (1.0 if mask is None else mask)",
        "task 2",
        False,
    ),
    ("triu", "return torch.tril(torch.ones(", "return torch.triu(torch.ones(", "task 3", False),
    (
        "no diagonal",
        "torch.tril(torch.ones(seq_len, seq_len))",
        "torch.tril(torch.ones(seq_len, seq_len), diagonal=-1)",
        "task 3",
        False,
    ),
    ("| for &", "return causal & padding", "return causal | padding", "task 4", False),
    (
        "split without a transpose",
        "return x.transpose(1, 2)  # (B, T, h, d_head) -> (B, h, T, d_head)",
        "return x.reshape(B, self.n_heads, T, self.d_head)",
        "task 6",
        False,
    ),
    (
        "view after a transpose",
        "return x.reshape(B, T, h * d_head)",
        "return x.view(B, T, h * d_head)",
        "task 6",
        True,
    ),
    (
        "merge with view",
        "x = x.transpose(1, 2)  # (B, h, T, d_head) -> (B, T, h, d_head), no longer contiguous",
        "x = x.contiguous()",
        "task 6",
        False,
    ),
    (
        "no head axis",
        "mask = mask.expand(B, T, T).unsqueeze(1)",
        "mask = mask.expand(B, T, T)",
        "task 6",
        False,
    ),
    (
        "no out_proj",
        "return self.out_proj(self.merge_heads(out)), weights",
        "return self.merge_heads(out), weights",
        "task 6",
        False,
    ),
]


def first_screen(tmp_path, old: str, new: str) -> tuple[str, list[str]]:
    """Copy lab-01 caught up, replace `old` by `new` in the starter; (the check's output, lines)."""
    step = shutil.copytree(
        STEPS_DIR / "lab-01",
        tmp_path / "steps" / "lab-01",
        ignore=shutil.ignore_patterns("backups"),
    )
    shutil.rmtree(step / "starter")
    shutil.copytree(step / "solution", step / "starter")
    path = step / "starter" / "attention.py"
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")
    env = os.environ | {"COURSE_STEPS_DIR": str(tmp_path / "steps"), "COLUMNS": "100"}
    env.pop("PIXI_PROJECT_ROOT", None)
    cmd = [sys.executable, "-m", "pytest", str(step), "--impl", "starter", "-m", "not slow"]
    cmd += ["-p", "no:cacheprovider", f"--rootdir={REPO_ROOT}"]
    cmd += ["-c", str(REPO_ROOT / "pyproject.toml"), "-p", "conftest"]  # the copy is outside
    out = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True).stdout
    lines = path.read_text(encoding="utf-8").splitlines()
    return out, lines


@pytest.mark.slow  # one check of lab-01 in a subprocess per bug: about 6 s each
@pytest.mark.parametrize("name, old, new, task, raises", BUGS, ids=[b[0] for b in BUGS])
def test_the_first_screen_names_the_todo_and_the_line_of_an_injected_bug(
    tmp_path, name, old, new, task, raises
):
    out, lines = first_screen(tmp_path, old, new)
    screen = out.strip().splitlines()
    assert len(screen) <= 40, out
    todo = re.escape(f"TODO(lab-01 {task}")
    assert re.search(rf"^\[!\] {todo}", out, re.M), out  # marked as the one with the bug
    where = re.search(rf"^Next: {todo}[^)]*\) at \S+/attention\.py:(\d+)$", out, re.M)
    assert where, out
    bug_line = next(i for i, line in enumerate(lines, 1) if new.strip() in line)
    if raises:
        assert int(where[1]) == bug_line, out
    else:  # a wrong result raises nowhere: Next points into the function that holds the bug
        start = max(i for i, line in enumerate(lines[:bug_line], 1) if "def " in line)
        assert start < int(where[1]) <= bug_line + 8, out
    others = re.findall(r"^\[!\] TODO\(lab-01 (task \d)", out, re.M)
    assert others == [task], out  # no other TODO is blamed
