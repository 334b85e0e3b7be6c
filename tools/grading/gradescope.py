"""A grade as Gradescope's results.json, per its "Autograder Specifications" page
(gradescope-autograders.readthedocs.io/en/latest/specs/): a test per TODO, plain text throughout.

What a student reads is each TODO's reason, a line per test of it (its share) and the total;
how the grade was contained goes only where instructors look (`extra_data`, and the autograder's
stdout, which run_autograder keeps hidden from students).
"""

TEXT = "text"  # no Markdown, HTML or ANSI: a traceback or a `*` is shown as it was written


def _each(line) -> list[str]:
    """A line per test of the TODO: passed or FAILED, core or not, its share of the weight."""
    tests = getattr(line, "tests", None) or []
    share = line.weight / len(tests) if tests else 0.0
    return [
        f"{'passed' if ok else 'FAILED'}  {'core' if core else '    '}  "
        f"{round(share if ok else 0, 2):g}/{round(share, 2):g}  {nodeid.split('::')[-1]}"
        for nodeid, ok, core in tests
    ]


def _test(number: int, step: str, line) -> dict:
    """One TODO as a Gradescope test: passed only when done, so an unwritten optional TODO (worth
    0 of 0, which Gradescope would otherwise show as passed) shows as not passed."""
    counted = getattr(line, "counted", True)
    passed, total = getattr(line, "passed", None), getattr(line, "total", None)
    return {
        "name": f"TODO({line.todo})" + ("" if counted else " (optional, not counted)"),
        "name_format": TEXT,
        "number": str(number),
        "score": line.score,
        "max_score": line.weight,
        "status": "passed" if line.state == "done" else "failed",
        "output": "\n".join([line.reason, *_each(line)]),
        "output_format": TEXT,
        "visibility": "visible",
        "tags": list(dict.fromkeys([step, line.state] + ([] if counted else ["optional"]))),
        "extra_data": {"state": line.state, "counted": counted, "passed": passed, "total": total},
    }


def results_json(grade) -> dict:
    """Gradescope's results.json for `grade` (tools.grading.grade's Grade): a test per TODO, the total
    and the files the submission lacked or added in the output, the counts and whether it was
    contained in extra_data; the grade's notes (how it was contained) are the stdout's to show."""
    missing, stray = list(getattr(grade, "missing", [])), list(getattr(grade, "stray", []))
    said = [f"{grade.step}: {round(grade.score, 2):g} of {round(grade.max_score, 2):g}"]
    said += [f"missing from the submission (graded as not written): {m}" for m in missing]
    said += [f"not a starter file (not graded): {s}" for s in stray]
    counted = [line for line in grade.lines if getattr(line, "counted", True)]
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
            "passed": sum(getattr(line, "passed", 0) or 0 for line in counted),
            "total": sum(getattr(line, "total", 0) or 0 for line in counted),
            # a grade that does not say how it was contained is not claimed to be
            "contained": bool(getattr(grade, "contained", False)),
            # TODOs whose copy left a process running or reported what the grader did not see
            "flagged": [line.todo for line in grade.lines if line.state == "flagged"],
            "missing": missing,
            "stray": stray,
        },
        "tests": [_test(n, grade.step, line) for n, line in enumerate(grade.lines, 1)],
    }
