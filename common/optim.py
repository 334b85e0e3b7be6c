"""torch's optimisers built without importing torch's compiler, which nothing in the course uses."""

import torch
import torch._compile

# the wrapper torch._disable_dynamo puts on a method; making one imports nothing
_WRAPPER = torch._compile._disable_dynamo(lambda: None).__code__


def build_without_compiler() -> list[str]:
    """Mark Optimizer's never-compiled methods as marked already; returns their names."""
    # torch wraps add_param_group (every optimiser's __init__ calls it), zero_grad, state_dict and
    # load_state_dict so that their first call imports torch._dynamo (about half of `import
    # torch`) only to mark them never compiled. The wrapper skips that import when the function
    # carries its mark already; the course never compiles, so the function itself is the mark.
    # step() still imports torch._dynamo when it first runs: a check of code that never steps
    # (an untouched starter) does not pay for it.
    marked = []
    for name, method in vars(torch.optim.Optimizer).items():
        original = getattr(method, "__wrapped__", None)
        if original is not None and getattr(method, "__code__", None) is _WRAPPER:
            setattr(original, "__dynamo_disable", original)
            marked.append(name)
    return marked
