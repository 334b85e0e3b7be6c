"""Step 5's experiments and the blocks its run prints: parameter counts, the loss at init, counting baselines, training, samples."""

import math
from pathlib import Path

import torch

from common.docs import markdown_table
from common.envreport import machine
from common.loader import load_file, reference
from common.run.experiment import Context
from common.run.timing import seconds
from common.seeding import generator, seed_all
from common.text import encoded, sample

HERE = Path(__file__).resolve().parent
train = load_file(HERE / "train.py")  # the short training loop of the run (step.toml [modules])

# The run's model and training: about 40 s on one thread of a 2-core laptop CPU.
MODEL = dict(T_max=64, d=64, h=4, n_layer=4)
TRAIN = dict(steps=500, B=32, T=64, lr=3e-3, seed=1, eval_every=50, eval_batches=8)
SAMPLE_TOKENS = 300
# --quick (the tests): the same code on a model and a run small enough for a second.
QUICK_MODEL = dict(T_max=16, d=32, h=4, n_layer=1)
QUICK_TRAIN = dict(steps=20, B=8, T=16, lr=3e-3, seed=1, eval_every=10, eval_batches=2)
QUICK_SAMPLE_TOKENS = 40
MODEL_SEED, SAMPLE_SEED = 0, 2  # the init, and the sampler before and after training
THREADS = 1  # torch's threads: fixed, so a run repeats bit for bit on one machine
THRESHOLD = 2.5  # the held-out loss the full run must fall below
PROMPT = "\n"
# (label, V, T_max, d, h, n_layer): the parameter table; V = 0 is the corpus's vocabulary
SIZES = [
    ("the tests' tiny GPT", 16, 8, 32, 4, 2),
    ("this step's run", 0, 64, 64, 4, 4),
    ("ng-video-lecture's sizes", 65, 256, 384, 6, 6),
    ("GPT-2 small sizes", 50257, 1024, 768, 12, 12),
]


def corpus():
    """The Step 3 text as one 1-D tensor of ids (do not modify: cached), its vocabulary, the data module."""
    data = reference("step-03", "data")
    return *encoded(data), data


def parts(model) -> dict[str, int]:
    """The model's parameters grouped by the part of Algorithm 10 they belong to."""
    groups = {"token embedding": 0, "position embedding": 0, "attention": 0, "MLP": 0}
    groups |= {"LayerNorms": 0, "lm_head": 0}
    for name, p in model.named_parameters():
        if name.startswith("tok_emb"):
            groups["token embedding"] += p.numel()
        elif name.startswith("pos_emb"):
            groups["position embedding"] += p.numel()
        elif ".attn." in name:
            groups["attention"] += p.numel()
        elif ".mlp." in name:
            groups["MLP"] += p.numel()
        elif name.startswith("lm_head"):
            groups["lm_head"] += p.numel()
        else:
            groups["LayerNorms"] += p.numel()
    return groups


def parameter_rows(gpt, V_corpus) -> list[dict]:
    """Every size of SIZES built on the meta device (no memory), counted, and the formula."""
    rows = []
    for label, V, T_max, d, h, n_layer in SIZES:
        V = V or V_corpus
        with torch.device("meta"):  # shapes only: GPT-2's 163M numbers cost nothing
            model = gpt.GPT(V=V, T_max=T_max, d=d, h=h, n_layer=n_layer)
        groups = parts(model)
        rows.append(
            dict(label=label, V=V, T_max=T_max, d=d, h=h, n_layer=n_layer, parts=groups)
            | dict(counted=sum(groups.values()), formula=gpt.n_params(V, T_max, d, n_layer))
        )
    return rows


