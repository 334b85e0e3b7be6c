"""lab-02: Step 4's permutation table with four kinds of positions, and what dropout's scale keeps."""

from common import predictions
from common.docs import exact, last_digit, markdown_table
from common.loader import load, load_file, step_dir
from common.run import record

STEP = "lab-02"
HERE = step_dir(STEP)
experiments = load_file(HERE / "experiments.py")
CACHE = HERE / "cache_run.py"  # task 3's experiments (the KV cache), when that file is there
SHOW_P = 0.5  # the dropout rate the prediction asks about


def cache_run():
    """Task 3's run module (cache_run.py), or None while the step has none."""
    return load_file(CACHE) if CACHE.exists() else None


def shown(d: float) -> str:
    """A difference as the table prints it: float32 rounding noise is shown as such."""
    return f"< {experiments.NOISE:.0e}" if d < experiments.NOISE else f"{d:.3f}"


def positions_block(rows: dict) -> str:
    """The permutation table: equivariant over tokens? relative under a shift of every position?"""
    yes = lambda d: "yes" if d < experiments.NOISE else "no"  # noqa: E731
    table = [
        [s, shown(r["permuted"]), yes(r["permuted"]), shown(r["shifted"]), yes(r["shifted"])]
        for s, r in rows.items()
    ]
    header = ["positions", "max \\|head(idx[perm]) - head(idx)[perm]\\|", "equivariant?"]
    header += [f"max \\|scores moved on by {experiments.SHIFT} - scores\\|", "relative?"]
    return markdown_table(header, table)


def dropout_block(rows: dict) -> str:
    """The dropout table: share of zeros, and the training mean with and without the scale."""
    table = [
        [
            f"{p:g}",
            f"{r['zeros']:.3f}",
            f"{r['mean']:.3f}",
            f"{r['unscaled']:.3f}",
            f"{r['eval']:g}",
        ]
        for p, r in rows.items()
    ]
    header = ["p", "share of zeros", "training mean", "training mean, no 1 / (1 - p)", "eval mean"]
    return markdown_table(header, table)


def compute(layers) -> dict:
    """Both experiments on one layers module (starter or solution)."""
    return {
        "positions": experiments.positions(layers),
        "dropout": experiments.dropout_means(layers),
    }


def blocks(results: dict) -> dict[str, str]:
    """The handout's generated blocks, by name."""
    return {
        "positions": positions_block(results["positions"]),
        "dropout": dropout_block(results["dropout"]),
    }


def answers(results: dict) -> list[predictions.Answer]:
    """What the run measured for each slot of predictions.toml."""
    rows, drop = results["positions"], results["dropout"][SHOW_P]
    count = lambda key: sum(r[key] < experiments.NOISE for r in rows.values())  # noqa: E731
    ratio = drop["eval"] / drop["unscaled"]
    return [
        predictions.Answer("equivariant_schemes", "kinds of positions the head commutes with", count("permuted")),
        predictions.Answer("relative_schemes", "kinds whose scores ignore a shift", count("shifted")),
        predictions.Answer("eval_mean_unscaled", f"eval mean / training mean, p = {SHOW_P:g}, no scale",
                           ratio, f"{ratio:.2f}"),
    ]  # fmt: skip


def main(args) -> int:
    """`pixi run lab-02 [--write-docs]` (common.run parses the options)."""
    results = compute(load(STEP, "layers", args.impl))
    for name, body in blocks(results).items():
        print(f"({name})", body, sep="\n")
    print("", *predictions.report(STEP, answers(results)), sep="\n")
    record(args, blocks(results))
    cache = cache_run()
    return 0 if cache is None else cache.main(args)


# Shares and means of a million seeded draws: the same generator gives the same mask on every
# machine, so they reproduce to their last digit; differences below NOISE are float32 rounding,
# printed as "< 1e-05", so the rest of the table is the same words everywhere.
def docs_blocks() -> dict:
    """The handout's blocks from a fresh reference run, and how close each must come."""
    fresh = blocks(compute(load(STEP, "layers", "solution")))
    cache = cache_run()
    return {
        "positions": (fresh["positions"], last_digit(experiments.NOISE)),
        "dropout": (fresh["dropout"], exact),
        **({} if cache is None else cache.docs_blocks()),
    }
