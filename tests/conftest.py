"""pytest fixtures shared by every Python-layer test module."""

import json

import pytest
from fixtures.helpers import SEED000
from thplab import live

# The live tests run in this process after model tests and plots: none of its allocations
# (the model's arrays, NumPy's, pyarrow's pool) may put it on khugepaged's list
# (thplab.live._no_huge_page_advice).
live._no_huge_page_advice()


@pytest.fixture
def seed000_doc():
    """A fresh, mutable copy of the seed-000 test.c workload (10 GiB, best case)."""
    return json.loads(json.dumps(SEED000))


@pytest.fixture
def write_workload(tmp_path):
    """write_workload(doc_or_text, name="w.json") -> path"""

    def write(doc, name="w.json"):
        p = tmp_path / name
        if isinstance(doc, bytes):
            p.write_bytes(doc)
        elif isinstance(doc, str):
            p.write_text(doc)
        else:
            p.write_text(json.dumps(doc))
        return p

    return write