def params_block(rows) -> str:
    """The parameter table, and GPT-2 small's count with its two differences put back."""
    table = markdown_table(
        [
            "model",
            "V",
            "T_max",
            "d",
            "h",
            "n_layer",
            "2Vd + T_max d + L(12d^2 + 9d) + 2d",
            "counted",
        ],
        [
            [r["label"], r["V"], r["T_max"], r["d"], r["h"], r["n_layer"]]
            + [f"{r['formula']:,}", f"{r['counted']:,}"]
            for r in rows
        ],
    )
    g = rows[-1]
    tied = g["counted"] - g["V"] * g["d"]  # lm_head reuses tok_emb's matrix
    biased = tied + g["n_layer"] * 4 * g["d"]  # q, k, v and proj biases, d each, per block
    edges = [
        f"{100 * (r['parts']['token embedding'] + r['parts']['position embedding'] + r['parts']['lm_head']) / r['counted']:.0f}%"
        for r in (rows[1], g)
    ]
    return table + (
        f"\nThe embeddings and lm_head hold {edges[0]} of this step's model, {edges[1]} at GPT-2 "
        f"small's sizes. There, tying lm_head to tok_emb removes V d: {tied:,}; adding the biases "
        f"of q, k, v and the attention projection (4d per block) gives {biased:,}.\n"
    )


def init_loss(gpt, ids, V, model_cfg, train_cfg) -> dict:
    """The seeded model's held-out loss before any training, against ln V and ln V + sigma^2 / 2."""
    seed_all(MODEL_SEED)
    model = gpt.GPT(V=V, **model_cfg)
    _, val = train.split(ids)
    B, T, batches = train_cfg["B"], train_cfg["T"], train_cfg["eval_batches"]
    loss = train.estimate_loss(model, val, B, T, batches, train_cfg["seed"] + 1)
    with torch.no_grad():
        x, _ = train.get_batch(val, B, T, generator(train_cfg["seed"] + 1))
        sigma = model(x)[0].std().item()  # spread of the logits at init
    return dict(loss=loss, ln_V=math.log(V), sigma=sigma, predicted=math.log(V) + sigma**2 / 2)


def init_block(r) -> str:
    """The loss at init against ln V."""
    return markdown_table(
        ["loss at init", "ln V", "difference", "std of the logits", "ln V + std^2 / 2"],
        [[f"{r['loss']:.3f}", f"{r['ln_V']:.3f}", f"{r['loss'] - r['ln_V']:+.3f}"]
         + [f"{r['sigma']:.3f}", f"{r['predicted']:.3f}"]],
    )  # fmt: skip


def baselines(ids, V) -> dict:
    """Held-out loss of three models made by counting the training text (add-one smoothing)."""
    trn, val = train.split(ids)
    ones = torch.bincount(trn, minlength=V).double() + 1  # (V,) every character keeps a chance
    unigram = -(ones / ones.sum()).log()[val].mean().item()
    pairs = torch.bincount(trn[:-1] * V + trn[1:], minlength=V * V).double().view(V, V) + 1
    follows = pairs / pairs.sum(dim=1, keepdim=True)  # (V, V) row a: P(next | a)
    bigram = -follows.log()[val[:-1], val[1:]].mean().item()
    return {"uniform": math.log(V), "unigram": unigram, "bigram": bigram}


def baselines_block(b) -> str:
    """What counting alone achieves: the lines the loss curve has to cross."""
    rows = [
        ["uniform: every character 1/V", f"{b['uniform']:.3f}"],
        ["unigram: each character's frequency in the training text", f"{b['unigram']:.3f}"],
        ["bigram: frequency given the previous character", f"{b['bigram']:.3f}"],
    ]
    return markdown_table(["model made by counting", "held-out loss"], rows)


def training(gpt, ids, V, data, model_cfg, train_cfg, tokens) -> dict:
    """Sample, train, sample again from the same generator state; the loss curve and the timing."""
    seed_all(MODEL_SEED)
    model = gpt.GPT(V=V, **model_cfg)
    before = sample(model, data, PROMPT, tokens, SAMPLE_SEED)
    trn, val = train.split(ids)
    result = train.train(model, trn, val, **train_cfg)
    after = sample(model, data, PROMPT, tokens, SAMPLE_SEED)
    extra = dict(V=V, threshold=THRESHOLD, eval_every=train_cfg["eval_every"])
    extra |= dict(params=sum(p.numel() for p in model.parameters()), B=train_cfg["B"])
    return result | extra | dict(before=before, after=after, T=train_cfg["T"])


