"""The ``evaluate`` fixture of the golden examples: each runs on every evaluator
(tests/support/evaluators.py: the reference, the Python path, the kernel)."""

import pytest

from tests.support.evaluators import EVALUATORS


@pytest.fixture(params=EVALUATORS, ids=[name for name, _ in EVALUATORS])
def evaluate(request):
    return request.param[1]
