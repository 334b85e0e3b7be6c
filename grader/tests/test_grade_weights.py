"""grader.grade's weights: every required TODO owns at least three tests, one of them core; a
TODO that fails a core test (its named trap) earns at most half its weight; its reason is about its
own bug, at the student's own line; a bad owners cache is read again, never a crash."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from common.course import course, course_step
from common.course.todos import optional, split_id
from grader import engine
from grader.engine import Owners, moved_lines, scrub
from grader.grade import Grade, _score, feedback, grade, text
from grader.gradescope import results_json
from grader.tests.test_grade import (
    SHARED,
    caught_up_starter,
    copy_files,
    shared_worker,
    with_change,
)
from tools import pristine

TRAPPED = pytest.mark.xdist_group("grade-worker:traps")  # the steps whose traps are graded below
STEPS = [
    pytest.param(
        s.name, marks={"lab-01": SHARED, "step-06": TRAPPED, "lab-02": TRAPPED}.get(s.name, ())
    )
    for s in course()
    if not s.checkpoint
]
FORGED = [  # what a stale or forged cache may hold: each must be read again
    '{"score": 999.0}',
    "not json {",
    '{"tests": {}, "broken": [], "given": 0}',
    '{"tests": {}, "broken": [], "given": "3", "core": []}',
    "[]",
]


def line_of(g: Grade, task: str):
    """The line of `task` ('task 4', '1.2') in a grade."""
    return next(line for line in g.lines if split_id(line.todo)[1].split(":")[0] == task)


@pytest.mark.process
@pytest.mark.slow  # a cold cache: the reference and a stub per TODO, read once for the whole suite
@pytest.mark.parametrize("step", STEPS)
def test_every_required_todo_owns_three_tests_and_a_core_one(step, request):
    """The owners the grade reads, through the cache every grade of the suite shares."""
    todos = course_step(step).regions()
    owners = Owners.cached(shared_worker(request, step=step), todos)
    owned, short = [], []
    for todo in todos:
        tests, core = owners.tests[todo], [n for n in owners.tests[todo] if n in owners.core]
        owned.append(f"{todo}: {len(tests)} tests, {len(core)} core")
        if not optional(todo) and (len(tests) < 3 or not core):
            short.append(owned[-1])
    assert short == [], (
        "expected >= 3 tests and >= 1 core test per required TODO, got:\n" + "\n".join(short)
    )
    print("\n".join(owned))


def test_a_cache_that_is_not_the_owners_shape_is_read_again_and_rewritten(tmp_path, monkeypatch):
    """No run (Owners.read, which the test above runs, stands in): a forged, stale or cut file is
    not the owners (Owners.parsed is None), so the grade reads them again and rewrites it."""
    todos = course_step("lab-01").regions()
    good = {"tests": {t: ["a::b"] for t in todos}, "broken": [], "given": 1, "core": ["a::b"]}
    bad = [*FORGED, json.dumps(good | {"given": True}), json.dumps(good | {"core": ["x::y"]})]
    bad += [json.dumps(good | {"tests": {t: "a::b" for t in todos}}), json.dumps(good | {"x": 1})]
    bad += [json.dumps(good | {"tests": {}}), json.dumps(good)[:40]]
    monkeypatch.setattr(engine, "OUT_DIR", tmp_path)  # the suite's grades keep the shared cache
    monkeypatch.setattr(Owners, "read", classmethod(lambda cls, worker, todos: Owners(**good)))
    worker = SimpleNamespace(step="lab-01", fingerprint="f" * 64)
    path = engine.owners_path("lab-01", worker.fingerprint)
    path.parent.mkdir()
    for text_ in bad:
        path.write_text(text_, encoding="utf-8")
        assert Owners.parsed(path, todos) is None, f"expected None for {text_!r}"
        assert Owners.cached(worker, todos) == Owners(**good), f"expected {text_!r} read again"
        assert Owners.parsed(path, todos) == Owners(**good), f"expected {text_!r} rewritten"


def replace_body(starter: Path, file: str, first: str, last: str, new: str) -> None:
    """In the submission `starter`, the lines from the one holding `first` to the one holding
    `last` (a TODO's code) replaced by `new`."""
    target = starter / file
    lines = target.read_text(encoding="utf-8").splitlines()
    a = next(i for i, ln in enumerate(lines) if first in ln)
    b = next(i for i, ln in enumerate(lines) if last in ln and i >= a)
    target.write_text("\n".join([*lines[:a], new, *lines[b + 1 :]]) + "\n", encoding="utf-8")


# The named traps, each one change to a caught-up starter: (step, task, file, old, new)
TRAPS = {
    "no zero_grad": (
        "step-06", "task 4", "train.py", "optimizer.zero_grad(set_to_none=True)  #", "pass  #",
    ),
    "estimate in train mode": ("step-06", "task 2", "train.py", "model.eval()  #", "pass  #"),
    "warm-up to min_lr": (
        "step-06", "task 3", "train.py", "return cfg.lr * (step + 1) / cfg.warmup  #",
        "return cfg.min_lr * (step + 1) / cfg.warmup  #",
    ),
    "dropout without its scale": (
        "lab-02", "task 2", "layers.py", "return x * keep / (1 - p)  #", "return x * keep  #",
    ),
    "rope turned the wrong way": (
        "lab-02", "task 1.2", "layers.py",
        "turned = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1)",
        "turned = torch.stack((a * cos + b * sin, b * cos - a * sin), dim=-1)",
    ),
}  # fmt: skip


SLIP = "    x = (((  # a slip: never closed"  # put before dropout's raise in lab-02's starter
WARNED = "a warning at import"  # a caught-up lab-02 whose layers.py warns as it is imported
WARNS = (
    "\nimport torch\n\n_STEPS = torch.tensor(torch.arange(8))  # a UserWarning: copy construct\n"
)


@pytest.fixture(scope="module")
def graded(tmp_path_factory, request) -> dict[str, tuple[Grade, Path]]:
    """Every case of this file graded, one worker per step: name -> (Grade, submission)."""
    tmp = tmp_path_factory.mktemp("traps")
    cases: dict[str, tuple[str, Path]] = {}
    caught_up = {}
    for step in ("step-06", "lab-02"):
        reference = caught_up[step] = caught_up_starter(tmp / step / "caught-up", step)
        for name, (of, _, file, old, new) in TRAPS.items():
            if of == step:
                dest = tmp / step / name.replace(" ", "-")
                cases[name] = (step, with_change(reference, dest, old, new, file))
        if step == "step-06":  # task 2's code replaced by `return None`: a stub
            stub = copy_files(reference, tmp / step / "stub")
            replace_body(
                stub, "train.py", "was_training = model.training", "return sum(", "    return None"
            )
            cases["estimate_loss stub"] = (step, stub)
    slip = copy_files(pristine(["lab-02"], tmp / "shipped") / "lab-02" / "starter", tmp / "slip")
    code = (slip / "layers.py").read_text(encoding="utf-8")
    raise_at = code.index("    raise NotImplementedError(", code.index("def dropout("))
    (slip / "layers.py").write_text(
        code[:raise_at] + SLIP + "\n" + code[raise_at:], encoding="utf-8"
    )
    cases["syntax slip"] = ("lab-02", slip)
    warned = with_change(
        caught_up["lab-02"], tmp / "warned", "\nimport torch\n", WARNS, "layers.py"
    )
    cases[WARNED] = ("lab-02", warned)
    workers = {step: shared_worker(request, step=step) for step in ("step-06", "lab-02")}
    return {n: (grade(s, p, worker=workers[s], screen=False), p) for n, (s, p) in cases.items()}


@pytest.mark.process
@pytest.mark.slow  # a worker per step, a copy per case
@TRAPPED
@pytest.mark.parametrize("trap", list(TRAPS))
def test_a_named_trap_leaves_its_todo_at_most_half_its_weight(graded, trap):
    g, _ = graded[trap]
    task = TRAPS[trap][1]
    line = line_of(g, task)
    print(f"{trap}: {line.todo} scores {line.score} of {line.weight} ({line.reason})")
    assert line.score <= line.weight / 2, f"{trap}: expected <= {line.weight / 2}, got\n{text(g)}"
    assert any(core and not ok for _, ok, core in line.tests), (
        f"expected a core test failing: {line}"
    )
    capped = line.passed / line.total > 0.5  # the cap lowered it: the reason says so
    assert capped == ("at most half its weight" in line.reason), f"capped {capped}: {line.reason}"
    others = [x for x in g.lines if x is not line and not optional(x.todo)]
    assert all(x.score == x.weight for x in others), f"{trap} cost another TODO:\n{text(g)}"


@pytest.mark.process
@pytest.mark.slow
@TRAPPED
def test_the_reason_of_a_rope_turned_the_wrong_way_is_its_direction_not_the_halves(graded):
    reason = line_of(graded["rope turned the wrong way"][0], "task 1.2").reason
    assert "test_rope_turns_each_pair_by_plus_m_omega_counterclockwise:" in reason, reason
    assert "halves" not in reason and "adjacent" not in reason, reason
    assert reason.endswith("each pair turned the wrong way"), f"expected it whole: {reason}"


@pytest.mark.process
@pytest.mark.slow
@TRAPPED
def test_a_stub_is_not_written_and_its_reason_says_so(graded):
    line = line_of(graded["estimate_loss stub"][0], "task 2")
    expect = ("not written", "not written yet (its code only returns None)")
    assert (line.state, line.reason) == expect, (
        f"expected {expect}, got {line.state}: {line.reason}"
    )


@pytest.mark.process
@pytest.mark.slow
@TRAPPED
def test_a_warning_at_import_costs_no_todo(graded):
    """Every TODO's copy imports layers.py: charged to each, its warning scored lab-02 0 of 7."""
    g, _ = graded[WARNED]
    assert g.score == g.max_score == 7, text(g)


@pytest.mark.process
@pytest.mark.slow
@TRAPPED
def test_a_syntax_errors_line_is_the_students_own(graded):
    g, path = graded["syntax slip"]
    mine = (path / "layers.py").read_text(encoding="utf-8").splitlines().index(SLIP) + 1
    reason = line_of(g, "task 2").reason
    assert f"layers.py:{mine} does not import" in reason, f"expected layers.py:{mine}, got {reason}"


@pytest.mark.process
@pytest.mark.slow
@TRAPPED
def test_the_feedback_shows_each_tests_share_and_keeps_every_reason_whole(graded):
    g, _ = graded["no zero_grad"]
    line = line_of(g, "task 4")
    said = feedback(g)
    share = line.weight / line.total
    assert f"TODO({line.todo}): {line.total} tests, each {round(share, 2):g} of 1" in said, said
    rows = [r for r in said.splitlines() if r.startswith("  test_")]
    assert len(rows) == sum(x.total for x in g.lines), said
    failed = [r for r in rows if "FAILED" in r]
    assert any("test_check[check_zero_grad]" in r and " core " in r for r in failed), failed
    assert all(f"0/{round(share, 2):g}" in r for r in failed if "check_zero_grad" in r), failed
    for x in g.lines:
        assert x.reason in said, f"expected the whole reason in the feedback: {x.reason}"


def test_a_failing_core_test_caps_a_todo_at_half_and_gradescope_lists_each_share():
    """grader.grade._score and the results.json, no run: 4 of 5 with a core failure is 0.5, with
    an ordinary failure 0.8; 2 of 5 keeps its 0.4; each test's share is on its own line."""
    tests = [(f"t.py::test_{i}", i != 0, i < 2) for i in range(5)]  # test_0: core, failing
    ordinary = [(n, i != 4, core) for i, (n, _, core) in enumerate(tests)]  # test_4 failing
    low = [(n, i > 2, core) for i, (n, _, core) in enumerate(tests)]  # 2 of 5, test_0 failing
    todo = "step-06 task 4: train_step"
    got = [_score(todo, sum(ok for _, ok, _ in each), 5, "why", None, each).score
           for each in (tests, ordinary, low)]  # fmt: skip
    assert got == [0.5, 0.8, 0.4], f"expected [0.5, 0.8, 0.4], got {got}"
    line = _score(todo, 4, 5, "why", None, tests)
    rows = results_json(Grade("step-06", [line]))["tests"][0]["output"].splitlines()
    expected = [line.reason, "FAILED  core  0/0.2  test_0", "passed  core  0.2/0.2  test_1"]
    assert rows[:3] == expected and len(rows) == 6, f"expected {expected} first, got {rows}"
    assert "(1 core test failing: at most half its weight)" in line.reason, line.reason


def test_a_place_in_a_reason_is_said_at_the_students_own_line():
    """moved_lines and scrub, no run: a copy with a longer function before the student's line."""
    mine = "def a():\n    raise NotImplementedError\n\n\ndef b():\n    x = (((\n"
    copy = "def a():\n    y = 1\n    z = 2\n    return y + z\n\n\ndef b():\n    x = (((\n"
    moved = moved_lines({"layers.py": mine}, {"layers.py": copy})
    todos = course_step("lab-02").regions()
    said = scrub("steps/lab-02/starter/layers.py:8 does not import: SyntaxError", todos, "x", moved)
    assert said.startswith("steps/lab-02/starter/layers.py:6 does not"), f"expected :6, got {said}"
    quoted = scrub('File "/tmp/w/layers.py", line 8, in b', todos, "x", moved)
    assert quoted == 'File "/tmp/w/layers.py", line 6, in b', f"expected line 6, got {quoted}"
