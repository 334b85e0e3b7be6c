"""Step 6's curated bugs (step.toml [mutation]): the classic training-loop bugs, each one line of solution/train.py changed, with the check of loop_checks.py that catches it."""

from common.course.bugs import Bug


def line_bug(
    name: str, old: str, new: str, symptom: str, check: str, fix: str, says: str, *, fails: str
) -> Bug:
    """A classic bug as BUGS lists it: one line of solution/train.py changed, `says` what its check's failure says."""
    # says: other failures of that check are other bugs; fails: the handout's first failing test
    return Bug(name, symptom, fix, check=check, old=old, new=new, says=says, fails=fails)


BUGS = [
    line_bug(
        "targets not shifted",
        "y = torch.stack([data[i + 1 : i + 1 + T] for i in ix])",
        "y = torch.stack([data[i : i + T] for i in ix])",
        "the loss falls to ~0 within a few hundred steps, and samples repeat one character",
        "check_targets_shifted",
        "the target at each position is the id that follows it, so the target windows start one id "
        "later than the inputs (task 1); look at where get_batch cuts x and y",
        "targets not shifted",
        fails="test_train.py::test_check[check_targets_shifted]",
    ),
    line_bug(
        "no zero_grad",
        "optimizer.zero_grad(set_to_none=True)",
        "pass",
        "the loss falls, then wobbles and climbs: every step adds all the past gradients",
        "check_zero_grad",
        "PyTorch adds each backward pass into .grad: the old gradients must be cleared before the new "
        "backward pass (task 4); look at the start of train_step",
        "old gradients accumulated",
        fails="test_train.py::test_check[check_zero_grad]",
    ),
    line_bug(
        "clipped after the step",
        "torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)  # one bad batch cannot blow "
        "up\n    optimizer.step()",
        "optimizer.step()\n    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)",
        "a rare bad batch throws the loss up by a nat or more; the curve has spikes",
        "check_clipping",
        "clipping must change the gradient the step uses: after the backward pass, before the step "
        "(task 4); look at the order of the calls in train_step",
        "clip_grad_norm_ between backward() and step()",
        fails="test_train.py::test_check[check_clipping]",
    ),
    line_bug(
        "evaluated in train mode",
        "model.eval()",
        "pass",
        "with dropout, the validation loss is noisy and too high; the same batches give two numbers",
        "check_eval_mode",
        "a measurement runs in eval mode and leaves the model in the mode it found (task 2); look at "
        "what estimate_loss switches before and after its loop",
        "ran the model in train mode",
        fails="test_train.py::test_check[check_eval_mode]",
    ),
    line_bug(
        "evaluated with gradients",
        "with torch.no_grad():",
        "if True:",
        "memory grows at every estimate; nothing else changes, so nothing else shows it",
        "check_eval_mode",
        "a measurement needs no autograd graph (task 2); look at whether estimate_loss turns gradient "
        "tracking off around its forward passes",
        "built a graph",
        fails="test_train.py::test_check[check_eval_mode]",
    ),
    line_bug(
        "validation batches from the training data",
        "val_batches = fixed_batches(val_data, cfg, seed=cfg.seed + 1)",
        "val_batches = fixed_batches(train_data, cfg, seed=cfg.seed + 1)",
        "the validation loss tracks the training loss all the way down: overfitting stays invisible",
        "check_val_from_val_split",
        "validation batches come from the held-out end of the text, never from the training split; "
        "look at which split train() draws them from",
        "the validation estimate saw training text",
        fails="test_train.py::test_check[check_val_from_val_split]",
    ),
    line_bug(
        "learning rate 10x too small",
        "return cfg.lr * (step + 1) / cfg.warmup",
        "return cfg.min_lr * (step + 1) / cfg.warmup",
        "the loss falls ten times slower than the handout's curve, then jumps after warm-up",
        "check_lr",
        "the warm-up climbs to the peak learning rate, not to the floor of the cosine (task 3); look "
        "at the value lr_at warms up to",
        "it climbs to min_lr, the floor of the cosine",  # loop_checks.FLOOR
        fails="test_train.py::test_check[check_lr]",
    ),
    line_bug(
        "resume restarts the optimiser",
        'optimizer.load_state_dict(state["optimizer"])',
        "pass",
        "after a resume the loss jumps up, then recovers; the resumed run ends with other weights",
        "check_resume",
        "a resume restores Adam's moments along with the weights; look at what the resume loads "
        "from the checkpoint",
        "the optimiser's state was not restored",
        fails="test_train.py::test_check[check_resume]",
    ),
]


# Survivors of python -m tools.mutate that no test can kill (step.toml [mutation] equivalent),
# keyed as its Mutant.key: "<module> <function>: <before> => <after>", with the reason.
EQUIVALENT: dict[str, str] = {
    "train train_step: optimizer.zero_grad(set_to_none=True) => "
    "optimizer.zero_grad(set_to_none=False)": (
        "zeros or None: either way the next backward starts from no gradient (None only saves memory)"
    ),
}