def training_block(r) -> str:
    """Recorded, not checked: the held-out loss every eval_every steps and the training loss."""
    k, curve = r["eval_every"], r["curve"]
    rows = []
    for step, held in r["evals"]:
        recent = curve[max(0, step - k) : step]
        mean = f"{sum(recent) / len(recent):.3f}" if recent else "-"
        rows.append([step, f"{held:.3f}", mean])
    final, bigram = r["evals"][-1][1], r["baselines"]["bigram"]
    verdict = "below" if final < r["threshold"] else "NOT below"
    verdict_bigram = "below" if final < bigram else "not below"
    said = (
        f"{verdict} {r['threshold']}, and {verdict_bigram} the bigram counts' {bigram:.3f}"
        if not r.get("quick")  # a tiny model for a second: the bar is the full run's, not its
        else f"--quick, a tiny model: the {r['threshold']} bar is the full run's"
    )
    return markdown_table(
        ["step", "held-out loss", f"training loss, mean of the last {k}"], rows
    ) + (
        f"\nRecorded on {machine(THREADS)}: {len(curve)} steps of B = {r['B']} sequences of T = {r['T']} "
        f"characters in {seconds(r['seconds'])} s. Final held-out loss {final:.3f}: {said}.\n"
    )


def _shown(text: str) -> str:
    """A sample as the README shows it: each line's trailing spaces dropped (Markdown hygiene)."""
    return "\n".join(line.rstrip() for line in text.split("\n"))


def samples_block(r) -> str:
    """Recorded, not checked: the same sampler before and after training."""
    return (
        f"Before training (recorded on {machine(THREADS)}):\n\n```text\n{_shown(r['before'])}\n```\n\n"
        f"After {len(r['curve'])} steps:\n\n```text\n{_shown(r['after'])}\n```\n"
    )


def configs(quick: bool) -> tuple[dict, dict, int]:
    """The model, the training and the sample length of a full run or a --quick one."""
    return (
        (QUICK_MODEL, QUICK_TRAIN, QUICK_SAMPLE_TOKENS) if quick else (MODEL, TRAIN, SAMPLE_TOKENS)
    )


def params_experiment(ctx: Context) -> list[dict]:
    """The parameter table of SIZES, counted on the step's GPT."""
    return parameter_rows(ctx.load("gpt"), corpus()[1])


def this_run_count(rows) -> int:
    """The parameters of this step's run's model: the prediction slot's answer."""
    return next(r for r in rows if r["label"] == "this step's run")["counted"]


def init_experiment(ctx: Context) -> dict:
    """The seeded model's held-out loss at init, in the full run's sizes or --quick's."""
    ids, V, _ = corpus()
    model_cfg, train_cfg, _ = configs(ctx.quick)
    return init_loss(ctx.load("gpt"), ids, V, model_cfg, train_cfg)


def baselines_experiment(ctx: Context) -> dict:
    """The counting baselines of the corpus (no model, no TODO)."""
    return baselines(*corpus()[:2])


def training_experiment(ctx: Context) -> dict:
    """The training run and its samples, with the counting baselines its figure draws."""
    ids, V, data = corpus()
    model_cfg, train_cfg, tokens = configs(ctx.quick)
    result = training(ctx.load("gpt"), ids, V, data, model_cfg, train_cfg, tokens)
    # the counting baselines are lines in the loss figure; --quick claims no bar, no verdict
    return result | dict(baselines=ctx.results["baselines"], quick=ctx.quick)


def below_threshold(r: dict, ctx: Context) -> str | None:
    """The full run's claims, so no recorded block says otherwise: the held-out loss ends below
    THRESHOLD and below the bigram counts', more than a nat under where it started."""
    first, final, bigram = r["evals"][0][1], r["evals"][-1][1], r["baselines"]["bigram"]
    if ctx.quick:
        return None
    if final >= THRESHOLD:
        return f"the held-out loss {final:.3f} did not fall below {THRESHOLD}"
    if final >= bigram:
        return f"the held-out loss {final:.3f} does not beat the bigram counts' {bigram:.3f}"
    if final >= first - 1:
        return f"the held-out loss fell from {first:.3f} to {final:.3f}: less than a nat"
    return None
