"""Names the docstring examples of gptviz/ share when pytest runs them as doctests.

``python -m pytest`` collects every ``>>>`` example in gptviz/ (``--doctest-modules``,
see pyproject.toml). Examples that need a model would otherwise spend most of their
lines building one, so each doctest starts with these names already defined:

- ``model``: a tiny seeded GPT, |V| = 10, N = 8, d = 16, 2 layers of 2 heads, in eval mode;
- ``ids``: the prompt ``[1, 2, 3]``;
- ``cache``: ``model.run_with_cache(ids)[1]``, every activation of that prompt;
- ``tokenizer``: a ``CharTokenizer`` trained on ``"abcdef"``, the model's 10 ids: a=0 .. f=5,
  then <|BOS|>=6, <|EOS|>=7, <|UNK|>=8, <|PAD|>=9.

They are rebuilt for every doctest, so an example may change them freely.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _doctest_names(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fill ``doctest_namespace`` for doctests only; other tests pay nothing."""
    if not isinstance(request.node, pytest.DoctestItem):
        yield
        return
    import torch

    from gptviz.model import GPT, GPTConfig
    from gptviz.tokenizers.char import CharTokenizer

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors; the CI cores are shared (as in tests/conftest.py)
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=10, context_length=8, d_model=16, n_layer=2, n_head=2))
    model.eval()
    ids = [1, 2, 3]
    tokenizer = CharTokenizer()
    tokenizer.train("abcdef")
    namespace = request.getfixturevalue("doctest_namespace")
    namespace.update(model=model, ids=ids, cache=model.run_with_cache(ids)[1],
                     tokenizer=tokenizer)
    yield
    torch.set_num_threads(threads)
