"""Two statements on one line: `;` separates statements, as a line break would.

Run it whole (`python steps/step-04/background/07_one_line.py`) or cell by cell (`# %%`).
Code in this repository keeps one statement per line: `ruff format` splits a line at `;`, and
`ruff check` reports it (E702). The comments `# noqa: ...  # fmt: skip` tell both to leave
these lines alone, because the semicolons are what this file is about.
"""

# %% `;` puts two statements on one line; they run left to right.
T = 6; T_max = 8  # noqa: E702  # fmt: skip
print(T, T_max)

# %% After `if ...:` everything on the line, past every `;`, belongs to the if.
calls = []
if T > T_max: calls.append("too long"); calls.append("checked")  # noqa: E701, E702  # fmt: skip
print(calls)  # [] : neither append ran, not only the first
if T <= T_max: calls.append("fits"); calls.append("checked")  # noqa: E701, E702  # fmt: skip
print(calls)

# %% A `;` is not a comma: `a, b = 1, 2` is one statement that assigns both names at once.
B, T = 2, 5
print(B * T)
# In Jupyter a `;` at the end of a cell's last line hides the value that line returns:
# `plt.colorbar();` draws the colorbar without also printing the object it returns. A script
# prints nothing unless asked, so there a trailing `;` changes nothing.
