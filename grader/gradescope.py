"""A grade as Gradescope's results.json, per its "Autograder Specifications" page
(gradescope-autograders.readthedocs.io/en/latest/specs/): a test per TODO, plain text throughout.

Students read each TODO's reason, its tests' shares and the total; how the grade was contained is
for instructors only (`extra_data`, and the stdout that run_autograder hides from students).
"""

TEXT = "text"  # no Markdown, HTML or ANSI: a traceback or a `*` is shown as it was written


def _test(number: int, step: str, line) -> dict:
    """One TODO as a Gradescope test: passed only when done (an unwritten optional TODO, 0 of 0,
    would otherwise show as passed), with a line per test of it (its share of the weight)."""
    share = line.weight / len(line.tests) if line.tests else 0.0
    each = [
        f"{'passed' if ok else 'FAILED'}  {'core' if core else '    '}  "
        f"{round(share if ok else 0, 2):g}/{round(share, 2):g}  {nodeid.split('::')[-1]}"
        for nodeid, ok, core in line.tests
    ]
    return {
        "name": f"TODO({line.todo})" + ("" if line.counted else " (optional, not counted)"),
        "name_format": TEXT,
        "number": str(number),
        "score": line.score,
        "max_score": line.weight,
        "status": "passed" if line.state == "done" else "failed",
        "output": "\n".join([line.reason, *each]),
        "output_format": TEXT,
        "visibility": "visible",
        "tags": list(dict.fromkeys([step, line.state] + ([] if line.counted else ["optional"]))),
        "extra_data": {
            "state": line.state, "counted": line.counted, "passed": line.passed, "total": line.total
        },
    }  # fmt: skip


def results_json(grade) -> dict:
    """Gradescope's results.json for a grader.grade Grade: a test per TODO; the total and
    the files missing or stray in the output; counts and containment in extra_data."""
    said = [f"{grade.step}: {round(grade.score, 2):g} of {round(grade.max_score, 2):g}"]
    said += [f"missing from the submission (graded as not written): {m}" for m in grade.missing]
    said += [f"not a starter file (not graded): {s}" for s in grade.stray]
    counted = [line for line in grade.lines if line.counted]
    return {
        "score": round(grade.score, 4),
        "execution_time": round(grade.seconds),
        "output": "\n".join(said),
        "output_format": TEXT,
        "test_output_format": TEXT,
        "test_name_format": TEXT,
        "visibility": "visible",
        "stdout_visibility": "hidden",  # the check's screen and the sandbox: instructors only
        "extra_data": {
            "step": grade.step,
            "passed": sum(line.passed for line in counted),
            "total": sum(line.total for line in counted),
            "contained": grade.contained,
            "flagged": grade.flagged,  # a copy left a process or disagreed with the grader's record
            "to_read": list(grade.hidden),  # what a reader of its text would not see it do
            "missing": list(grade.missing),
            "stray": list(grade.stray),
        },
        "tests": [_test(n, grade.step, line) for n, line in enumerate(grade.lines, 1)],
    }
