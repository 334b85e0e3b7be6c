"""Attention cost benchmark: naive vs tiled (online softmax) vs torch's scaled_dot_product_attention."""

from bench.tiled_attention import naive_attention, tiled_attention

__all__ = ["naive_attention", "tiled_attention"]
