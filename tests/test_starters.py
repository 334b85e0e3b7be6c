"""Starters are generated from marked solutions: the regions, the hints, the layout, the backup."""

import pytest

from common.course import todos
from tools import starters

SOLUTION = '''def f(x):
    """Double x."""
    # BEGIN SOLUTION TODO(step-99 f)
    # return x doubled;
    # use + or *
    y = x * 2  # the reference's comment stays out of the starter
    return y
    # END SOLUTION
'''


RAISED = '    raise NotImplementedError("TODO(step-99 f): return x doubled; {}")'


@pytest.mark.parametrize(
    ("hint", "starter"),
    [
        ("use + or *", [RAISED.format("use + or *")]),  # the region becomes its TODO
        (  # a long hint is laid out as ruff format would
            "use + or * " + "x" * 80,
            [
                "    raise NotImplementedError(",
                f'        "TODO(step-99 f): return x doubled; use + or * {"x" * 80}"',
                "    )",
            ],
        ),
        (
            'say "twice"',
            ["    raise NotImplementedError('TODO(step-99 f): return x doubled; say \"twice\"')"],
        ),
        ('say "x\'s"', [RAISED.format('say \\"x\'s\\"')]),  # quotes quoted as ruff would
        ("use + or *\n    # STARTER: return x + 1", ["    return x + 1"]),  # a bug hunt's lines
    ],
    ids=["hint", "long hint", "double quotes", "both quotes", "starter lines"],
)
def test_a_region_becomes_the_todo_with_its_hint(hint, starter):
    text = starters.starter_text(SOLUTION.replace("use + or *", hint))
    assert text.splitlines() == ["def f(x):", '    """Double x."""', *starter]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (SOLUTION.replace("    # END SOLUTION\n", ""), "has no END SOLUTION"),
        (
            SOLUTION.replace("    y = x", "    # BEGIN SOLUTION TODO(x)\n    y = x"),
            "inside another",
        ),
        (SOLUTION.replace("    # BEGIN SOLUTION TODO(step-99 f)\n", ""), "without a BEGIN"),
    ],
)
def test_a_broken_region_is_a_clear_error(text, message):
    with pytest.raises(ValueError, match=message):
        starters.starter_text(text, "f.py")


def test_regenerating_backs_up_an_edited_starter(tmp_path):
    step = tmp_path / "step-99"
    (step / "solution").mkdir(parents=True)
    (step / "starter").mkdir()
    (step / "solution" / "f.py").write_text(SOLUTION, encoding="utf-8")
    (step / "starter" / "f.py").write_text("# my own work\n", encoding="utf-8")
    said = starters.write(step)
    backups = list((step / "backups").iterdir())
    assert (backups[0] / "f.py").read_text(encoding="utf-8") == "# my own work\n"
    assert starters.stale(step) == [] and len(said) == 2
    assert starters.write(step) == []  # a second run changes nothing and backs up nothing
    assert len(list((step / "backups").iterdir())) == 1


TAGGED = """def f(x):
    # BEGIN SOLUTION TODO(step-99 task 1: f)
    # CONTRACT: x doubled, same shape;
    #   exact for ints.
    # HINT 1: the idea
    # HINT 2: the calls
    # HINT 3: return ___ * 2
    y = x * 2  # why-comment
    return y
    # END SOLUTION
"""


def test_tagged_parts_are_read_and_only_the_contract_reaches_the_starter():
    _, [region] = todos.parse(TAGGED)
    assert region.parts["CONTRACT"] == "x doubled, same shape; exact for ints."
    assert region.levels == [
        "the idea",
        "the calls",
        "return ___ * 2",
        "    y = x * 2  # why-comment\n    return y",
    ]
    starter = todos.starter_text(TAGGED)
    assert 'NotImplementedError("TODO(step-99 task 1: f): x doubled, same shape; exact' in starter
    assert "HINT" not in starter and "idea" not in starter


@pytest.mark.parametrize(
    ("todo", "parts", "optional"),
    [
        ("lab-01 task 1: stable_softmax", ("lab-01", "task 1", "stable_softmax"), False),
        ("step-04 4.2.4", ("step-04", "4.2.4", ""), False),
        ("step-04 optional 1: online_softmax", ("step-04", "optional 1", "online_softmax"), True),
        ("step-05 task 2: optional_thing", ("step-05", "task 2", "optional_thing"), False),
    ],
)
def test_the_id_grammar(todo, parts, optional):
    assert todos.split_id(todo) == parts
    assert todos.optional(todo) is optional
    assert todos.id_problem(todo, parts[0]) is None
    assert "starting with 'lab-02'" in todos.id_problem(todo, "lab-02")
