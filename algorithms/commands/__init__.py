"""The commands of ``deliberate``, one module each: a command's config dataclass (its
options) and the function that runs it. :mod:`algorithms.cli` holds the grammar and the
entry. Heavy modules (torch, the models) load inside the functions, when a command runs."""
