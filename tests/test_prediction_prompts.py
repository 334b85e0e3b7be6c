"""A prediction is asked before it is answered: no recorded answer stands open above its prompt.

Each slot of a step's predictions.toml is asked by a sentence of its handout and answered by a
generated block. A reader who works down the page must meet the question first: the block sits
below the prompt, or inside a <details> fold that the reader opens on purpose (Step 4's way).
"""

import re

import pytest

from common import STEPS_DIR
from common.course import course, predictions

# slot -> (a phrase of the prompt that asks it, the generated block that answers it)
ASKED = {
    "lab-01": {
        "combined_allowed": ("how many cells the third one allows", None),  # drawn, not recorded
        "leaks": ("Write down which cells leak", "lab-01-exercise"),
    },
    "step-04": {
        "raw_std": ("Predict the four numbers", "scale-check"),
        "scaled_std": ("Predict the four numbers", "scale-check"),
        "raw_row_max": ("Predict the four numbers", "scale-check"),
        "scaled_row_max": ("Predict the four numbers", "scale-check"),
        "first_column": ("Write both guesses", "real-text"),
        "family": ("Write both guesses", "family"),
    },
    "step-05": {
        "parameters": ("Count the parameters", "params"),
        "loss_at_init": ("At initialisation every weight", "init-loss"),
    },
    "step-06": {
        "loss_at_init": ("Write your loss at init", "config"),
        "previous_token_layers": ("the layers you expect to hold", "heads"),
        "broad_heads": ("how many of the 16 heads stay broad", "heads"),
    },
    "lab-02": {
        "equivariant_schemes": ("how many leave it equivariant", "positions"),
        "relative_schemes": ("How many give the same scores", "positions"),
        "eval_mean_unscaled": ("Predict `eval_mean_unscaled`", "dropout"),
        "cache_speedup": ("Write your answer to the speed question", "cache-speed"),
    },
}
STEPS = [s.name for s in course() if (s.solution / predictions.FILE).is_file()]


def folds(text: str) -> list[tuple[int, int]]:
    """The (start, end) offsets of each outermost <details> ... </details> of a handout."""
    spans, depth, start = [], 0, 0
    for tag in re.finditer(r"<(/?)details\b", text):
        if not tag[1]:
            start, depth = (tag.start() if depth == 0 else start), depth + 1
        elif depth:
            depth -= 1
            spans += [(start, tag.end())] if depth == 0 else []
    return spans


def misplaced(text: str, asked: dict[str, tuple[str, str | None]]) -> list[str]:
    """Each slot whose prompt is missing, or whose answer stands unfolded above its prompt."""
    problems = []
    for slot, (phrase, block) in asked.items():
        prompt = " ".join(phrase.split())
        where = " ".join(text.split()).find(prompt)  # a prompt may wrap over lines
        if where < 0:
            problems.append(f"{slot}: no prompt saying {phrase!r}")
            continue
        at = text.find(f"<!-- BEGIN {block} -->") if block else -1
        if block and at < 0:
            problems.append(f"{slot}: no block named {block!r}")
            continue
        folded = any(a < at < b for a, b in folds(text))
        prompt_at = len(" ".join(text[:at].split())) if block else 0  # the same spacing as `where`
        if block and not folded and prompt_at < where:
            problems.append(f"{slot}: block {block!r} stands open above its prompt {phrase!r}")
    return problems


@pytest.mark.parametrize("step", STEPS)
def test_every_slot_is_asked_before_a_recorded_answer(step):
    assert sorted(ASKED.get(step, {})) == sorted(predictions.slots(step)), "ASKED names every slot"
    problems = misplaced((STEPS_DIR / step / "README.md").read_text(encoding="utf-8"), ASKED[step])
    assert not problems, "expected each prompt above its answer or the answer folded:\n" + (
        "\n".join(problems)
    )


def test_an_open_answer_above_its_prompt_is_named():
    asked = {"n": ("Predict n", "n-block")}
    block = "<!-- BEGIN n-block -->\n| n | 7 |\n<!-- END n-block -->\n"
    folded = f"<details>\n<summary>Answer</summary>\n\n{block}\n</details>\n\nPredict n.\n"
    assert misplaced(f"{block}\nPredict n, then run.\n", asked) == [
        "n: block 'n-block' stands open above its prompt 'Predict n'"
    ]
    assert misplaced(folded, asked) == [] and misplaced(f"Predict\nn.\n\n{block}", asked) == []
