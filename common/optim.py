"""torch's optimisers built and stepped without importing torch's compiler, which nothing in the course uses."""

import torch
import torch._compile

# the wrapper torch._disable_dynamo puts on a method; making one imports nothing
_WRAPPER = torch._compile._disable_dynamo(lambda: None).__code__


def _eager(step):
    """`step` without torch's graph breaks around it: the same grad mode, set and put back."""

    def step_eagerly(self, *args, **kwargs):
        was = torch.is_grad_enabled()
        try:
            torch.set_grad_enabled(self.defaults["differentiable"])
            return step(self, *args, **kwargs)
        finally:
            torch.set_grad_enabled(was)

    step_eagerly.__wrapped__ = step
    return step_eagerly


def build_without_compiler() -> list[str]:
    """Mark Optimizer's never-compiled methods as marked already, and step every optimiser of
    torch.optim eagerly; returns the names of the methods changed."""
    # torch wraps add_param_group (every optimiser's __init__ calls it), zero_grad, state_dict and
    # load_state_dict so that their first call imports torch._dynamo (about half of `import
    # torch`) only to mark them never compiled. The wrapper skips that import when the function
    # carries its mark already; the course never compiles, so the function itself is the mark.
    marked = []
    for name, method in vars(torch.optim.Optimizer).items():
        original = getattr(method, "__wrapped__", None)
        if original is not None and getattr(method, "__code__", None) is _WRAPPER:
            setattr(original, "__dynamo_disable", original)
            marked.append(name)
    # each step() imports torch._dynamo on its first call only to break a compiled graph around
    # it (a no-op when nothing compiles): the same step, in the same grad mode, without it
    for cls in vars(torch.optim).values():
        step = vars(cls).get("step") if isinstance(cls, type) else None
        if getattr(step, "__code__", None) is not None and step.__code__.co_name == "_use_grad":
            cls.step = _eager(step.__wrapped__)
            marked.append(f"{cls.__name__}.step")
    return marked
