"""What is written from the step.tomls: the README's course map, CONTRIBUTING's graph of what
each step loads, and pixi.toml's step tasks. `python -m tools.course_map --write-docs` rewrites all
three after a step.toml changes (without it, prints the course map)."""

import sys

from common import REPO_ROOT
from common.course import PIXI_TOML, Step, course
from common.docs import markdown_table, write_block


def step_tasks(step: Step) -> dict[str, tuple[str, str]]:
    """The tasks a step needs: name -> (command, description)."""
    tasks = {step.name: (f"python -m common.run {step.name}", f"{step.title}: {step.topic}")}
    if not step.checkpoint:
        tests = f"python -m pytest steps/{step.name}"
        tasks[f"test-{step.name}"] = (f"{tests} --impl solution", f"{step.name}'s tests, reference")
        tasks[f"check-{step.name}"] = (
            f"{tests} --impl starter",
            f"{step.name}'s tests, your starter (steps/{step.name}/starter)",
        )
    return tasks


def pixi_block() -> str:
    """pixi.toml's step tasks, written from each step.toml: a step's run, test- and check- tasks."""
    line = '{} = {{ cmd = "{}", description = "{}" }}'
    quoted = lambda text: text.replace("\\", "\\\\").replace('"', '\\"')  # noqa: E731
    groups = [
        "\n".join(line.format(n, cmd, quoted(about)) for n, (cmd, about) in step_tasks(s).items())
        for s in course()
    ]
    return "\n\n".join(groups) + "\n"


def course_map() -> str:
    """The README's course map: one row per step, in order, with its tasks."""
    rows = []
    for s in course():
        run = f"`pixi run {s.name}`"
        if s.checkpoint:
            link, tests = f"[{s.name}](solutions/README.md) (checkpoint)", "(in `pixi run test`)"
            rows.append([s.order, link, f"{s.title}: {s.topic}", run, tests, "—"])
        else:
            link = f"[{s.name}](steps/{s.name}/README.md)"
            checks = [f"`pixi run test-{s.name}`", f"`pixi run check-{s.name}`"]
            rows.append([s.order, link, f"{s.title}: {s.topic}", run, *checks])
    header = ["Order", "Step", "Topic", "Run", "Test the reference", "Check your starter"]
    return markdown_table(header, rows)


def course_graph() -> str:
    """CONTRIBUTING's map of what each step loads from earlier ones, from their [uses]."""
    rows = []
    for s in course():
        uses = "; ".join(f"{e}: {', '.join(f'`{m}`' for m in ms)}" for e, ms in s.uses.items())
        rows.append([s.name, s.starts_from or "—", uses or "—"])
    return markdown_table(["step", "starts from", "loads (its step.toml's [uses])"], rows)


# the blocks written from the step.tomls: (file, block name, what writes its text)
WRITTEN = (
    (REPO_ROOT / "README.md", "course-map", course_map),
    (REPO_ROOT / "CONTRIBUTING.md", "course-graph", course_graph),
    (PIXI_TOML, "step-tasks", pixi_block),
)


def write_docs() -> list[str]:
    """Write every block made from the step.tomls; one line per block: updated or up to date."""
    lines = []
    for path, name, text in WRITTEN:
        changed = write_block(path, name, text())
        lines.append(f"{path.name} {name}: {'updated' if changed else 'already up to date'}")
    return lines


if __name__ == "__main__":
    print("\n".join(write_docs()) + "\n" if "--write-docs" in sys.argv else course_map(), end="")
