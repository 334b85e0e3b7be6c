"""Attention cost benchmark: naive vs tiled (online softmax) vs torch's scaled_dot_product_attention.

A leaf: nothing in common/ or steps/ imports it (the timing protocol it shares is common/run/timing.py)."""
